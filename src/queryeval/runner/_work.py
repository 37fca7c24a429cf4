"""The unit of work and the one worker that scores it.

A `Unit` is plain, picklable data: which cases (positions in the run's cases, or a byte
range of a cases file that the worker reads itself), which systems, and where their outputs
come from (sent with the unit, found by offset in the predictions files, stored by an
earlier run, saved predictions, or asked of a live system). A `Worker` builds its process's
state once (scorers, systems, and a scoring context from its services provider) and runs
the one loop over a unit: each (system, case) not yet stored, its output, every scorer's
score of it, synchronously unless a system or a scorer is asynchronous. In the driver's
process the worker streams each `Scored` to the driver (`run`); in another process it
returns the unit's records encoded and its summary columns (`__call__`, a `Batch`).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from queryeval._gc import bulk_allocation
from queryeval._inputs import max_line_bytes
from queryeval.cases import Case, Output, Score, parse_case_line
from queryeval.log import encode_record
from queryeval.runner._pipeline import Scored, ascore_output, score_output
from queryeval.runner._plan import import_plugins, system_runs
from queryeval.runner._ranges import FileRange, numbered, range_lines
from queryeval.scorers import Scorer, ScoringContext, ShardableScorer
from queryeval.stats import RunColumns
from queryeval.systems import PredictionLine, join_outputs, read_prediction_line

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from queryeval.config import SuiteConfig
    from queryeval.runner._plan import SystemRun
    from queryeval.systems import TextFields


@dataclass
class SystemPredictions:
    """Where each case's records are in a system's predictions file: for case i, the
    offset of its record (-1: none) and its line; cases with several records (attempts)
    list them all, as (offset, line), in `more`."""

    path: Path
    offsets: array[int]
    lines: array[int]
    more: dict[int, list[tuple[int, int]]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Unit:
    """A shard of a run: `cases` (positions in the worker's cases, or a range of a cases
    file with `lines_before` lines of its file before it), `systems`, and where outputs come
    from when the worker does not hold them: `outputs` (per system, one per case: saved or
    stored, None for a live call), `offsets` (per system, where each case's records are in
    its predictions file). `done`: per system, the case ids already stored; `pure`: no
    system or judge is called (a lost unit may be run again)."""

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
    """A unit scored in another process: its records as JSON lines (in the loop's order),
    its rows of the summary's columns (with each shardable scorer's partial aggregate where
    the worker read the cases itself), and the live systems' call counters so far."""

    index: int
    lines: bytes
    columns: RunColumns
    scored: int
    worker: str = ""
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)


Emit = Callable[[Any], None]  # a `Scored` (streamed in the driver) or a `Batch`
Todo = tuple[str, Case, "Output | None"]  # a system, a case, its output (None: a live call)


class Services(Protocol):
    """Where a worker's engines, judge, embedder and live systems' limits come from: this
    process (`LocalServices`) or the run's Ray actors (`runner._ray_actors.RayServices`)."""

    def context(self, suite: SuiteConfig, cache_dir: Path) -> ScoringContext:
        """The scoring context whose services these are."""
        ...

    def limit(self, group: str, n: int) -> AbstractAsyncContextManager[Any] | None:
        """What a live call of `group` holds while it runs (its `concurrency` of `n`)."""
        ...


