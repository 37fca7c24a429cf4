"""How a run is carried out: its executor, its worker, and its work cut into units.

- Saved predictions in local JSONL files, shardable scorers, many pairs (`can_shard`), or
  any size on Ray: the inputs are cut into byte ranges, checked by the executor's workers
  (`runner._shard_check`) before anything is written, each range of cases with every
  system a unit that reads its own cases; the driver holds only the cases' stubs.
- Saved predictions scored by queries on local database files (`fork_workers`): forked
  workers, each unit a span of one system's cases.
- A Ray run of loaded cases: units of `settings.ray.batch_size` cases of one system.
- Anything else: one unit in the driver's process.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.cases import case_files
from queryeval.runner._executors import LocalExecutor, usable_cores
from queryeval.runner._plan import RunPlan, suite_reads
from queryeval.runner._ranges import FileRange, split_file
from queryeval.runner._shard_check import CaseStub, check_inputs
from queryeval.runner._work import Part, Unit, Worker, cut_units
from queryeval.scorers import ShardableScorer
from queryeval.systems import text_fields_for

if TYPE_CHECKING:
    from queryeval.cases import Case, Output
    from queryeval.config import SuiteConfig
    from queryeval.runner._plan import SystemRun
    from queryeval.runner._ray import RayExecutor
    from queryeval.scorers import Scorer

    Executor = LocalExecutor | RayExecutor  # the same `run(units, worker, emit)` and `map`

MIN_CASES = 20_000  # below this, a sharded run's forking costs more than it saves
# below this, forked workers opening the engines again cost more CPU than they save wall
# time (bench_sql_scoring.py --workers-ab, 2 cores, load 11-31: two workers against one at
# 300 cases 0.92x wall, 1.13x CPU; 1,000: 0.58x, 0.98x; 3,000: 0.73x, 0.90x)
FORK_MIN_ITEMS = 500
_ITEMS_PER_WORKER = 100  # at least, so that a worker's start is a small part of its work
_SHARD_BYTES = 4 << 20  # of cases: about 5,000 SDMX cases, what one worker holds
_MIN_SHARD_BYTES = 64 << 10
_SHARDS_PER_WORKER = 8  # at least, and spans: so the last units of a run end close together
_SPANS_PER_WORKER = 48
_MIN_SPAN, _MAX_SPAN = 4, 256


@dataclass
class Schedule:
    """A run's executor (entered), worker (its state built in the driver), units, and the
    cases' stubs where the units read their own cases."""

    executor: Executor
    worker: Worker
    units: list[Unit]
    stubs: list[CaseStub] | None = None


