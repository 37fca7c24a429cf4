"""Executors carry units to the one worker and its results back to the driver, the only
writer: `LocalExecutor` (the driver's process, or forked processes) and
`runner._ray.RayExecutor` implement the same `run(units, worker, emit)`, and
`map(items, fn, emit)` for any picklable function (a large run's input check).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from queryeval._gc import bulk_allocation
from queryeval.errors import InputError
from queryeval.runner._work import Emit, Unit, Worker


def usable_cores() -> int:
    """CPUs this process may run on (its affinity), else the machine's.

    >>> usable_cores() >= 1
    True
    """
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


# in a forked worker: the driver's worker, inherited with its state (nothing is pickled)
_inherited: Worker | None = None


class LocalExecutor:
    """The units in the driver's process (`workers` 1) or in forked processes, forked on
    first use: for units once the worker's state is built, so each inherits it (the
    driver's handles closed first; DuckDB's threads a share of the cores); for `map`
    before the driver holds anything large (the worker then travels with each unit). They
    end with the run's process (Linux's parent-death signal), even on SIGKILL."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = max(1, workers)
        self._pool: Any = None
        self._inherit: Worker | None = None

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if exc[0] is not None:  # an error or an interrupt: what runs is dropped
            for proc in list(getattr(pool, "_processes", {}).values()):
                with contextlib.suppress(Exception):
                    proc.kill()
            pool.shutdown(wait=True, cancel_futures=True)
        else:
            pool.shutdown(wait=True)

    def run(self, units: Sequence[Unit], worker: Worker, emit: Emit) -> None:
        """Score the units here (streaming), or in the pool (each `Batch` in unit order)."""
        if self.workers == 1:
            for unit in units:
                worker.run(unit, emit)
            return
        if self._pool is None:
            ctx = worker.start().ctx
            ctx.close_handles()  # no connection is shared across the fork
            if ctx.engine_threads is None:  # DuckDB's default is every core, in each worker
                ctx.engine_threads = max(1, usable_cores() // self.workers)
            self._start(worker)
        self.map(units, None if self._inherit is worker else worker, emit)

    def map(self, items: Sequence[Any], fn: Callable[[Any], Any] | None, emit: Emit) -> None:
        """`fn` over the items (None: the inherited worker's) in the pool; results emitted in
        item order; the first exception (of `fn`, `emit`) stops it."""
        from concurrent.futures.process import BrokenProcessPool

        if self._pool is None:
            self._start(None)
        pending: deque[Any] = deque()  # about two items a worker in flight, in item order
        try:
            for item in items:
                pending.append(self._pool.submit(_apply, fn, item))
                if len(pending) > 2 * self.workers:
                    emit(pending.popleft().result())
            while pending:
                emit(pending.popleft().result())
        except BrokenProcessPool as exc:
            raise InputError(
                "a worker process ended abruptly while scoring (killed by the system, out of "
                f"memory, or a crash inside an engine: {exc}); the records written so far "
                "are kept: run again with --resume (settings.workers: 1 scores in one "
                "process)",
                where="settings.workers",
            ) from None
        finally:
            for future in pending:  # after an error: what was not started is dropped
                future.cancel()

    def _start(self, worker: Worker | None) -> None:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        self._inherit = worker
        self._pool = ProcessPoolExecutor(
            self.workers,
            mp_context=mp.get_context("fork"),
            initializer=_worker_started,
            initargs=(os.getpid(), worker),
        )


def _apply(fn: Callable[[Any], Any] | None, arg: Any) -> Any:
    """In a forked worker: `fn(arg)`; None: the inherited worker scores the unit."""
    fn = fn or _inherited
    assert fn is not None, "a LocalExecutor's worker"
    with bulk_allocation():  # thousands of acyclic objects, freed when the item ends
        return fn(arg)


_PR_SET_PDEATHSIG = 1


def _worker_started(parent_pid: int, worker: Worker | None) -> None:
    """In each worker: end with the run's process (Linux), let the driver alone answer
    Ctrl-C (a worker would print its own KeyboardInterrupt), keep the inherited worker."""
    global _inherited
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _inherited = worker
