"""A benchmark's Python test function (BIRD-CRITIC / LiveSQLBench `test_cases`), run in a
child process on a task's disposable copy: this file run by `python -I` (standard library
imports only: it starts in ~0.1 s) reads the job as JSON on stdin and writes its verdict
as JSON on stdout.

The child is bounded: CPU seconds and address space (`resource.setrlimit`), file sizes,
a wall-clock limit kept by the parent (which kills its process group; run out on a loaded
machine, tried once more on a quiet slot: its waits on a database server are not its CPU
time), a temporary working folder. It opens its connection to the copy first, then leaves
the network: a new network namespace where the kernel allows one (`unshare(CLONE_NEWNET)`:
no interface but a loopback that is down), else Python's sockets refuse Internet addresses
(a guard, not a wall).

Then it walls off the file system with Landlock (Linux 5.13 or later, no privilege needed,
`_wall`): it may read the interpreter's folders and the system's libraries, read and write
only its working folder and the copy's, execute nothing (no shell, no program), connect
to no TCP port (Landlock ABI 4), signal no process outside its own (ABI 6); a root child
also drops every capability. Where the kernel has no Landlock the function is not run
(`filesystem="walled"`, the default: the evaluator's `unsupported`, counted apart) or runs
unwalled when the caller chose `filesystem="open"`; the verdict records which.

The function is called as the official harnesses call it, `test_case(pred_sqls, sol_sqls,
db, conn, **kwargs)` with `conditions` in kwargs, beside helpers of the same names and
behaviour as theirs (`execute_queries`, `perform_query_on_*_databases`, `ex_base`,
`remove_comments`, `remove_distinct`, `remove_round`, `preprocess_results`,
`check_sql_function_usage`): written here from reading their code, not copied.

A passing function returns; an `AssertionError` or a database error is a failing test; any
other exception is the evaluator's error (or, with `exceptions="fail"`, a failing test as
the official harnesses count it); a function past its limits is the evaluator's error.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

_LIMIT_NOTE = "the test function ran past its limits"


def run_python_test(
    source: str,
    access: dict[str, Any],
    *,
    pred_sqls: list[str],
    sol_sqls: list[str],
    timeout_s: float = 30.0,
    memory: int | str = 2**30,
    exceptions: str = "error",
    conditions: dict[str, Any] | None = None,
    helpers: str = "livesqlbench",
    filesystem: str = "walled",
    legacy: bool = False,
    sandbox: dict[str, str] | None = None,
) -> tuple[str, str]:
    """("passed" | "failed" | "error" | "unsupported", message) of a test function's
    source on a copy (`access`: `Workspace.access()`; `memory`: bytes or a size such as
    1GiB). The function is called with `conditions=` only when `conditions` is given (as
    the official harnesses pass it: BIRD-CRITIC always, LiveSQLBench for its Query tasks);
    `helpers`: which harness's helpers it sees (`_helpers`); `filesystem`: `walled` (not
    run, "unsupported", where the kernel cannot wall it off) or `open` (run anyway);
    `legacy`: the source run as the official harness (of `helpers`; BIRD-CRITIC-SQLite's
    on SQLite) runs it (only its names as globals, the source's own top-level names not
    seen inside `test_case`); `sandbox`, when
    given, receives how the child was walled (`network`, `filesystem`). A wall clock
    (`_wall_s`) run out on a loaded machine: run once more on a quiet slot, on the same
    copy (what the killed run committed stays; its open transaction is rolled back)."""
    from queryeval.engines._base import parse_size

    memory = parse_size(memory)
    job = {
        "source": source,
        "access": access,
        "pred_sqls": pred_sqls,
        "sol_sqls": sol_sqls,
        "kwargs": {} if conditions is None else {"conditions": conditions},
        "cpu_s": timeout_s,
        "helpers": helpers,
        "memory": memory,
        "filesystem": filesystem,
        "legacy": legacy,
    }
    from queryeval.engines._cost import machine_loaded, query_clock

    wall = _wall_s(timeout_s)
    for quiet in (False, True):
        # the function's wait on a database server counts on the wall clock, not on its CPU
        # limit: a wall clock run out on a loaded machine is tried once more on a quiet slot
        with query_clock(quiet=quiet, measure=False):
            done, stdout, stderr, code, cpu = _attempt(job, wall)
        if done or quiet or not machine_loaded():
            break
    if not done:
        spent = "" if cpu is None else f"; {cpu:.1f}s of its own CPU time"
        again = " (and again on a quiet slot: the machine was loaded)" if quiet else ""
        return "error", f"{_LIMIT_NOTE} (wall clock, {wall:g}s{spent}){again}"
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = (stderr.strip().splitlines() or [f"exit code {code}"])[-1]
        return "error", f"{_LIMIT_NOTE} or broke its process: {tail[:300]}"
    verdict = json.loads(lines[-1])
    if sandbox is not None:
        sandbox.update({k: str(verdict[k]) for k in ("network", "filesystem") if k in verdict})
    status, message, raised = verdict["status"], verdict["message"], verdict.get("raised")
    if status == "raised":
        status = "failed" if exceptions == "fail" else "error"
        message = f"{raised}: {message}"
    return status, message


def _wall_s(timeout_s: float) -> float:
    """The wall-clock limit of a test function with `timeout_s` CPU seconds."""
    return timeout_s * 2 + 5


def _attempt(job: dict[str, Any], wall: float) -> tuple[bool, str, str, int, float | None]:
    """One run of the child: (whether it ended within `wall` seconds, its stdout, stderr,
    exit code, and the CPU seconds it had spent when the wall clock ran out)."""
    with tempfile.TemporaryDirectory(prefix="queryeval-test-") as folder:
        job = {**job, "folder": folder}
        with subprocess.Popen(
            [sys.executable, "-I", os.path.abspath(__file__)],  # stdlib imports only
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=folder,
            env={**_child_env(), "TMPDIR": folder},
            start_new_session=True,  # its own process group: what it forks dies with it
        ) as child:  # its pipes closed however it ends
            try:
                stdout, stderr = child.communicate(json.dumps(job), timeout=wall)
            except subprocess.TimeoutExpired:
                return False, "", "", -9, _cpu_s(child.pid)  # read before it is killed
            finally:
                _kill_group(child)
            return True, stdout, stderr, child.returncode, None


def _cpu_s(pid: int) -> float | None:
    """The CPU seconds a running process (and its reaped children) spent, where /proc
    tells."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _child_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "HOME")}


