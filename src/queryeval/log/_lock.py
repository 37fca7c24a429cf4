"""One run per directory: an exclusive lock on `<run dir>/.lock` while a run writes there.

The lock is the kernel's (`flock`), held by an open file: a run killed with SIGKILL loses
it with its process, so the next run takes a stale lock over by itself; the file keeps
who holds it (process id, host, start time), for the message a second run gets. Forked
workers share the open file, so the directory stays locked while any of them lives.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from queryeval.errors import InputError
from queryeval.log._schema import LOCK


@contextlib.contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Hold the run directory's lock for the block; InputError (exit 2) naming the holder
    when another run holds it.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> with run_lock(folder):
    ...     try:
    ...         with run_lock(folder):
    ...             pass
    ...     except InputError as error:
    ...         print(error.message.split(":")[0])
    another run is writing to this directory
    """
    import fcntl

    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                f"another run is writing to this directory: {_holder(path)}; wait for it to "
                "end, or use another --out",
                path=run_dir,
            ) from None
        holder = {"pid": os.getpid(), "host": socket.gethostname(),
                  "since": datetime.now(UTC).isoformat(timespec="seconds")}  # fmt: skip
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def lock_holder(run_dir: Path) -> str | None:
    """Who holds the run directory's lock (a run writing there), in words; None when no one
    does. Read-only: tests the lock with a shared, non-blocking request released at once
    (a run starting in those microseconds is told the directory is busy; nothing is lost).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> lock_holder(folder) is None
    True
    >>> with run_lock(folder):
    ...     lock_holder(folder).startswith(f"process {os.getpid()} on ")
    True
    """
    import fcntl

    path = Path(run_dir) / LOCK
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # no lock file: no run ever held this directory (or not readable)
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder(path)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _holder(path: Path) -> str:
    """Who holds the lock, as its file says."""
    try:
        info = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return "a run whose details are unreadable"
    return f"process {info.get('pid')} on {info.get('host')} since {info.get('since')}"
