"""The unit of work and the one worker that scores it.

A `Unit` is plain, picklable data: which cases (positions in the run's cases, or a range of
a cases file), which systems, and where their outputs come from. A `Worker` builds its
process's state once (scorers, systems, a scoring context from its services) and runs the
one loop over a unit: every (system, case) not yet stored, its output, every scorer's score,
on an event loop only where something is asynchronous. In the driver's process it streams
each `Scored` (`run`); in another it returns the unit's `Batch` (`__call__`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import socket
import threading
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
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


@dataclass(frozen=True, slots=True)
class Unit:
    """`cases` (positions in the worker's cases, or a range of a cases file with
    `lines_before` lines before it) with `systems`; their outputs, where the worker holds
    none, as `outputs` (per system and case; None: a live call) or `offsets` in the
    predictions files. `done`: per system, the ids already stored; `pure`: nothing is
    called (a lost unit may be run again)."""

    index: int
    systems: tuple[str, ...]
    cases: range | FileRange
    lines_before: int = 0
    outputs: Mapping[str, Sequence[Output | None]] | None = None
    offsets: Mapping[str, SystemPredictions] | None = None
    done: Mapping[str, frozenset[str]] = field(default_factory=dict)
    pure: bool = True
    count: int = 0  # cases in the unit

    def todo(self) -> int:
        """(system, case) pairs left to score."""
        return self.count * len(self.systems) - sum(len(ids) for ids in self.done.values())


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

    def limit(self, group: str, n: int) -> AbstractAsyncContextManager[Any] | None:
        """What a live call of `group` holds while it runs (its `concurrency` of `n`)."""
        ...


@dataclass(frozen=True)
class LocalServices:
    """Services built in each process on first use; a system's concurrency a semaphore."""

    def context(self, suite: SuiteConfig, cache_dir: Path) -> ScoringContext:
        """A plain scoring context."""
        return ScoringContext(suite, cache_dir=cache_dir)

    def limit(self, group: str, n: int) -> AbstractAsyncContextManager[Any] | None:
        """A semaphore of `n` (made in the running loop, so one per state)."""
        import asyncio  # lazily: a run of saved predictions runs no event loop

        return asyncio.Semaphore(n)


@dataclass
class _State:
    """A process's scorers, systems, context and event loop for one run."""

    key: str
    cases: list[Case]
    scorers: dict[str, Scorer]
    systems: dict[str, SystemRun]
    ctx: ScoringContext
    asynchronous: bool  # a scorer awaits or blocks: scored on the event loop
    loop: asyncio.AbstractEventLoop | None = None
    limits: dict[str, Any] = field(default_factory=dict)

    def event_loop(self) -> asyncio.AbstractEventLoop:
        if self.loop is None:
            import asyncio

            self.loop = asyncio.new_event_loop()
        return self.loop

    def close(self, close_context: bool = True) -> None:
        """Close async clients inside their loop, then (`close_context`) every service."""
        loop, self.loop = self.loop, None
        try:
            if loop is not None:
                loop.run_until_complete(self.ctx.aclose())
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
                loop.close()
        finally:
            if close_context:
                self.ctx.close()


_STATE: _State | None = None  # this process's state (a cluster's worker serves one run)