def _kill_group(child: subprocess.Popen[str]) -> None:
    """The child and whatever it forked (its own process group), killed and reaped."""
    import signal

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    if child.poll() is None:
        child.kill()
    child.wait()


# -- the child -----------------------------------------------------------------------------


def _limit(cpu_s: float, memory: int) -> None:
    import resource

    cpu = max(1, int(cpu_s + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 2**20, 16 * 2**20))


def _leave_network() -> str:
    """Leave the network: 'namespace' when the kernel gave a new one, else 'guard'."""
    import ctypes
    import socket

    clone_newnet, clone_newuser = 0x40000000, 0x10000000
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(clone_newnet) == 0 or libc.unshare(clone_newuser | clone_newnet) == 0:
            return "namespace"
    except OSError:
        pass
    real = socket.socket

    class _Guarded(real):  # type: ignore[misc,valid-type]
        def connect(self, address: Any) -> Any:
            if self.family in (socket.AF_INET, socket.AF_INET6):
                raise PermissionError("no network for a test function")
            return super().connect(address)

    socket.socket = _Guarded  # type: ignore[misc]
    return "guard"


# Landlock (linux/landlock.h): the system calls (the same number on every architecture),
# the file-system rights of each ABI version, its network rights (ABI 4) and scopes (ABI 6)
_LANDLOCK_CREATE, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT = 444, 445, 446
_FS_RIGHTS = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1, 2, 4, 8
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | (1 << 14) | (1 << 15)  # + truncate, ioctl
_SYSTEM_READ = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/share/zoneinfo")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/dev/null", "/dev/urandom")


