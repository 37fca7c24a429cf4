"""Executors: how a run maps its one scoring step over its work items.

The driver (`Runner`) plans the work items (a system and a case), gives an executor the
items and a `ScoreWork` (an item's output, saved or generated, scored into a `Scored`), and
receives every result through `emit`, in its own thread: it is the only writer of
results.jsonl and the only keeper of the summary's columns. An executor only decides how
the items are mapped: a loop (`InlineExecutor`), an event loop with each system's
concurrency (`AsyncExecutor`), forked workers scoring spans of the items (`ForkExecutor`,
for queries on local database files: `runner._forked`), forked worker processes
(`PoolExecutor`, for a large run's shards: `runner._shard_check` and
`runner._shard_score`). Another executor (a cluster)
implements the same `run`: items and work are plain picklable data for the process-based
ones, and the driver's `emit` is called in the driver only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from queryeval._gc import bulk_allocation
from queryeval.cases import Case, Output
from queryeval.errors import InputError
from queryeval.log import encode_record
from queryeval.runner._pipeline import Scored, ascore_output, score_output
from queryeval.scorers import Scorer, ScoringContext

if TYPE_CHECKING:
    import asyncio

    from queryeval.runner._run import SystemRun

T = TypeVar("T")
R = TypeVar("R")
Emit = Callable[[Scored], None]
# One (system, case) to generate (or read) and score: a plain tuple, made by the thousand.
WorkItem = tuple["SystemRun", Case]


@dataclass(frozen=True)
class ScoreWork:
    """What an executor maps over the items: an item's output (its saved prediction, or
    its live system's answer) and every scorer's score of it."""

    scorers: Mapping[str, Scorer]
    ctx: ScoringContext
    # outputs stored by an earlier run, scored again without asking the system
    # (`run --retry-errors`), by (system, case id)
    stored: Mapping[tuple[str, str], Output] = field(default_factory=dict)

    def __call__(self, item: WorkItem) -> Scored:
        """Score a saved prediction (synchronous scorers only)."""
        system, case = item
        output = self.stored.get((system.name, case.id))
        if output is None:
            predictions = system.predictions
            assert predictions is not None, "a live system's output is generated (ascore)"
            output = predictions.get(case.id)
        return score_output(system.name, case, output, self.scorers, self.ctx)

    async def ascore(self, item: WorkItem, limit: asyncio.Semaphore | None = None) -> Scored:
        """Read or generate the item's output (a live system's call under `limit`, its
        concurrency), then score it on the event loop."""
        system, case = item
        stored = self.stored.get((system.name, case.id))
        if stored is not None:
            output = stored
        elif system.predictions is not None:
            output = system.predictions.get(case.id)
        else:
            assert system.callable is not None
            if limit is None:
                output = await system.callable.generate(case)
            else:
                async with limit:
                    output = await system.callable.generate(case)
        return await ascore_output(system.name, case, output, self.scorers, self.ctx)


class Executor(Protocol):
    """Maps `work` over `items`, handing each result to `emit` in the caller's thread; the
    order of the results is the executor's (the summary puts records in case order)."""

    def run(self, items: Sequence[WorkItem], work: ScoreWork, emit: Emit) -> None:
        """Score every item; an exception raised by `emit` stops the run."""
        ...


class InlineExecutor:
    """A plain loop in this thread: saved predictions and synchronous scorers, where an
    event loop would only add its overhead. The cyclic collector is paused meanwhile
    (`queryeval._gc.bulk_allocation`)."""

    def run(self, items: Sequence[WorkItem], work: ScoreWork, emit: Emit) -> None:
        """Score every item, in order."""
        with bulk_allocation():
            for item in items:
                emit(work(item))


class AsyncExecutor:
    """One event loop and up to `workers` tasks: live systems (each configured system's
    calls under its own `concurrency`, shared by its grid points), coroutine scorers
    (judges), blocking scorers (in threads). Async clients are closed inside the loop."""

    def __init__(self, concurrency: Mapping[str, int], workers: int) -> None:
        self.concurrency = dict(concurrency)  # system group -> concurrent calls
        self.workers = max(1, min(workers, 256))

    def run(self, items: Sequence[WorkItem], work: ScoreWork, emit: Emit) -> None:
        """Score every item, as many at once as the limits allow."""
        import asyncio

        asyncio.run(self._run(items, work, emit))

    async def _run(self, items: Iterable[WorkItem], work: ScoreWork, emit: Emit) -> None:
        import asyncio

        limits = {group: asyncio.Semaphore(n) for group, n in self.concurrency.items()}
        queue: asyncio.Queue[WorkItem] = asyncio.Queue()
        for item in items:
            queue.put_nowait(item)
        n_workers = max(1, min(queue.qsize(), self.workers))

        async def worker() -> None:
            while True:
                try:
                    item = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                system = item[0]
                limit = limits.get(system.group or system.name)
                emit(await work.ascore(item, limit))

        try:
            await asyncio.gather(*(worker() for _ in range(n_workers)))
        finally:
            await work.ctx.aclose()  # async clients close inside the loop they live in