@dataclass
class Worker:
    """What every executor runs over the units: plain, picklable data; its state built in
    each process on first use, or adopted from the driver's plan (and inherited by forks)."""

    key: str
    suite: SuiteConfig
    cache_dir: Path
    text_fields: TextFields
    services: Services = field(default_factory=LocalServices)
    cases: Any = None  # the run's cases (a list, or a Ray ObjectRef); None: units read theirs
    stored: Mapping[tuple[str, str], Output] = field(default_factory=dict)
    use_cache: bool = True
    width: int = 1  # items scored at once on the event loop
    _state: _State | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_state": None}

    def start(
        self,
        scorers: Mapping[str, Scorer] | None = None,
        systems: Sequence[SystemRun] | None = None,
        prepared: bool = False,
    ) -> _State:
        """This process's state, built once: the given scorers and systems (the driver's)
        or the suite's; live systems attached, scorers prepared unless `prepared`."""
        global _STATE
        if self._state is not None:
            return self._state
        if _STATE is not None and _STATE.key == self.key:
            self._state = _STATE
            return _STATE
        from queryeval.scorers import build_scorers
        from queryeval.systems import attach_systems

        adopted = scorers is not None and systems is not None
        if not adopted:
            import_plugins(self.suite)  # a forked worker has them; a cluster's imports them
        cases = self._cases()
        ctx = self.services.context(self.suite, self.cache_dir)
        scorers = dict(scorers) if scorers is not None else build_scorers(self.suite)
        if systems is None:
            systems = system_runs(self.suite, cases, self.text_fields, predictions=False)
        live = [s.callable for s in systems if s.callable is not None]
        attach_systems(live, ctx, use_cache=self.use_cache)
        if cases and not prepared:
            for scorer in scorers.values():
                scorer.prepare(cases, ctx)
        asynchronous = any(s.is_async or s.blocking for s in scorers.values())
        state = _State(self.key, cases, scorers, {s.name: s for s in systems}, ctx, asynchronous)
        if adopted:
            self._state = state  # the driver's own: not this process's cache
        else:
            if _STATE is not None:
                _STATE.close()
            self._state = _STATE = state
        return state

    def _cases(self) -> list[Case]:
        if self.cases is None or isinstance(self.cases, list):
            return self.cases or []
        import ray

        cases: list[Case] = ray.get(self.cases)
        return cases

    def close(self, close_context: bool = True) -> None:
        """Close the state's services (`close_context=False`: only its event loop and
        async clients, the context being the caller's)."""
        state, self._state = self._state, None
        if state is not None:
            state.close(close_context)

    def calls(self) -> dict[str, dict[str, Any]]:
        """Model and endpoint systems' calls, cache hits, tokens and cost in this process."""
        state = self.start()
        return {
            name: getattr(system.callable, "run_stats")()  # noqa: B009 - model/endpoint only
            for name, system in state.systems.items()
            if hasattr(system.callable, "run_stats")
        }

    def run(self, unit: Unit, emit: Callable[[Scored], None]) -> list[Todo]:
        """Score every (system, case) of `unit` not yet stored and `emit` each (as they
        finish where something is asynchronous); returns what was scored, in order."""
        state = self.start()
        cases = self._unit_cases(state, unit)
        todo: list[Todo] = []
        for name in unit.systems:
            done = unit.done.get(name, frozenset())
            outputs = self._outputs(state, unit, name, cases)
            todo += [
                (name, case, output)
                for case, output in zip(cases, outputs, strict=True)
                if not done or case.id not in done
            ]
        if _streamed(state, todo):
            loop = state.event_loop()
            with _interruptible(loop):
                loop.run_until_complete(self._all(state, todo, emit))
            return todo
        scorers, ctx = state.scorers, state.ctx
        with bulk_allocation():
            for name, case, output in todo:
                assert output is not None
                emit(score_output(name, case, output, scorers, ctx))
        return todo

    async def _all(self, state: _State, todo: Sequence[Todo], emit: Emit) -> None:
        import asyncio

        queue = iter(todo)

        async def one_at_a_time() -> None:
            for name, case, output in queue:
                if output is None:
                    output = await self._generate(state, name, case)
                emit(await ascore_output(name, case, output, state.scorers, state.ctx))

        width = max(1, min(len(todo), self.width))
        await asyncio.gather(*(one_at_a_time() for _ in range(width)))

    async def _generate(self, state: _State, name: str, case: Case) -> Output:
        """A live system's output, under its configured system's concurrency."""
        system = state.systems[name]
        assert system.callable is not None, "a saved prediction is never generated"
        group = system.group or system.name
        if group not in state.limits:
            state.limits[group] = self.services.limit(group, system.concurrency)
        async with state.limits[group] or contextlib.nullcontext():
            return await system.callable.generate(case)

    def _unit_cases(self, state: _State, unit: Unit) -> list[Case]:
        """The unit's cases (a range of a file read, the scorers prepared on them)."""
        if isinstance(unit.cases, range):
            return state.cases[unit.cases.start : unit.cases.stop]
        r = unit.cases
        cases = [case for _, case in parse_cases(r.lines()[1], r.path, unit.lines_before)]
        for scorer in state.scorers.values():
            scorer.prepare(cases, state.ctx)
        return cases

    def _outputs(
        self, state: _State, unit: Unit, system: str, cases: Sequence[Case]
    ) -> Sequence[Output | None]:
        """The one output lookup: sent with the unit, read at its offsets, stored by an
        earlier run, saved; None: a live system's call."""
        if unit.outputs is not None and system in unit.outputs:
            return unit.outputs[system]
        if unit.offsets is not None:
            return read_outputs(unit.offsets[system], len(cases), self.text_fields)
        return outputs_of(state.systems[system], cases, self.stored)

    def __call__(self, unit: Unit) -> Batch:
        """Score `unit` in a worker process: its `Batch`."""
        got: dict[tuple[str, str], Scored] = {}

        def keep(s: Scored) -> None:
            got[s.record["system"], s.record["case_id"]] = s

        state = self.start()
        try:
            todo = self.run(unit, keep)
        finally:
            state.ctx.flush()  # a worker may be ended without notice once idle
        partial = not isinstance(unit.cases, range)  # the driver holds no cases to aggregate
        lines, columns = [], RunColumns()
        for name, case, _ in todo:
            scored = got[name, case.id]
            lines.append(encode_record(scored.record))
            columns.system(name).add(scored.record, scored.scores, keep_views=not partial)
        for name in unit.systems if partial else ():
            cases = [case for system, case, _ in todo if system == name]
            for label, scorer in state.scorers.items() if cases else ():
                assert isinstance(scorer, ShardableScorer), "a unit reading its cases is shardable"
                scores = [got[name, case.id].scores[label] for case in cases]
                part = scorer.aggregate_partial(cases, scores)
                columns.system(name).scorers[label].partials.append(part)
        calls = self.calls() if not unit.pure else {}
        where = f"{socket.gethostname()}:{os.getpid()}"
        return Batch(unit.index, b"".join(lines), columns, len(lines), where, calls)


