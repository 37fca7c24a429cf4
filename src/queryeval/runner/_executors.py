"""Executors: how a run maps its one scoring step over its work items.

The driver (`Runner`) plans the work items (a system and a case), gives an executor the
items and a `ScoreWork` (an item's output, saved or generated, scored into a `Scored`), and
receives every result through `emit`, in its own thread: it is the only writer of
results.jsonl and the only keeper of the summary's columns. An executor only decides how
the items are mapped: a loop (`InlineExecutor`), an event loop with each system's
concurrency (`AsyncExecutor`). The forked workers of a large run (`runner._sharded`) score
with the same `score_output` and send the driver blocks of summary columns with the
scorers' partial aggregates. Another executor (a process pool, a cluster) implements `run`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from queryeval._gc import bulk_allocation
from queryeval.cases import Case, Output
from queryeval.runner._pipeline import Scored, ascore_output, score_output
from queryeval.scorers import Scorer, ScoringContext

if TYPE_CHECKING:
    import asyncio

    from queryeval.runner._run import SystemRun

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

    def score(self, item: WorkItem) -> Scored:
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
        score = work.score
        with bulk_allocation():
            for item in items:
                emit(score(item))


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