class PoolExecutor:
    """Forked worker processes (the standard library's `ProcessPoolExecutor`), for work
    that is pure computation on local files: a large run's shards. Workers are forked when
    the pool starts, before the driver holds anything large, and end with the run's
    process (Linux: the kernel's parent-death signal), so a run killed with SIGKILL leaves
    no worker scoring on. A few items per worker are in flight at a time, so memory does
    not grow with the number of items; results are emitted in the order they finish."""

    def __init__(self, workers: int, setup: Callable[[], None] | None = None) -> None:
        self.workers = max(1, workers)
        self.setup = setup  # called in each worker once it starts (inherited, not pickled)
        self._pool: Any = None

    def __enter__(self) -> PoolExecutor:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        self._pool = ProcessPoolExecutor(
            self.workers,
            mp_context=mp.get_context("fork"),
            initializer=_worker_started,
            initargs=(os.getpid(), self.setup),
        )
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

    def run(self, items: Sequence[T], work: Callable[[T], R], emit: Callable[[R], None]) -> None:
        """Map `work` over `items` in the workers, `emit` each result here as it comes; the
        first exception (of `work` or of `emit`) stops the run."""
        from concurrent.futures import FIRST_COMPLETED, wait

        assert self._pool is not None, "PoolExecutor is used as a context manager"
        queue = iter(items)
        running: set[Any] = set()

        def submit() -> bool:
            item = next(queue, _END)
            if item is _END:
                return False
            running.add(self._pool.submit(_WithoutCycles(work), item))
            return True

        from concurrent.futures.process import BrokenProcessPool

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


def usable_cores() -> int:
    """CPUs this process may run on (its affinity: a container's or `taskset`'s share),
    else the machine's.

    >>> usable_cores() >= 1
    True
    """
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


class ForkExecutor:
    """Saved predictions whose scoring runs queries on local database files (DuckDB,
    SQLite, KQL): the engines' work, not Python's, is most of the time, and one process
    uses one core. Each forked worker opens its own engines and gold cache (the driver's
    are closed before the fork; what its scorers prepared is inherited), with its share of
    the cores as DuckDB's threads where a database sets none, and scores runs of
    consecutive items; the results are emitted in item order, so the records are written as
    the inline loop writes them. The decision is `runner._forked.fork_workers`."""

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)

    def run(self, items: Sequence[WorkItem], work: ScoreWork, emit: Emit) -> None:
        """Score every item in the workers; emit the results here, in item order."""
        n = len(items)
        size = max(_MIN_SPAN, min(_MAX_SPAN, -(-n // (self.workers * _SPANS_PER_WORKER))))
        spans = [(start, min(start + size, n)) for start in range(0, n, size)]
        finished: dict[int, list[Scored]] = {}
        following = 0  # the first item not yet emitted

        def keep(done: tuple[int, list[Scored]]) -> None:
            nonlocal following
            finished[done[0]] = done[1]
            while following in finished:
                batch = finished.pop(following)
                for scored in batch:
                    emit(scored)
                following += len(batch)

        ctx = work.ctx
        ctx.close_handles()  # no connection is shared across the fork
        threads = ctx.engine_threads
        if threads is None:  # DuckDB's default is every core, in each worker
            ctx.engine_threads = max(1, usable_cores() // self.workers)
        try:
            with PoolExecutor(self.workers, setup=_Inherit(items, work)) as pool:
                pool.run(spans, _score_span, keep)
        finally:
            ctx.engine_threads = threads


# items per span: about `_SPANS_PER_WORKER` spans a worker, so that the last ones end close
# together, each large enough that its pickled results are few messages
_SPANS_PER_WORKER = 48
_MIN_SPAN = 4
_MAX_SPAN = 256
# in a ForkExecutor's worker: the items and the work of its run (set by `_Inherit`)
_forked: tuple[Sequence[WorkItem], ScoreWork] | None = None


@dataclass(frozen=True)
class _Inherit:
    """A worker's setup: keep the run's items and work, which the fork copied (nothing is
    pickled); the driver's own module state is left alone."""

    items: Sequence[WorkItem]
    work: ScoreWork

    def __call__(self) -> None:
        global _forked
        _forked = (self.items, self.work)


def _score_span(span: tuple[int, int]) -> tuple[int, list[Scored]]:
    """In a worker: score the items `span` names, then write what the context keeps for
    later (the gold cache), since a worker may be ended without notice once idle."""
    assert _forked is not None, "a ForkExecutor's worker"
    items, work = _forked
    start, stop = span
    out: list[Scored] = []
    try:
        for i in range(start, stop):
            record, scores, _ = work(items[i])
            line = encode_record(record)
            record["output"] = None  # the line has it (and a Fragment does not pickle)
            out.append(Scored(record, scores, line))
    finally:
        work.ctx.flush()
    return start, out


@dataclass(frozen=True)
class _WithoutCycles:
    """`work` with the cyclic collector paused (`queryeval._gc`): a shard builds thousands
    of acyclic objects that refcounting frees when it ends."""

    work: Callable[[Any], Any]

    def __call__(self, item: Any) -> Any:
        with bulk_allocation():
            return self.work(item)


_PR_SET_PDEATHSIG = 1


def _worker_started(parent_pid: int, setup: Callable[[], None] | None) -> None:
    """In each worker: end with the run's process (Linux), let the driver alone answer
    Ctrl-C (a worker would print its own KeyboardInterrupt), then the pool's `setup`."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if setup is not None:
        setup()
