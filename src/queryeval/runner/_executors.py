"""Executors carry units of work to the one worker and bring the results back to the driver.

Two implement the same `run(units, worker, emit)` and `map(items, fn, emit)`: this
module's `LocalExecutor` (the driver's process, or a pool of forked processes) and
`runner._ray.RayExecutor` (a Ray cluster). `emit` is always called in the driver, which is
the only writer of results.jsonl. In the driver's process the worker streams each scored
(system, case) (`Worker.run`); in a worker process it scores the whole unit and returns a
`Batch` (`Worker.__call__`). `map` applies any picklable function (the input check of a
large run) and emits the results in the order they finish.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from queryeval._gc import bulk_allocation
from queryeval.errors import InputError
from queryeval.runner._work import Emit, Unit, Worker


class Executor(Protocol):
    """Carries units to a worker; `stats`: what it did, for run.json (empty: nothing to
    say)."""

    stats: dict[str, Any]

    def run(self, units: Sequence[Unit], worker: Worker, emit: Emit) -> None:
        """Score every unit; an exception raised by `emit` stops the run."""
        ...

    def map(self, items: Sequence[Any], fn: Callable[[Any], Any], emit: Emit) -> None:
        """Apply a picklable `fn` to every item, `emit` each result as it comes."""
        ...


def usable_cores() -> int:
    """CPUs this process may run on (its affinity: a container's or `taskset`'s share),
    else the machine's.

    >>> usable_cores() >= 1
    True
    """
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


# in a forked worker: the driver's worker, inherited with its state (nothing is pickled)
_inherited: Worker | None = None


class LocalExecutor:
    """This machine: the units in the driver's process (`workers` 1), or in `workers`
    forked processes. A pool is forked on first use: for units, once the worker's state is
    built, so every process inherits it (its prepared scorers, the loaded predictions; the
    driver's open handles are closed first, and each process's share of the cores is
    DuckDB's threads where a database sets none); for `map` (a large run's input check),
    before the driver holds anything large, and the worker then travels with each unit.
    The processes end with the run's (Linux: the kernel's parent-death signal), so a run
    killed with SIGKILL leaves none scoring on."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = max(1, workers)
        self.stats: dict[str, Any] = {}
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
        """Score the units here, streaming, or in the pool, emitting each unit's `Batch`
        in unit order (the records are written as one process writes them)."""
        if self.workers == 1:
            for unit in units:
                worker.run(unit, emit)
            return
        ctx = worker.start().ctx
        threads = ctx.engine_threads
        if self._pool is None:
            ctx.close_handles()  # no connection is shared across the fork
            if threads is None:  # DuckDB's default is every core, in each worker
                ctx.engine_threads = max(1, usable_cores() // self.workers)
            self._start(worker)
        try:
            sent = None if self._inherit is worker else worker
            self._map([(sent, unit) for unit in units], _apply, _InOrder(emit))
        finally:
            ctx.engine_threads = threads

    def map(self, items: Sequence[Any], fn: Callable[[Any], Any], emit: Emit) -> None:
        """`fn` over the items in the pool (here for one worker)."""
        if self.workers == 1:
            for item in items:
                emit(fn(item))
            return
        if self._pool is None:
            self._start(None)
        self._map([(fn, item) for item in items], _apply, emit)

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

    def _map(self, items: Iterable[Any], fn: Callable[[Any], Any], emit: Emit) -> None:
        """`fn` over `items` in the pool, a few per worker in flight (memory does not grow
        with the number of items); the first exception (of `fn` or of `emit`) stops it."""
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        queue = iter(items)
        running: set[Any] = set()

        def submit() -> bool:
            item = next(queue, _END)
            if item is _END:
                return False
            running.add(self._pool.submit(fn, item))
            return True

        try:
            for _ in range(self.workers * 2):
                if not submit():
                    break
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    running.discard(future)
                    emit(future.result())
                    submit()
        except BrokenProcessPool as exc:
            raise InputError(
                "a worker process ended abruptly while scoring (killed by the system, out of "
                f"memory, or a crash inside an engine: {exc}); the records written so far "
                "are kept: run again with --resume (settings.workers: 1 scores in one "
                "process)",
                where="settings.workers",
            ) from None


_END: Any = object()


@dataclass
class _InOrder:
    """`emit` of the batches in unit order, whatever order they finish in."""

    emit: Emit
    following: int = 0

    def __post_init__(self) -> None:
        self.finished: dict[int, Any] = {}

    def __call__(self, batch: Any) -> None:
        self.finished[batch.index] = batch
        while self.following in self.finished:
            self.emit(self.finished.pop(self.following))
            self.following += 1


def _apply(item: tuple[Callable[[Any], Any] | None, Any]) -> Any:
    """In a forked worker: `fn(arg)`; None: the inherited worker scores the unit."""
    fn, arg = item
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