@dataclass(frozen=True)
class LocalServices:
    """Services built in each process on first use (`ScoringContext`); each configured
    system's concurrency is a semaphore of the process's event loop."""

    def context(self, suite: SuiteConfig, cache_dir: Path) -> ScoringContext:
        """A plain scoring context."""
        return ScoringContext(suite, cache_dir=cache_dir)

    def limit(self, group: str, n: int) -> AbstractAsyncContextManager[Any] | None:
        """A semaphore of `n` (made in the running loop, so one per state)."""
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
            self.loop = asyncio.new_event_loop()
        return self.loop

    def close(self, close_context: bool = True) -> None:
        """Close async clients inside their loop, then every service (the context's
        services only when `close_context`: a caller's context stays theirs)."""
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
    """What every executor runs over the units (see the module docstring). Plain data,
    picklable; its state is built in each process on first use (`start`), or adopted from
    the driver's plan (`start(scorers, systems)`) and inherited by forked workers."""

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

    # --- the state -----------------------------------------------------------------

    def start(
        self,
        scorers: Mapping[str, Scorer] | None = None,
        systems: Sequence[SystemRun] | None = None,
        prepared: bool = False,
    ) -> _State:
        """Build this process's state (once): the given scorers and systems (the driver's
        plan), or the suite's, built here (a cluster's worker, which is sent the outputs
        of saved predictions); live systems attached, scorers prepared on the cases
        (unless the caller has: `prepared`)."""
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
        by_name = {s.name: s for s in systems}
        state = _State(self.key, cases, scorers, by_name, ctx, asynchronous)
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
        """Close the state's services (the driver's, after the run); with
        `close_context=False` only the worker's event loop and its async clients (the
        context was the caller's: `selftest`)."""
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

    # --- the one loop ---------------------------------------------------------------

    def run(self, unit: Unit, emit: Callable[[Scored], None]) -> list[Todo]:
        """Score every (system, case) of `unit` not yet stored, `emit` each: in order, or
        as they finish where something is asynchronous (a live system, a judge); returns
        what was scored, in order."""
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
            state.event_loop().run_until_complete(self._all(state, todo, emit))
            return todo
        scorers, ctx = state.scorers, state.ctx
        with bulk_allocation():
            for name, case, output in todo:
                assert output is not None
                emit(score_output(name, case, output, scorers, ctx))
        return todo

    async def _all(
        self,
        state: _State,
        todo: Sequence[Todo],
        emit: Callable[[Scored], None],
    ) -> None:
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
        limit = state.limits[group]
        if limit is None:
            return await system.callable.generate(case)
        async with limit:
            return await system.callable.generate(case)

    def _unit_cases(self, state: _State, unit: Unit) -> list[Case]:
        """The unit's cases: positions in the run's, or its range of a cases file, read and
        the scorers prepared on them."""
        if isinstance(unit.cases, range):
            return state.cases[unit.cases.start : unit.cases.stop]
        r = unit.cases
        cases = [
            parse_case_line(raw, r.path, unit.lines_before + number)
            for number, raw in numbered(range_lines(r.read(), r))
        ]
        for scorer in state.scorers.values():
            scorer.prepare(cases, state.ctx)
        return cases

    def _outputs(
        self, state: _State, unit: Unit, system: str, cases: Sequence[Case]
    ) -> Sequence[Output | None]:
        """The one output lookup: sent with the unit, read at the unit's offsets, stored by
        an earlier run (`--retry-errors`), saved predictions; None: a live system's call."""
        if unit.outputs is not None and system in unit.outputs:
            return unit.outputs[system]
        if unit.offsets is not None:
            return read_outputs(unit.offsets[system], len(cases), self.text_fields)
        return outputs_of(state.systems[system], cases, self.stored)

    # --- in another process -------------------------------------------------------------

    def __call__(self, unit: Unit) -> Batch:
        """Score `unit` (in a worker process): its records encoded, in the loop's order,
        and its summary columns."""
        got: list[Scored] = []
        state = self.start()
        try:
            todo = self.run(unit, got.append)
        finally:
            state.ctx.flush()  # a worker may be ended without notice once idle
        if _streamed(state, todo):  # as they came
            at = {(name, case.id): i for i, (name, case, _) in enumerate(todo)}
            got.sort(key=lambda s: at[_key(s)])
        partial = not isinstance(unit.cases, range)  # the driver holds no cases to aggregate
        lines: list[bytes] = []
        columns = RunColumns()
        kept: dict[str, tuple[list[Case], dict[str, list[Score]]]] = {}
        for (name, case, _), scored in zip(todo, got, strict=True):
            lines.append(encode_record(scored.record))
            columns.system(name).add(scored.record, scored.scores, keep_views=not partial)
            if partial:
                cases, scores = kept.setdefault(name, ([], {}))
                cases.append(case)
                for label, score in scored.scores.items():
                    scores.setdefault(label, []).append(score)
        for name, (cases, scores) in kept.items():
            table = columns.system(name).scorers
            for label, scorer in state.scorers.items():
                assert isinstance(scorer, ShardableScorer), "a unit reading its cases is shardable"
                table[label].partials.append(scorer.aggregate_partial(cases, scores[label]))
        calls = self.calls() if not unit.pure else {}
        where = f"{socket.gethostname()}:{os.getpid()}"
        return Batch(unit.index, b"".join(lines), columns, len(lines), where, calls)


