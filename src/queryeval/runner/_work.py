"""The unit of work and the one worker that scores it: a `Unit` is plain, picklable data
(which cases, which systems, where their outputs are); a `Worker` builds its process's
state once and runs the one loop over a unit, streaming each `Scored` in the driver (`run`,
`arun`) or returning the unit's `Batch` in another process (`__call__`)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from queryeval._gc import bulk_allocation
from queryeval._inputs import max_line_bytes
from queryeval.cases import Case, Output
from queryeval.log import encode_record
from queryeval.runner._pipeline import Scored, ascore_output, score_output
from queryeval.runner._plan import import_plugins, system_runs
from queryeval.runner._ranges import FileRange, parse_cases
from queryeval.scorers import Scorer, ScoringContext, ShardableScorer
from queryeval.stats import RunColumns
from queryeval.systems import join_outputs, read_prediction_line

if TYPE_CHECKING:
    import asyncio
    from contextlib import AbstractAsyncContextManager

    from queryeval.config import SuiteConfig
    from queryeval.runner._plan import SystemRun
    from queryeval.systems import TextFields


@dataclass
class SystemPredictions:
    """Where case i's record is in a system's predictions file: `offsets[i]` (-1: none) and
    `lines[i]`; a case with several records (attempts) has them all in `more[i]`."""

    path: Path
    offsets: array[int]
    lines: array[int]
    more: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def part(self, a: int, b: int) -> SystemPredictions:
        """Those of cases `a`..`b`, numbered from 0."""
        more = {i - a: recs for i, recs in self.more.items() if a <= i < b}
        return SystemPredictions(self.path, self.offsets[a:b], self.lines[a:b], more)

    def read(self, text_fields: TextFields) -> list[Output]:
        """Each case's output, read at its records' offsets (checked)."""
        outputs, path = list[Output](), self.path
        with path.open("rb") as f:
            for i, at in enumerate(self.offsets):
                if at < 0:
                    outputs.append(Output(error="no prediction for this case", failure="missing"))
                elif (more := self.more.get(i)) is None:
                    line = read_prediction_line(_line_at(f, at), path, self.lines[i], text_fields)
                    outputs.append(line.output)
                else:  # its attempts' records
                    lines = [
                        (n, read_prediction_line(_line_at(f, o), path, n, text_fields))
                        for o, n in more
                    ]
                    outputs.append(join_outputs(lines))
        return outputs


@dataclass(frozen=True, slots=True)
class Unit:
    """`cases` (positions in the worker's cases, or a range of a cases file with
    `lines_before` lines before it) with `systems` and their `outputs` (per system and
    case, None a live call; or where a predictions file has them). `done`: per system, the
    ids already stored; `pure`: nothing is called (a lost unit may be run again)."""

    index: int
    systems: tuple[str, ...]
    cases: range | FileRange
    lines_before: int = 0
    outputs: Mapping[str, Sequence[Output | None] | SystemPredictions] = field(default_factory=dict)
    done: Mapping[str, frozenset[str]] = field(default_factory=dict)
    pure: bool = True
    count: int = 0  # cases in the unit

    def todo(self) -> int:
        """(system, case) pairs left to score."""
        return self.count * len(self.systems) - sum(len(ids) for ids in self.done.values())


Part = tuple[tuple[str, ...], "range | FileRange", Sequence[Any], Mapping[str, Any], int]


def cut_units(
    parts: Iterable[Part], done: set[tuple[str, str]], calls: Set[str] = frozenset()
) -> list[Unit]:
    """The units of `parts` (systems, cases, the cases or their stubs, outputs, lines
    before), each with the ids of its pairs in `done`, but none whose pairs all are; a
    unit is pure unless one of its systems is in `calls` (live, or judged)."""
    units: list[Unit] = []
    for names, where, cases, outputs, before in parts:
        finished = {}
        for name in names if done else ():
            if ids := frozenset(c.id for c in cases if (name, c.id) in done):
                finished[name] = ids
        if sum(map(len, finished.values())) < len(names) * len(cases):
            pure = calls.isdisjoint(names)
            units.append(
                Unit(len(units), names, where, before, outputs, finished, pure, len(cases))
            )
    return units


@dataclass
class Batch:
    """A unit scored in another process: its records' lines in the loop's order, its
    summary columns (with the scorers' partial aggregates where it read its own cases), and
    the live systems' call counters so far."""

    index: int
    lines: bytes
    columns: RunColumns
    scored: int
    worker: str = ""
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)


Emit = Callable[[Any], None]  # a `Scored` (streamed in the driver) or a `Batch`
Todo = tuple[str, Case, "Output | None"]  # a system, a case, its output (None: a live call)