@contextlib.contextmanager
def schedule(
    plan: RunPlan,
    *,
    done: set[tuple[str, str]],
    stored: dict[tuple[str, str], Output],
    use_cache: bool,
    key: str,
) -> Iterator[Schedule]:
    """The plan's schedule (see the module docstring), closed after the block. `done`:
    stored (system, case id); `stored`: outputs scored again (`run --retry-errors`)."""
    from queryeval.runner._run import cache_dir

    suite, settings = plan.suite, plan.suite.settings
    scorers = list(plan.scorers.values())
    fields = text_fields_for(suite_reads(scorers))
    cases = None if plan.lazy else plan.cases
    worker = Worker(key, suite, cache_dir(suite), fields, cases=cases, use_cache=use_cache)
    worker.width = _width(plan)
    todo = len(plan.systems) * len(plan.cases) - len(done)
    with contextlib.ExitStack() as stack:
        stack.callback(worker.close)
        remote = settings.executor == "ray"
        if remote:
            from queryeval.runner._ray import RayExecutor

            ray = stack.enter_context(RayExecutor(settings.ray))
            executor: Any = ray
            if not plan.lazy:
                live = {s.group or s.name: s.concurrency for s in plan.systems if s.callable}
                worker.services = ray.provider(suite, worker.cache_dir, live)
                worker.width = max(worker.width, settings.ray.batch_size)
        else:
            n = workers_for(suite) if plan.lazy else fork_workers(suite, scorers, todo)
            executor = stack.enter_context(LocalExecutor(n or 1))
        worker.start(plan.scorers, plan.systems)  # the driver's state (scorers prepared)
        if plan.lazy:
            yield Schedule(executor, worker, *_shards(plan, executor, done))
            return
        workers = executor.workers
        if remote:
            worker.cases = ray.share(plan.cases)
            size = settings.ray.batch_size
        elif workers == 1:
            size = 0  # one unit of every system
        else:
            per_system = -(-todo // (workers * _SPANS_PER_WORKER * len(plan.systems)))
            size = max(_MIN_SPAN, min(_MAX_SPAN, per_system))
        calls = {s.name for s in plan.systems if s.callable or plan.suite.judge is not None}
        yield Schedule(executor, worker, cut_units(_spans(plan, size, stored), done, calls))


def _spans(plan: RunPlan, size: int, stored: Mapping[tuple[str, str], Output]) -> Iterator[Part]:
    """Spans of `size` cases of one system (0: one of every system), with their outputs."""
    cases, n = plan.cases, len(plan.cases)
    if not size:
        outputs = {s.name: outputs_of(s, cases, stored) for s in plan.systems}
        yield tuple(outputs), range(n), cases, outputs, 0
        return
    for system in plan.systems:
        for start in range(0, n, size):
            span = cases[start : start + size]
            outputs = {system.name: outputs_of(system, span, stored)}
            yield (system.name,), range(start, start + len(span)), span, outputs, 0


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


def _width(plan: RunPlan) -> int:
    """Items scored at once on the event loop: the systems' concurrency added up, or the
    judge's when it asks for more."""
    wanted = sum(s.concurrency for s in plan.systems)
    judge = (plan.suite.judge or {}).get("concurrency")
    return max(1, min(max(wanted, int(judge or 0)), 256))


def workers_for(suite: SuiteConfig) -> int:
    """The suite's worker processes (by default one per usable core)."""
    return suite.settings.workers or usable_cores()


def can_shard(suite: SuiteConfig, *, any_size: bool = False) -> bool:
    """Whether this run's units read their own cases: saved predictions, shardable scorers,
    JSONL cases, at least `settings.shard_min_cases` (system, case) pairs and two workers
    with `fork` (`any_size`, a cluster's executor: whatever the sizes)."""
    from queryeval.scorers import scorer_class

    if not any_size and (workers_for(suite) < 2 or not hasattr(os, "fork")):
        return False
    if not all(cfg.predictions for cfg in suite.systems):
        return False
    if not all(issubclass(scorer_class(s.name), ShardableScorer) for s in suite.scorers):
        return False
    files = case_files(suite.cases, suite.base_dir)
    if not files or any(p.suffix.lower() not in (".jsonl", ".ndjson") for p in files):
        return False
    wanted = 0 if any_size else suite.settings.shard_min_cases or MIN_CASES
    lines = 0
    for path in files:
        with path.open("rb") as f:  # newlines, in blocks, until there are enough
            while lines * len(suite.systems) < wanted and (block := f.read(1 << 20)):
                lines += block.count(b"\n")
    return lines * len(suite.systems) >= wanted


def _shards(
    plan: RunPlan, executor: Executor, done: set[tuple[str, str]]
) -> tuple[list[Unit], list[CaseStub]]:
    """The input files cut into byte ranges (about eight a worker, 64 KiB to 4 MiB each, or
    `settings.ray.shards` on Ray), checked by the executor's workers and cut into units
    (ranges of cases, every system); the cases' stubs in case order."""
    suite = plan.suite
    shards = suite.settings.ray.shards if suite.settings.executor == "ray" else None
    cut = shards or executor.workers * _SHARDS_PER_WORKER

    def ranges(paths: Sequence[Path]) -> list[FileRange]:
        size = sum(p.stat().st_size for p in paths) // cut + 1
        size = size if shards else max(_MIN_SHARD_BYTES, min(_SHARD_BYTES, size))
        return [r for path in paths for r in split_file(path, size)]

    paths = {cfg.name: suite.resolve(cfg.predictions or "") for cfg in suite.systems}
    return check_inputs(
        ranges(case_files(suite.cases, suite.base_dir)),
        {name: ranges([path]) for name, path in paths.items()},
        paths,
        executor.map,
        done,
    )


def fork_workers(suite: SuiteConfig, scorers: Iterable[Scorer], items: int) -> int:
    """How many forked workers score this run of `items` saved predictions (0: the driver
    does): where every prediction runs on a database file of this machine (DuckDB, SQLite,
    duckdb-kql) in scorers marked `Scorer.forks`, with no live system, within the memory
    at each query's bound; `settings.workers` at any size, else one per core from
    `FORK_MIN_ITEMS` items.

    >>> from queryeval.config import SuiteConfig
    >>> suite = SuiteConfig(name="s", cases="c.jsonl", systems=[{"name": "a", "predictions": "p"}])
    >>> fork_workers(suite, [], 10_000)  # no database: no query to run
    0
    """
    chosen = suite.settings.workers  # asked for: honoured at any size
    if not hasattr(os, "fork") or (chosen is None and items < FORK_MIN_ITEMS):
        return 0
    workers = min(chosen or min(usable_cores(), items // _ITEMS_PER_WORKER), items)
    if workers < 2 or not suite.databases or not all(c.predictions for c in suite.systems):
        return 0
    if not all(_local_file(db.engine) and not db.url for db in suite.databases.values()):
        return 0
    scorers = list(scorers)
    if not all(s.forks and not (s.is_async or s.blocking) for s in scorers):
        return 0
    if not any(s.reads == "query" and s.judged_by_execution for s in scorers):
        return 0
    workers = min(workers, _memory_room(suite))
    return workers if workers >= 2 else 0


def _local_file(kind: str) -> bool:
    """Whether an engine kind's database is a file this process opens (`EngineKind.file`)."""
    from queryeval.engines import engine_kind_entry

    try:
        return engine_kind_entry(kind).file is not None
    except KeyError:
        return False


def _memory_room(suite: SuiteConfig) -> int:
    """How many workers the memory holds if each ran its hungriest query at once: physical
    memory over the largest process budget (2 x `memory_limit`) of the suite's databases."""
    from queryeval.engines import Limits

    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        return 1 << 30
    budget = max(Limits.from_options(db.options).process_budget for db in suite.databases.values())
    return max(1, memory // max(1, budget))
