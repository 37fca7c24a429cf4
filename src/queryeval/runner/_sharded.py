"""Large runs of saved predictions on every core, in memory that does not grow with the
suite: the input files are cut into byte ranges (`runner._ranges`), a pool of workers
checks every line of them (`runner._shard_check`) before anything is written, then
scores them shard by shard (`runner._shard_score`); the driver alone writes results.jsonl.

Used only when the whole run is pure computation on local files: JSONL cases, JSONL
predictions, and scorers marked `ShardableScorer`. The pool is forked local workers
(`PoolExecutor`) or a Ray cluster (`runner._ray.RayExecutor`, any number of cases).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from queryeval.cases import case_files
from queryeval.runner._progress import Progress
from queryeval.runner._ranges import FileRange, split_file
from queryeval.runner._shard_check import CaseStub, CheckRange, check_inputs
from queryeval.runner._shard_score import ScoreShard, ShardResult
from queryeval.scorers import ShardableScorer
from queryeval.stats import RunColumns

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig
    from queryeval.runner._run import Runner

MIN_CASES = 20_000  # below this, forking costs more than it saves
# a shard's bytes of cases: about 5,000 cases of a typical SDMX suite, what one worker holds
_SHARD_BYTES = 4 << 20
_MIN_SHARD_BYTES = 64 << 10
_SHARDS_PER_WORKER = 8  # at least: so the last shards of a run end close together


def workers_for(suite: SuiteConfig) -> int:
    """How many worker processes the suite's settings give (by default one per core this
    process may use)."""
    from queryeval.runner._executors import usable_cores

    return suite.settings.workers or usable_cores()


def can_shard(suite: SuiteConfig, *, any_size: bool = False) -> bool:
    """Whether this run goes to the workers: saved predictions only, shardable scorers
    only, JSONL cases, at least `settings.shard_min_cases` (system, case) pairs, two or
    more workers, and `fork` available. `any_size` (a cluster's executor): whatever the
    number of cases and of local workers."""
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
    if any_size:
        return True
    wanted = suite.settings.shard_min_cases or MIN_CASES
    lines = 0
    for path in files:
        lines += _count_lines(path, wanted)
        if lines * len(suite.systems) >= wanted:
            return True
    return False


def _count_lines(path: Path, enough: int) -> int:
    """Newlines in a file, read in blocks (stopping once there are `enough`)."""
    count = 0
    with path.open("rb") as f:
        while count < enough and (block := f.read(1 << 20)):
            count += block.count(b"\n")
    return count


def _ranges(paths: Sequence[Path], workers: int, shards: int | None = None) -> list[FileRange]:
    """Byte ranges of `paths`: about eight per worker (64 KiB to 4 MiB each), or about
    `shards` of them in all when given."""
    total = sum(p.stat().st_size for p in paths)
    if shards:
        size = max(1, total // shards + 1)
    else:
        size = total // (workers * _SHARDS_PER_WORKER) + 1
        size = max(_MIN_SHARD_BYTES, min(_SHARD_BYTES, size))
    return [r for path in paths for r in split_file(path, size)]


def _check_job(item: tuple[int, tuple[CheckRange, FileRange]]) -> tuple[int, Any]:
    """A check of the first pass, with its index (results come back in any order)."""
    index, (work, r) = item
    return index, work(r)


class ShardExecutor(Protocol):
    """What maps a large run's work over its items (`PoolExecutor`; a cluster's executor):
    `work` and the items are picklable data, `emit` is called in the driver."""

    def run(
        self, items: Sequence[Any], work: Callable[[Any], Any], emit: Callable[[Any], None]
    ) -> None:
        """Map `work` over `items`, `emit` each result."""
        ...


def run_sharded(
    runner: Runner, pool: ShardExecutor, *, workers: int | None = None, shards: int | None = None
) -> tuple[list[CaseStub], RunColumns, int]:
    """Check and score the plan's inputs with `pool` (started: its workers forked before
    the driver holds anything large); returns (the cases' stubs in case order, the summary
    columns of the new records, how many were written). `workers`: how many run at once
    (default: the suite's `settings.workers`); `shards`: about how many shards to make."""
    from queryeval.runner._run import cache_dir, suite_reads
    from queryeval.systems import text_fields_for

    suite = runner.plan.suite
    workers = workers or workers_for(suite)
    case_ranges = _ranges(case_files(suite.cases, suite.base_dir), workers, shards)
    paths = {cfg.name: suite.resolve(cfg.predictions or "") for cfg in suite.systems}
    prediction_ranges = {name: _ranges([path], workers, shards) for name, path in paths.items()}

    def check(
        jobs: Sequence[tuple[CheckRange, FileRange]], arrived: Callable[[int, Any], None]
    ) -> None:
        pool.run(list(enumerate(jobs)), _check_job, lambda result: arrived(*result))

    checked = check_inputs(case_ranges, prediction_ranges, paths, check, runner.done)
    todo = sum(s.todo(len(suite.systems)) for s in checked.shards)
    work = ScoreShard(
        suite,
        cache_dir(suite),
        tuple(prediction_ranges),
        text_fields_for(suite_reads(list(runner.plan.scorers.values()))),
        key=f"{runner.plan.config_hash}:{runner.store.dir}",
    )
    blocks: list[RunColumns | None] = [None] * len(checked.shards)
    written = 0
    store = runner.store
    store.open_for_append()
    try:
        with Progress(todo, suite.name, runner.progress) as bar:

            def emit(result: ShardResult) -> None:
                nonlocal written
                store.write_lines(result.lines)
                blocks[result.index] = result.columns
                written += result.scored
                bar.advance(result.scored)

            pool.run(checked.shards, work, emit)
    finally:
        store.close()
    columns = RunColumns()
    for block in blocks:
        assert block is not None
        columns.extend(block)
    return checked.stubs, columns, written