class Services(Protocol):
    """A worker's engines, judge, embedder and live systems' limits: this process's
    (`LocalServices`) or the run's Ray actors' (`runner._ray.RayExecutor`)."""

    def context(self, suite: SuiteConfig, cache_dir: Path) -> ScoringContext:
        """The scoring context whose services these are."""
        ...

    def limit(self, group: str, n: int) -> AbstractAsyncContextManager[Any]:
        """What a live call of `group` holds while it runs (its `concurrency` of `n`)."""
        ...


@dataclass(frozen=True)
class LocalServices:
    """Services built in each process on first use, or the caller's context (`ctx`); a
    system's concurrency a semaphore."""

    ctx: ScoringContext | None = None

    def context(self, suite: SuiteConfig, cache_dir: Path) -> ScoringContext:
        """The given context, or a plain one."""
        return self.ctx if self.ctx is not None else ScoringContext(suite, cache_dir=cache_dir)

    def limit(self, group: str, n: int) -> AbstractAsyncContextManager[Any]:
        """A semaphore of `n` (made in the running loop, so one per state)."""
        import asyncio  # lazily: a run of saved predictions runs no event loop

        return asyncio.Semaphore(n)


@dataclass
class Worker:
    """What every executor runs over the units: plain, picklable data; its state (`ctx`,
    `scorers`, `systems`) built by `start` in each process, or adopted from the driver's
    plan (and inherited by forks); one per process and run key where units are sent."""

    key: str
    suite: SuiteConfig
    cache_dir: Path
    text_fields: TextFields
    services: Services = field(default_factory=LocalServices)
    cases: Any = None  # the run's cases (a list, or a Ray ObjectRef); None: units read theirs
    use_cache: bool = True
    width: int = 1  # items scored at once on the event loop
    # this process's state, never pickled
    ctx: ScoringContext = field(init=False, repr=False, compare=False)
    scorers: dict[str, Scorer] = field(init=False, repr=False, compare=False)
    systems: dict[str, SystemRun] = field(init=False, repr=False, compare=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k in _PLAIN}

    def start(
        self,
        scorers: Mapping[str, Scorer] | None = None,
        systems: Sequence[SystemRun] | None = None,
        prepared: bool = False,
    ) -> Worker:
        """This process's state, built once: the given scorers and systems (the driver's)
        or the suite's; live systems attached, scorers prepared unless `prepared`."""
        if "ctx" in vars(self):
            return self
        from queryeval.scorers import build_scorers
        from queryeval.systems import attach_systems

        if scorers is None or systems is None:
            import_plugins(self.suite)  # a forked worker has them; a cluster's imports them
        if self.cases is not None and not isinstance(self.cases, list):
            import ray  # the cases in the cluster's object store

            self.cases = ray.get(self.cases)
        cases: list[Case] = self.cases or []
        self.ctx = self.services.context(self.suite, self.cache_dir)
        self.scorers = dict(scorers) if scorers is not None else build_scorers(self.suite)
        if systems is None:
            systems = system_runs(self.suite, cases, self.text_fields, predictions=False)
        self.systems = {s.name: s for s in systems}
        live = [s.callable for s in systems if s.callable is not None]
        attach_systems(live, self.ctx, use_cache=self.use_cache)
        if cases and not prepared:
            for scorer in self.scorers.values():
                scorer.prepare(cases, self.ctx)
        self._limits: dict[str, Any] = {}
        self._asynchronous = any(s.is_async or s.blocking for s in self.scorers.values())
        return self

    def close(self, close_context: bool = True) -> None:
        """Close async clients inside their loop, then (`close_context`) every service; the
        next `start` builds the state again."""
        if "ctx" not in vars(self):
            return
        ctx, loop, self._loop = vars(self).pop("ctx"), self._loop, None
        try:
            if loop is not None:
                loop.run_until_complete(ctx.aclose())
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
                loop.close()
        finally:
            if close_context:
                ctx.close()

    def calls(self) -> dict[str, dict[str, Any]]:
        """Model and endpoint systems' calls, cache hits, tokens and cost in this process."""
        return {
            name: getattr(system.callable, "run_stats")()  # noqa: B009 - model/endpoint only
            for name, system in self.start().systems.items()
            if hasattr(system.callable, "run_stats")
        }

    def run(self, unit: Unit, emit: Callable[[Scored], None]) -> list[Todo]:
        """Score every (system, case) of `unit` not yet stored and `emit` each (as they
        finish where something is asynchronous); returns what was scored, in order."""
        todo = self._todo(unit)
        if self._asynchronous or any(output is None for _, _, output in todo):
            if self._loop is None:
                import asyncio

                self._loop = asyncio.new_event_loop()
            with _interruptible(self._loop):
                self._loop.run_until_complete(self._all(todo, emit))
            return todo
        scorers, ctx = self.scorers, self.ctx
        with bulk_allocation():
            for name, case, output in todo:
                assert output is not None
                emit(score_output(name, case, output, scorers, ctx))
        return todo

    async def arun(self, unit: Unit, emit: Callable[[Scored], None]) -> list[Todo]:
        """`run` on the caller's event loop: every item on it, as they finish."""
        todo = self._todo(unit)
        await self._all(todo, emit)
        return todo

    def _todo(self, unit: Unit) -> list[Todo]:
        """The unit's (system, case, output)s not yet stored (a range of a file read, the
        scorers prepared on its cases; outputs in a predictions file read)."""
        self.start()
        if isinstance(unit.cases, range):
            cases = self.cases[unit.cases.start : unit.cases.stop]
        else:
            r = unit.cases
            cases = [case for _, case in parse_cases(r.lines()[1], r.path, unit.lines_before)]
            for scorer in self.scorers.values():
                scorer.prepare(cases, self.ctx)
        todo: list[Todo] = []
        for name in unit.systems:
            done, outputs = unit.done.get(name, frozenset()), unit.outputs[name]
            if isinstance(outputs, SystemPredictions):
                outputs = outputs.read(self.text_fields)
            todo += [
                (name, case, output)
                for case, output in zip(cases, outputs, strict=True)
                if not done or case.id not in done
            ]
        return todo

    async def _all(self, todo: Sequence[Todo], emit: Emit) -> None:
        import asyncio

        queue = iter(todo)

        async def one_at_a_time() -> None:
            for name, case, output in queue:
                if output is None:
                    output = await self._generate(name, case)
                emit(await ascore_output(name, case, output, self.scorers, self.ctx))

        width = max(1, min(len(todo), self.width))
        await asyncio.gather(*(one_at_a_time() for _ in range(width)))

    async def _generate(self, name: str, case: Case) -> Output:
        """A live system's output, under its configured system's concurrency."""
        system = self.systems[name]
        assert system.callable is not None, "a saved prediction is never generated"
        group = system.group or system.name
        if group not in self._limits:
            self._limits[group] = self.services.limit(group, system.concurrency)
        async with self._limits[group]:
            return await system.callable.generate(case)

    def __call__(self, unit: Unit) -> Batch:
        """Score `unit` in a worker process: its `Batch` (a unit sent here is scored by
        this process's worker of the run, started once)."""
        global _STARTED
        if "ctx" in vars(self):
            worker = self  # inherited, started
        elif _STARTED is not None and _STARTED.key == self.key:
            worker = _STARTED
        else:
            if _STARTED is not None:
                _STARTED.close()
            worker = _STARTED = self.start()
        got: dict[tuple[str, str], Scored] = {}

        def keep(s: Scored) -> None:
            got[s.record["system"], s.record["case_id"]] = s

        try:
            todo = worker.run(unit, keep)
        finally:
            worker.ctx.flush()  # a worker may be ended without notice once idle
        partial = not isinstance(unit.cases, range)  # the driver holds no cases to aggregate
        lines, columns = [], RunColumns()
        for name, case, _ in todo:
            scored = got[name, case.id]
            lines.append(encode_record(scored.record))
            columns.system(name).add(scored.record, scored.scores, keep_views=not partial)
        for name in unit.systems if partial else ():
            cases = [case for system, case, _ in todo if system == name]
            for label, scorer in worker.scorers.items() if cases else ():
                assert isinstance(scorer, ShardableScorer), "a unit reading its cases is shardable"
                scores = [got[name, case.id].scores[label] for case in cases]
                part = scorer.aggregate_partial(cases, scores)
                columns.system(name).scorers[label].partials.append(part)
        calls = worker.calls() if not unit.pure else {}
        where = f"{socket.gethostname()}:{os.getpid()}"
        return Batch(unit.index, b"".join(lines), columns, len(lines), where, calls)


_PLAIN = frozenset(f.name for f in fields(Worker) if f.init)  # what a Worker pickles
_STARTED: Worker | None = None  # this process's worker of its current run (units sent here)


@contextlib.contextmanager
def _interruptible(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Ctrl-C wakes the loop (a SIGINT just before its `epoll_wait` would wait for the next
    timer: a hung callable's timeout): the loop's own handler raises KeyboardInterrupt in
    it, then the default handler is back. Only in the main thread, where SIGINT has
    Python's default handler (a caller's own is left alone)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return

    def interrupt() -> None:
        raise KeyboardInterrupt

    loop.add_signal_handler(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)  # default_int_handler, wakeup fd reset


def _line_at(f: Any, offset: int) -> bytes:
    """The line that starts at `offset` (without its newline)."""
    f.seek(offset)
    return bytes(f.readline(max_line_bytes() + 1)).rstrip(b"\n")