def done_ids(
    names: Sequence[str], cases: Sequence[Any], done: set[tuple[str, str]]
) -> dict[str, frozenset[str]]:
    """Per system of `names` with any, the ids of `cases` in `done` (a `Unit.done`)."""
    if not done:
        return {}
    out = {name: frozenset(c.id for c in cases if (name, c.id) in done) for name in names}
    return {name: ids for name, ids in out.items() if ids}


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


def _streamed(state: _State, todo: Sequence[Todo]) -> bool:
    """Whether the items are scored on the event loop (and finish in any order)."""
    return state.asynchronous or any(output is None for _, _, output in todo)


def outputs_of(
    system: SystemRun, cases: Sequence[Case], stored: Mapping[tuple[str, str], Output]
) -> list[Output | None]:
    """Each case's output stored by an earlier run, else saved, else None (a live call)."""
    name, predictions = system.name, system.predictions
    out: list[Output | None] = []
    for case in cases:
        output = stored.get((name, case.id)) if stored else None
        if output is None and predictions is not None:
            output = predictions.get(case.id)
        out.append(output)
    return out


_MISSING = "no prediction for this case"


def read_outputs(where: SystemPredictions, n: int, text_fields: TextFields) -> list[Output]:
    """The outputs of a unit's `n` cases, read at their records' offsets (checked)."""
    outputs: list[Output] = []
    with where.path.open("rb") as f:
        for i, raw in enumerate(_records(where, n)):
            if raw is None:
                outputs.append(Output(error=_MISSING, failure="missing"))
                continue
            first = read_prediction_line(raw, where.path, where.lines[i], text_fields)
            more = where.more.get(i)  # its other attempts
            if more is None:
                outputs.append(first.output)
                continue
            read = [(n, _line_at(f, at)) for at, n in more[1:]]
            lines = [(n, read_prediction_line(r, where.path, n, text_fields)) for n, r in read]
            outputs.append(join_outputs([(where.lines[i], first), *lines]))
    return outputs


def _records(where: SystemPredictions, n: int) -> list[bytes | None]:
    """Each case's (first) record: one read of the span when they follow in case order,
    else one seek each."""
    offsets = where.offsets
    present = [o for o in offsets if o >= 0]
    with where.path.open("rb") as f:
        if not present or not all(a < b for a, b in itertools.pairwise(present)):
            return [None if o < 0 else _line_at(f, o) for o in offsets]
        first, last = present[0], present[-1]
        f.seek(first)
        span = f.read(last - first) + _line_at(f, last) + b"\n"
        return [None if o < 0 else span[o - first : span.index(b"\n", o - first)] for o in offsets]


def _line_at(f: Any, offset: int) -> bytes:
    """The line that starts at `offset` (without its newline)."""
    f.seek(offset)
    return bytes(f.readline(max_line_bytes() + 1)).rstrip(b"\n")