def done_ids(
    names: Sequence[str], cases: Sequence[Any], done: set[tuple[str, str]]
) -> dict[str, frozenset[str]]:
    """Per system of `names`, the ids of `cases` (anything with an id) already stored
    (`done`: (system, case id)); systems with none left out (a `Unit.done`)."""
    if not done:
        return {}
    out = {name: frozenset(c.id for c in cases if (name, c.id) in done) for name in names}
    return {name: ids for name, ids in out.items() if ids}


def _streamed(state: _State, todo: Sequence[Todo]) -> bool:
    """Whether the items are scored on the event loop (and finish in any order)."""
    return state.asynchronous or any(output is None for _, _, output in todo)


def _key(scored: Scored) -> tuple[str, str]:
    return scored.record["system"], scored.record["case_id"]


def outputs_of(
    system: SystemRun, cases: Sequence[Case], stored: Mapping[tuple[str, str], Output]
) -> list[Output | None]:
    """Each case's output held here: stored by an earlier run, else the saved prediction,
    else None (a live system's call)."""
    name, predictions = system.name, system.predictions
    out: list[Output | None] = []
    for case in cases:
        output = stored.get((name, case.id)) if stored else None
        if output is None and predictions is not None:
            output = predictions.get(case.id)
        out.append(output)
    return out


# --- a unit's saved outputs, read at the offsets the input check found --------------------

_MISSING = "no prediction for this case"


def read_outputs(where: SystemPredictions, n: int, text_fields: TextFields) -> list[Output]:
    """The outputs of a shard's `n` cases, in case order, from their records' offsets
    (checked by the first pass: every record there is a well-formed line of a known case)."""
    path = where.path
    raws = _records(where, n)
    outputs: list[Output] = []
    for i in range(n):
        raw = raws[i]
        if raw is None:
            outputs.append(Output(error=_MISSING, failure="missing"))
            continue
        line = read_prediction_line(raw, path, where.lines[i], text_fields)
        more = where.more.get(i)
        if more is None:
            outputs.append(line.output)
            continue
        joined: list[tuple[int, PredictionLine]] = [(where.lines[i], line)]
        with path.open("rb") as f:
            for offset, number in more[1:]:
                joined.append((number, read_prediction_line(_line_at(f, offset), path, number)))
        outputs.append(join_outputs(joined))
    return outputs


def _records(where: SystemPredictions, n: int) -> list[bytes | None]:
    """Each case's (first) record line: one read of the span when the records follow the
    cases in order (a file written by a run over the cases), else one seek per record."""
    offsets = where.offsets
    present = [o for o in offsets if o >= 0]
    if not present:
        return [None] * n
    with where.path.open("rb") as f:
        if all(a < b for a, b in itertools.pairwise(present)):
            first = present[0]
            end = present[-1] + len(_line_at(f, present[-1])) + 1
            f.seek(first)
            span = f.read(end - first)
            out: list[bytes | None] = []
            for o in offsets:
                if o < 0:
                    out.append(None)
                    continue
                at = o - first
                stop = span.find(b"\n", at)
                out.append(span[at : stop if stop >= 0 else len(span)])
            return out
        return [None if o < 0 else _line_at(f, o) for o in offsets]


def _line_at(f: Any, offset: int) -> bytes:
    """The line that starts at `offset` (without its newline)."""
    f.seek(offset)
    return bytes(f.readline(max_line_bytes() + 1)).rstrip(b"\n")