def _wall(writable: list[str]) -> str:
    """Wall the process off with Landlock; "" when it holds, else why it cannot be built.
    Readable: the interpreter's folders (`sys.prefix`, `sys.path`) and the system's
    libraries; readable and writable: `writable`; executable: nothing; TCP: nothing."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(_LANDLOCK_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return f"the kernel has no Landlock ({os.strerror(ctypes.get_errno())})"
    fs = _FS_RIGHTS[max(v for v in _FS_RIGHTS if v <= abi)]
    fields = [fs, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0]  # TCP bind+connect; scopes
    size = 8 * (1 if abi < 4 else 2 if abi < 6 else 3)
    attr = (ctypes.c_uint64 * 3)(*fields)
    ruleset = libc.syscall(_LANDLOCK_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        return f"Landlock refused a ruleset ({os.strerror(ctypes.get_errno())})"

    class _Beneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = (("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32))

    def allow(path: str, rights: int) -> None:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return  # absent here: nothing to allow
        try:
            if not os.path.isdir(path):
                rights &= _FILE_RIGHTS
            rule = _Beneath(rights & fs, fd)
            if libc.syscall(_LANDLOCK_ADD_RULE, ruleset, 1, ctypes.byref(rule), 0) != 0:
                raise OSError(ctypes.get_errno(), f"Landlock refused a rule for {path}")
        finally:
            os.close(fd)

    try:
        readable = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
        readable |= {p for p in sys.path if os.path.isdir(p)} | set(_SYSTEM_READ)
        for path in sorted(p for p in readable if os.path.abspath(p) != "/"):
            allow(path, _READ_FILE | _READ_DIR)
        for path in _SYSTEM_FILES:
            allow(path, _READ_FILE | (_WRITE_FILE if path == "/dev/null" else 0))
        for path in writable:
            allow(path, fs & ~_EXECUTE)
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            return f"no_new_privs refused ({os.strerror(ctypes.get_errno())})"
        if libc.syscall(_LANDLOCK_RESTRICT, ruleset, 0) != 0:
            return f"Landlock refused to restrict ({os.strerror(ctypes.get_errno())})"
    except OSError as exc:
        return str(exc)
    finally:
        os.close(ruleset)
    if os.geteuid() == 0:  # root: no capability left (no mount, no raw device, no reboot)
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, self
        data = (ctypes.c_uint32 * 6)()
        if libc.capset(ctypes.byref(header), ctypes.byref(data)) != 0:
            return f"capabilities could not be dropped ({os.strerror(ctypes.get_errno())})"
    return ""


@functools.cache
def wall_missing() -> str | None:
    """Why a test function's file system cannot be walled off here, or None: a child
    process builds the wall (`_wall`: Landlock, no_new_privs, restrict_self, each of which
    a kernel or a seccomp filter may refuse) once; the answer is kept."""
    try:
        done = subprocess.run(_wall_command(), capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL, env=_child_env())  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the wall could not be tried ({exc})"
    lines = done.stdout.splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        return f"the wall could not be built: {tail[:300]}"
    return lines[-1] or None


def _wall_command() -> list[str]:
    """The child that builds a wall around itself and prints why not ("" when it holds)."""
    return [sys.executable, "-I", os.path.abspath(__file__), "--wall"]


def _helpers(kind: str, db: Any, flavour: str = "livesqlbench") -> dict[str, Any]:
    """The official harnesses' helpers, by their names and behaviour (re-written from
    reading them, see the docstring). `flavour`: `livesqlbench` (LiveSQLBench's
    `test_utils.py`, which BIRD-CRITIC-SQLite's `sqlite_test_utils.py` matches) or
    `bird_critic_postgresql` (BIRD-CRITIC's `postgresql_test_utils.py`: DISTINCT removed as
    a word, results compared as sets with dates normalised and nothing rounded)."""
    import json
    import re
    from datetime import date, datetime
    from decimal import ROUND_HALF_UP, Decimal

    def run_one(sql: str, conn: Any) -> Any:
        cursor = conn.cursor()
        try:
            cursor.execute(sql)
            if kind == "postgres":  # several statements: the last one's rows, as psycopg2
                while cursor.nextset():
                    pass
            return cursor.fetchall() if cursor.description is not None else None
        finally:
            cursor.close()

    def perform_query(query: str, db_path: Any = None, conn: Any = None,
                      query_timeout: int = 30) -> tuple[Any, Any]:  # fmt: skip
        conn = conn if conn is not None else db
        return run_one(query, conn), conn

    def execute_queries(queries: Any, db_path: Any, conn: Any, logger: Any = None,
                        section_title: str = "", return_error: bool = False) -> Any:  # fmt: skip
        if isinstance(queries, str):
            queries = [queries]
        result: Any = None
        error = timeout = False
        message = ""
        for i, sql in enumerate(queries):
            try:
                result = run_one(sql, conn)
            except Exception as exc:
                text = str(exc)
                timeout = "timeout" in text.lower() or "canceling statement" in text.lower()
                error = not timeout
                message = f"error executing query {i + 1}: {text}"
                if kind == "postgres":
                    conn.rollback()
                break
        if return_error:
            return result, error, timeout, message
        return result, error, timeout

    def remove_comments(sqls: list[str]) -> list[str]:
        out = []
        for sql in sqls:
            sql = re.sub(r"/\*.*?\*/", "", sql, flags=re.DOTALL)
            sql = re.sub(r"--.*?(\r\n|\r|\n)", r"\1", sql)
            out.append(re.sub(r"\n\s*\n+", "\n", sql).strip())
        return out

    def remove_distinct(sqls: list[str]) -> list[str]:
        if flavour == "bird_critic_postgresql":
            return [re.sub(r"\bDISTINCT\b", "", s, flags=re.IGNORECASE) for s in sqls]
        return [" ".join(t for t in s.split(" ") if t.lower() != "distinct") for s in sqls]

    def _unround(sql: str) -> str:
        """Every ROUND(x, ...) call replaced by its first argument, nested ones too."""
        while (found := re.search(r"ROUND\s*\(", sql, flags=re.IGNORECASE)) is not None:
            opening = found.end() - 1
            depth, first_end, closing = 0, None, -1
            for i in range(opening, len(sql)):
                ch = sql[i]
                if ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                    if depth == 0:
                        closing = i
                        break
                if first_end is None and depth == 1 and (ch == "," or sql[i + 1 : i + 2] == ")"):
                    first_end = i if ch == "," else i + 1
            if closing == -1:
                break
            end = first_end if first_end is not None else closing
            sql = sql[: found.start()] + sql[opening + 1 : end].strip() + sql[closing + 1 :]
        return sql

    def remove_round(sqls: list[str]) -> list[str]:
        return [_unround(s) for s in sqls]

    def _rounded(item: Any, places: int) -> Any:
        if isinstance(item, Decimal):
            return item.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
        if isinstance(item, float):
            return round(item, places)
        if isinstance(item, list | tuple):
            return type(item)(_rounded(x, places) for x in item)
        if isinstance(item, dict):
            return {k: _rounded(v, places) for k, v in item.items()}
        return item

    def preprocess_results(results: Any, decimal_places: int = 2) -> Any:
        rows = []
        for row in results:
            cells = []
            for item in row:
                if isinstance(item, date | datetime):
                    cells.append(item.strftime("%Y-%m-%d"))
                elif flavour == "bird_critic_postgresql":
                    cells.append(item)
                else:
                    value = _rounded(item, decimal_places)
                    is_nested = isinstance(value, dict | list)
                    cells.append(json.dumps(value, sort_keys=True) if is_nested else value)
            rows.append(tuple(cells))
        return rows

    def ex_base(pred_sqls: list[str], sol_sqls: list[str], db_path: Any, conn: Any,
                conditions: Any = None) -> int:  # fmt: skip
        if not pred_sqls or not sol_sqls:
            return 0
        pred, pe, pt = execute_queries(pred_sqls, db_path, conn)
        gold, ge, gt = execute_queries(sol_sqls, db_path, conn)
        if pe or pt or ge or gt:
            return 0
        if flavour == "bird_critic_postgresql":
            if not pred or not gold:
                return 0
            return int(set(preprocess_results(pred)) == set(preprocess_results(gold)))
        pred, gold = preprocess_results(pred), preprocess_results(gold)
        if not pred or not gold:
            return 0
        if conditions is not None and conditions.get("order", False):
            return 1 if pred == gold else 0
        return 1 if set(pred) == set(gold) else 0

    def check_sql_function_usage(sqls: list[str], required_keywords: list[str]) -> int:
        if not sqls:
            return 0
        combined = " ".join(s.lower() for s in sqls)
        return int(all(k.lower() in combined for k in required_keywords))

    return {
        "execute_queries": execute_queries,
        "perform_query_on_sqlite_databases": perform_query,
        "perform_query_on_postgresql_databases": perform_query,
        "ex_base": ex_base,
        "remove_comments": remove_comments,
        "remove_distinct": remove_distinct,
        "remove_round": remove_round,
        "preprocess_results": preprocess_results,
        "check_sql_function_usage": check_sql_function_usage,
    }


# The names the official harnesses give a test function (`run_test_case`'s globals; the
# source itself runs with other locals, so its own top-level names, the `from datetime
# import date` they put above it included, are not seen inside `test_case`): BIRD-CRITIC
# SQLite's, BIRD-CRITIC PostgreSQL's and LiveSQLBench's (`performance_compare_by_qep`, for
# the efficiency instances left out, and `pred_query_result` are not given here)
_OFFICIAL_GLOBALS = {
    "sqlite": ("perform_query_on_sqlite_databases", "execute_queries", "ex_base",
               "check_sql_function_usage", "remove_distinct", "remove_comments",
               "remove_round", "preprocess_results", "date"),
    "bird_critic_postgresql": ("perform_query_on_postgresql_databases", "execute_queries",
                               "ex_base", "check_sql_function_usage", "remove_distinct",
                               "preprocess_results", "date"),
    "livesqlbench": ("perform_query_on_postgresql_databases", "execute_queries", "ex_base",
                     "check_sql_function_usage", "remove_distinct", "remove_comments",
                     "remove_round", "preprocess_results"),
}  # fmt: skip


def _connect(access: dict[str, Any]) -> tuple[Any, Any]:
    """(connection, the `db` argument) of the copy."""
    kind = access["kind"]
    if kind == "postgres":
        import psycopg

        conn = psycopg.connect(access["conninfo"])
        return conn, conn.info.dbname
    if kind == "duckdb":
        import duckdb

        return duckdb.connect(access["path"]), access["path"]
    import sqlite3

    return sqlite3.connect(access["path"], isolation_level=None), access["path"]


def _child() -> None:
    job = json.loads(sys.stdin.read())
    _limit(job["cpu_s"], job["memory"])
    out: dict[str, Any]
    try:
        conn, db = _connect(job["access"])
        network = _leave_network()
    except Exception as exc:
        print(json.dumps({"status": "error", "message": f"cannot reach the copy: {exc}"}))
        return
    import datetime

    helpers = _helpers(job["access"]["kind"], conn, job["helpers"])
    copy = job["access"].get("path")
    why = _wall([job["folder"]] + ([os.path.dirname(copy)] if copy else []))
    if why and job["filesystem"] != "open":
        message = f"no file-system wall for a test function: {why}"
        print(json.dumps({"status": "unsupported", "network": network, "message": message,
                          "filesystem": f"not walled ({why})"}))  # fmt: skip
        return

    scope: dict[str, Any] = {
        "__name__": "queryeval_test",
        "datetime": datetime,
        "date": datetime.date,
        **helpers,
    }
    names: dict[str, Any] = scope  # the source's own top-level names
    official = _OFFICIAL_GLOBALS.get(
        "sqlite" if job["access"]["kind"] == "sqlite" else job["helpers"]
    )  # fmt: skip
    if job.get("legacy") and official is not None:  # as the official harness's exec
        scope = {k: datetime.date if k == "date" else helpers[k] for k in official}
        names = {}
    try:
        exec(compile(job["source"], "<test_case>", "exec"), scope, names)
        function = names.get("test_case")
        if not callable(function):
            out = {"status": "error", "message": "the source defines no test_case function"}
        else:
            function(job["pred_sqls"], job["sol_sqls"], db, conn, **job["kwargs"])
            out = {"status": "passed", "message": ""}
    except AssertionError as exc:
        out = {"status": "failed", "message": f"assertion: {exc}"[:2000]}
    except MemoryError:
        out = {"status": "error", "message": f"{_LIMIT_NOTE} (memory)"}
    except Exception as exc:
        module = type(exc).__module__.split(".")[0]
        if module in ("psycopg", "sqlite3", "duckdb", "_duckdb"):
            out = {"status": "failed", "message": f"database error: {exc}"[:2000]}
        else:
            out = {"status": "raised", "raised": type(exc).__name__, "message": str(exc)[:2000]}
    out["network"] = network
    out["filesystem"] = "walled" if not why else f"open ({why})"
    print(json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--wall"]:  # wall_missing's probe
        print(_wall([]))
    else:
        _child()
