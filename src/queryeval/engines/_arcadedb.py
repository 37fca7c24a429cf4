"""An embedded ArcadeDB (bundled JRE) with its Bolt plugin on 127.0.0.1, run in a child
process: started once, reused, stopped at `close()`, when dropped, or at interpreter exit
(a finalizer, detached by `stop`), restartable when a query must be cut off."""

from __future__ import annotations

import os
import secrets
import selectors
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import weakref
from pathlib import Path
from typing import Any

import queryeval
from queryeval.engines._arcadedb_server import READER
from queryeval.engines._fixtures import seed_digest
from queryeval.errors import InputError

_MODULE = "queryeval.engines._arcadedb_server"
FIXTURE_DATABASE = "graph"


def _child_env() -> dict[str, str]:
    """The environment of a child: this queryeval importable, no stray JVM options."""
    env = dict(os.environ)
    src = str(Path(queryeval.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    return env


def _read_status(proc: subprocess.Popen[str], timeout_s: float) -> str:
    """The child's first READY/FAILED line, waiting at most `timeout_s`."""
    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout_s
    try:
        while (left := deadline - time.monotonic()) > 0:
            if not selector.select(left):
                break
            line = proc.stdout.readline()
            if not line:
                return "FAILED the ArcadeDB process exited"
            if line.startswith(("READY", "FAILED")):
                return line.strip()
    finally:
        selector.close()
    return f"FAILED no answer from the ArcadeDB process within {timeout_s:g}s"


def build_graph_fixture(seed: Path, cache_dir: Path, heap: str = "1g") -> Path:
    """The ArcadeDB database folder built from a graph seed (built once, content-addressed)."""
    seed, cache_dir = seed.resolve(), cache_dir.resolve()
    root = cache_dir / "fixtures" / f"graph-{seed_digest(seed, 'arcadedb')[:20]}"
    database = root / "databases" / FIXTURE_DATABASE
    if database.exists():
        return database
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = root.with_name(f".{root.name}.{uuid.uuid4().hex}")
    log = root.with_name(f"{root.name}.build.log")
    with log.open("w") as err:
        proc = subprocess.run(
            [sys.executable, "-m", _MODULE, "build", "--root", str(tmp), "--database",
             FIXTURE_DATABASE, "--seed", str(seed), "--heap", heap],
            cwd=tmp.parent, env=_child_env(), stdout=subprocess.PIPE, stderr=err, text=True,
            timeout=600, check=False,
        )  # fmt: skip
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        failure = proc.stdout.strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        raise InputError(f"cannot build the graph fixture: {failure[0]} (log: {log})", path=seed)
    try:
        os.replace(tmp, root)
    except OSError:  # built meanwhile by another process: theirs is identical
        shutil.rmtree(tmp, ignore_errors=True)
    return database


class ArcadeDBServer:
    """One ArcadeDB server process serving one database (a working copy) over Bolt."""

    def __init__(self, database_dir: Path, *, timeout_s: float, heap: str = "1g",
                 copy: bool = True, start_timeout_s: float = 180.0,
                 query_heap_mb: int = 0) -> None:  # fmt: skip
        if not database_dir.is_dir():
            raise InputError("ArcadeDB database folder not found", path=database_dir)
        self.database_dir = database_dir
        self.database = database_dir.name
        self.timeout_s = timeout_s
        self.heap = heap
        self.query_heap_mb = query_heap_mb  # the queries' heap budget (0: ArcadeDB's half)
        self.copy = copy
        self.start_timeout_s = start_timeout_s
        self.user = READER
        self.password = secrets.token_hex(16)
        self.port: int | None = None
        self.start_seconds: float | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._workdir: Path | None = None
        self._lock = threading.Lock()
        # ends the server if this object is dropped unstopped, or at exit (no atexit handler
        # per server: stop() detaches it)
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the ArcadeDB server is not started")
        return f"bolt://127.0.0.1:{self.port}"

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the server (a working copy of the database; a fresh port)."""
        with self._lock:
            if self.alive:
                return
            begin = time.perf_counter()
            workdir = Path(tempfile.mkdtemp(prefix="queryeval-arcadedb-"))
            target = workdir / "databases" / self.database
            target.parent.mkdir(parents=True)
            if self.copy:
                shutil.copytree(self.database_dir, target,
                                ignore=shutil.ignore_patterns("database.lck"))  # fmt: skip
            else:
                target.symlink_to(self.database_dir.resolve(), target_is_directory=True)
            log = (workdir / "server.log").open("w")
            proc = subprocess.Popen(
                [sys.executable, "-m", _MODULE, "serve", "--root", str(workdir), "--database",
                 self.database, "--timeout-ms", str(max(1, int(self.timeout_s * 1000))),
                 "--heap", self.heap, "--query-heap-mb", str(self.query_heap_mb)],
                cwd=workdir, env=_child_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=log, text=True,
            )  # fmt: skip
            log.close()
            assert proc.stdin is not None
            proc.stdin.write(self.password + "\n")
            proc.stdin.flush()
            status = _read_status(proc, self.start_timeout_s)
            if not status.startswith("READY"):
                self._kill(proc)
                tail = (workdir / "server.log").read_text(errors="replace")[-2000:]
                shutil.rmtree(workdir, ignore_errors=True)
                raise RuntimeError(f"ArcadeDB did not start: {status[7:]}\n{tail}")
            self._proc, self._workdir = proc, workdir
            self._finalizer = weakref.finalize(self, _end, proc, workdir)
            self.port = int(status.split()[1])
            self.start_seconds = time.perf_counter() - begin

    @staticmethod
    def _kill(proc: subprocess.Popen[str], grace_s: float = 0.0) -> None:
        if proc.poll() is None and proc.stdin is not None and grace_s > 0:
            try:
                proc.stdin.close()  # asks for a clean stop
                proc.wait(grace_s)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)

    def stop(self, grace_s: float = 20.0) -> None:
        """Stop the server (cleanly, else killed) and remove its working copy."""
        with self._lock:
            proc, workdir, finalizer = self._proc, self._workdir, self._finalizer
            self._proc = self._workdir = self._finalizer = None
            self.port = None
        if finalizer is not None:
            finalizer.detach()
        _end(proc, workdir, grace_s)

    def restart(self) -> None:
        """End the server at once (a query would not stop) and start a fresh one."""
        self.stop(grace_s=0.0)
        self.start()


def _end(proc: subprocess.Popen[str] | None, workdir: Path | None, grace_s: float = 5.0) -> None:
    """Stop a server process (cleanly, else killed) and remove its working copy."""
    if proc is not None:
        ArcadeDBServer._kill(proc, grace_s)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
    if workdir is not None:
        shutil.rmtree(workdir, ignore_errors=True)
