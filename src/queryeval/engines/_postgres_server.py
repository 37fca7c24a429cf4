"""A PostgreSQL server started by queryeval from the installed binaries: `initdb` in a
temporary folder, `postgres` on 127.0.0.1 (a free port) and on a Unix socket in that folder,
stopped at `stop()` or interpreter exit. One server a process (`shared_server`), shared by
every `engine: postgres` database built from a fixture; each fixture is a database of it.

PostgreSQL refuses to run as root: when this process is root, the server runs as the
unprivileged `postgres` account (else `nobody`). Every backend inherits an address-space
limit (`RLIMIT_AS`) set on the server process, so a query that allocates without bound ends
in PostgreSQL's own "out of memory" error rather than the machine's OOM killer.

Roles: `queryeval_admin` (superuser: builds fixtures, makes disposable copies),
`queryeval_reader` (LOGIN, SELECT only: scoring queries) and `queryeval_task` (LOGIN, no
privileges: kept for suites that name it); each disposable copy gets a role of its own (see
`PostgresEngine.make_copy`). Passwords are random, SCRAM authentication.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from queryeval.errors import InputError

ADMIN = "queryeval_admin"
READER = "queryeval_reader"
TASK = "queryeval_task"
_SEARCHED = "/usr/lib/postgresql/*/bin"
_LOCK = threading.Lock()
_SHARED: PostgresServer | None = None


def find_binaries() -> Path | None:
    """The folder holding `initdb`, `postgres` and `psql`: on PATH first, else the newest
    `/usr/lib/postgresql/<version>/bin`; None when PostgreSQL is not installed.

    >>> find_binaries() is None or (find_binaries() / "initdb").exists()
    True
    """
    found = shutil.which("initdb")
    if found:
        folder = Path(found).resolve().parent
        if (folder / "postgres").exists():
            return folder
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: [int(x) for x in re.findall(r"\d+", p.parent.name)] or [0],
    )
    for folder in reversed(candidates):
        if (folder / "initdb").exists() and (folder / "postgres").exists():
            return folder
    return None


def missing_reason() -> str | None:
    """Why no server can be started here (no binaries), or None."""
    if find_binaries() is None:
        return (
            "PostgreSQL is not installed: no initdb on PATH nor in "
            f"{_SEARCHED} (install the postgresql package)"
        )
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _account() -> tuple[int, int] | None:
    """(uid, gid) the server runs as when this process is root, else None (itself)."""
    if os.geteuid() != 0:
        return None
    import pwd

    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            return entry.pw_uid, entry.pw_gid
    raise InputError("PostgreSQL refuses to run as root and no 'postgres' or 'nobody' "
                     "account exists to run it as")  # fmt: skip


def _end_server(proc: subprocess.Popen[bytes] | None, folder: Path) -> None:
    """Stop a server process (fast shutdown, else killed) and remove its folder."""
    if proc is not None and proc.poll() is None:
        proc.send_signal(2)  # SIGINT: fast shutdown
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class Role:
    """A login role of the server and its password."""

    name: str
    password: str


class PostgresServer:
    """One PostgreSQL server in a temporary folder (see the module's docstring).

    `memory_limit`: the address space of each backend is at most this plus `_BASE_AS`
    (the server's own code and shared memory)."""

    _BASE_AS = 768 * 2**20

    def __init__(self, *, memory_limit: int = 2**30, temp_file_limit: int = 2**30) -> None:
        self.bin_dir = find_binaries()
        if self.bin_dir is None:
            raise InputError(str(missing_reason()))
        self.memory_limit = memory_limit
        self.temp_file_limit = temp_file_limit
        self.folder = Path(tempfile.mkdtemp(prefix="queryeval-pg-"))
        self.port = 0
        self.roles = {name: Role(name, secrets.token_hex(16)) for name in (ADMIN, READER, TASK)}
        self._proc: subprocess.Popen[bytes] | None = None
        self.lock = threading.RLock()  # fixtures and copies: one at a time
        # the server ended and its folder removed when this object is dropped unstopped, or
        # at exit (one finalizer, detached by stop(): no atexit handler left per server)
        self._finalizer = weakref.finalize(self, _end_server, None, self.folder)

    # -- life ------------------------------------------------------------------------------

    def start(self) -> PostgresServer:
        """initdb, start the server, create the roles; returns self once it answers."""
        assert self.bin_dir is not None
        account = _account()
        data = self.folder / "data"
        pwfile = self.folder / "pw"
        pwfile.write_text(self.roles[ADMIN].password + "\n")
        if account is not None:
            os.chown(self.folder, *account)
            os.chown(pwfile, *account)
        log = self.folder / "server.log"
        kwargs: dict[str, Any] = {}
        if account is not None:
            kwargs = {"user": account[0], "group": account[1], "extra_groups": []}
        init = subprocess.run(
            [str(self.bin_dir / "initdb"), "-D", str(data), "-U", ADMIN, "-E", "UTF8",
             "--locale=C", "--auth=scram-sha-256", f"--pwfile={pwfile}", "--no-sync", "-N"],
            capture_output=True, text=True, check=False, timeout=120, **kwargs,
        )  # fmt: skip
        pwfile.unlink(missing_ok=True)
        if init.returncode != 0:
            raise InputError(f"initdb failed: {init.stderr.strip()[-500:]}")
        self.port = _free_port()
        limit_as = self.memory_limit + self._BASE_AS
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.folder),
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "shared_buffers": "32MB",
            "max_connections": "60",
            "temp_file_limit": f"{max(1, self.temp_file_limit // 1024)}kB",
            "logging_collector": "off",
            "log_min_messages": "fatal",
            "jit": "off",
            "dynamic_shared_memory_type": "mmap",  # inside the data folder, under its quota
        }
        args = [str(self.bin_dir / "postgres"), "-D", str(data)]
        for key, value in settings.items():
            args += ["-c", f"{key}={value}"]
        with log.open("wb") as err:
            self._proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                preexec_fn=lambda: _limit_address_space(limit_as), **kwargs,
            )  # fmt: skip
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _end_server, self._proc, self.folder)
        self._wait_ready(log)
        with self.admin() as conn:
            for name in (READER, TASK):
                password = self.roles[name].password
                conn.execute(f"CREATE ROLE {name} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE "
                             f"NOREPLICATION NOBYPASSRLS PASSWORD '{password}'")  # fmt: skip
        return self

    def _wait_ready(self, log: Path, timeout_s: float = 60.0) -> None:
        import psycopg

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise InputError(f"the PostgreSQL server exited: {_tail(log)}")
            try:
                psycopg.connect(self.conninfo("postgres", ADMIN), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                time.sleep(0.05)
        self.stop()
        raise InputError(f"the PostgreSQL server did not answer within {timeout_s:g}s")

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its folder."""
        proc, self._proc = self._proc, None
        self._finalizer.detach()
        _end_server(proc, self.folder)

    # -- connections -----------------------------------------------------------------------

    def conninfo(self, database: str, role: str = READER, *, tcp: bool = False) -> str:
        """A libpq connection string to `database` as `role` (the Unix socket, or TCP)."""
        from psycopg.conninfo import make_conninfo

        host = "127.0.0.1" if tcp else str(self.folder)
        account = self.roles[role]
        return make_conninfo(host=host, port=self.port, dbname=database, user=account.name,
                             password=account.password)  # fmt: skip

    def conninfo_for(self, database: str, user: str, password: str) -> str:
        """A libpq connection string (the Unix socket) to `database` as another role."""
        from psycopg.conninfo import make_conninfo

        return make_conninfo(host=str(self.folder), port=self.port, dbname=database, user=user,
                             password=password)  # fmt: skip

    def admin(self, database: str = "postgres") -> Any:
        """An autocommit superuser connection (use as a context manager)."""
        import psycopg

        return psycopg.connect(self.conninfo(database, ADMIN), autocommit=True)

    def database_exists(self, name: str) -> bool:
        """Whether the server has a database `name`."""
        with self.admin() as conn:
            found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            return found.fetchone() is not None

    def psql(self, database: str, script: Path) -> None:
        """Run a SQL script (a plain `pg_dump` too) with psql as the admin, stopping at the
        first error (InputError naming the script)."""
        assert self.bin_dir is not None
        env = {**os.environ, "PGPASSWORD": self.roles[ADMIN].password}
        done = subprocess.run(
            [str(self.bin_dir / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h",
             str(self.folder), "-p", str(self.port), "-U", ADMIN, "-d", database, "-f",
             str(script)],
            capture_output=True, text=True, env=env, check=False, timeout=1800,
        )  # fmt: skip
        if done.returncode != 0:
            raise InputError(f"cannot load the SQL seed: {done.stderr.strip()[-800:]}",
                             path=script)  # fmt: skip


def _limit_address_space(limit: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace").strip()[-800:] or "no message"
    except OSError:
        return "no log"


def shared_server(memory_limit: int = 2**30) -> PostgresServer:
    """The process's one server, started on first use (restarted if it died); the largest
    `memory_limit` asked for before it starts wins."""
    global _SHARED
    with _LOCK:
        if _SHARED is None or not _SHARED.running:
            if _SHARED is not None:
                _SHARED.stop()
            _SHARED = PostgresServer(memory_limit=memory_limit).start()
        return _SHARED
