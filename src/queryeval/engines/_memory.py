"""A bound on the memory the process may take while an untrusted query runs in it.

An engine's own memory limit (DuckDB's `memory_limit`, SQLite's heap limit) binds only what
goes through its buffer manager: DuckDB builds `list(range(1500000000))` or
`repeat('x', 900000000)` with plain allocations that no setting sees, and the process is
killed by the system. So while a query runs, the process's data segment (`RLIMIT_DATA`:
private writable memory, not files mapped for reading nor reserved address space) may grow
by at most the largest budget of the queries running (they share it: running side by side
does not multiply it), above what it held when the first of them began. Past it an
allocation fails, which DuckDB reports as out of memory and Python as `MemoryError` (both
`resource_limit`). Between queries the bound is lifted, so the evaluator itself may grow.
Linux only (elsewhere a no-op: `RLIMIT_DATA` does not bound `mmap` there).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator

try:
    import resource
except ImportError:  # pragma: no cover - Windows
    resource = None  # type: ignore[assignment]

_ENABLED = resource is not None and sys.platform.startswith("linux")
_lock = threading.Lock()
_running = 0  # queries inside a guard
_budgets: list[int] = []  # their budgets
_base = 0  # the data segment when the first of them began
_saved: tuple[int, int] | None = None  # the limits before the first guard


_statm: tuple[int, int, int] | None = None  # (pid, descriptor, main stack bytes) when opened


def data_segment_bytes() -> int:
    """The process's data segment now (`VmData`), in bytes: the data field of
    /proc/self/statm (data + main stack pages), read with one `pread` on a descriptor this
    process keeps open, less the main stack as it was when first read (`VmStk`, a few
    hundred KiB; a deeper stack later counts here, so the bound is looser by its growth).
    Reading /proc/self/status for `VmData` took about 50 us beside DuckDB's queries (and
    slowed them), statm about 9 us."""
    global _statm
    pid = os.getpid()
    if _statm is None or _statm[0] != pid:  # first use, or a forked child's own file
        if _statm is not None:
            with contextlib.suppress(OSError):
                os.close(_statm[1])
        fd = os.open("/proc/self/statm", os.O_RDONLY)  # not inherited by exec'd programs
        _statm = (pid, fd, _status_bytes(b"VmStk:"))
    _, fd, stack = _statm
    return int(os.pread(fd, 256, 0).split()[5]) * _PAGE - stack


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _status_bytes(field: bytes) -> int:
    """One size field of /proc/self/status, in bytes."""
    with open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0  # pragma: no cover - a kernel without the field


def _apply() -> None:
    assert resource is not None and _saved is not None
    soft, hard = _saved
    bound = _base + max(_budgets)
    if soft != resource.RLIM_INFINITY:
        bound = min(bound, soft)
    if hard != resource.RLIM_INFINITY:
        bound = min(bound, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (bound, hard))


@contextlib.contextmanager
def memory_guard(budget: int) -> Iterator[None]:
    """Let the data segment grow by at most `budget` bytes (or the larger budget of a query
    running beside) while the block runs."""
    global _running, _base, _saved
    if not _ENABLED or budget <= 0:
        yield
        return
    assert resource is not None
    with _lock:
        if _running == 0:
            _saved = resource.getrlimit(resource.RLIMIT_DATA)
            _base = data_segment_bytes()
        _running += 1
        _budgets.append(budget)
        _apply()
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            _budgets.remove(budget)
            if _running == 0:
                assert _saved is not None
                resource.setrlimit(resource.RLIMIT_DATA, _saved)
                _saved = None
            else:
                _apply()


def _forget_in_child() -> None:
    """A process forked while a query ran in another thread runs no query: its bound goes."""
    global _running, _saved, _lock
    if resource is not None and _saved is not None:
        resource.setrlimit(resource.RLIMIT_DATA, _saved)
    _running, _saved, _lock = 0, None, threading.Lock()
    _budgets.clear()


if _ENABLED:
    os.register_at_fork(after_in_child=_forget_in_child)
