"""The plan of a run: everything resolved and checked before anything runs."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queryeval._gc import bulk_allocation
from queryeval.cases import Case, case_files, load_cases
from queryeval.config import SuiteConfig
from queryeval.errors import InputError
from queryeval.log import SelectionInfo
from queryeval.runner._select import CaseSelection
from queryeval.scorers import Scorer, build_scorers
from queryeval.systems import (
    CallableSystem,
    LiveSystem,
    PredictionsFile,
    TextFields,
    build_system,
    check_systems,
    import_callable,
    text_fields_for,
)


@dataclass
class SystemRun:
    """One system configuration to run: saved predictions, or a live system (a callable with
    params, a model, an endpoint) whose `generate(case)` gives each output."""

    name: str
    params: dict[str, Any]
    predictions: PredictionsFile | None = None
    callable: LiveSystem | None = None
    concurrency: int = 4
    group: str = ""  # the configured system a grid point belongs to (shares its concurrency)


@dataclass
class RunPlan:
    """Everything resolved before anything runs: cases, scorers, systems, hashes."""

    suite: SuiteConfig
    cases: list[Case]
    scorers: dict[str, Scorer]
    systems: list[SystemRun]
    config_hash: str
    inputs_hash: str
    input_files: list[str] = field(default_factory=list)
    lazy: bool = False  # cases and predictions are loaded by the sharded workers
    selection: SelectionInfo | None = None  # the subset run (--filter, --limit), if any


def cache_dir(suite: SuiteConfig) -> Path:
    """The folder of the suite's caches (gold results, fixture databases, judge replies).

    >>> suite = {"name": "s", "cases": "c.jsonl", "systems": [{"name": "a", "predictions": "p"}]}
    >>> cache_dir(SuiteConfig.model_validate(suite)).name
    '.queryeval-cache'
    """
    configured = suite.settings.cache_dir
    return suite.resolve(str(configured)) if configured else Path.cwd() / ".queryeval-cache"


def _hash_files(paths: Sequence[Path]) -> str:
    """One digest of the input files (names and contents), read in blocks."""
    h = hashlib.sha256()
    for p in paths:
        h.update(str(p.name).encode())
        with p.open("rb") as f:
            h.update(hashlib.file_digest(f, "sha256").digest())
    return h.hexdigest()


def suite_reads(scorers: Sequence[Scorer]) -> set[str]:
    """What the scorers read of an output (a composite: what its components read)."""
    reads: set[str] = set()
    for scorer in scorers:
        reads.add(scorer.reads)
        reads |= suite_reads(getattr(scorer, "components", []))
    return reads


# where the run is executed shapes no score: a run may be resumed on another executor
_NOT_HASHED: Any = {"base_dir": True, "source": True, "settings": {"executor": True, "ray": True}}


def plan_run(
    suite: SuiteConfig,
    *,
    lazy: bool = False,
    baseline: bool = False,
    selection: CaseSelection | None = None,
) -> RunPlan:
    """Load and check everything a run needs (`runner._check`): InputError on any bad
    input, before anything runs. `lazy`: cases and predictions are left for the sharded
    workers; `baseline`: one is given on the command line; `selection`: a subset is run
    (every case and prediction is still loaded and checked)."""
    from queryeval.runner._check import check_suite

    places: dict[str, tuple[Path, int | None]] = {}
    with bulk_allocation():
        cases = [] if lazy else load_cases(suite.cases, suite.base_dir, places)
    if not cases and not lazy:
        raise InputError("no cases matched", path=suite.source, where="cases")
    if not (scorers := build_scorers(suite)):
        raise InputError("no scorers configured (add 'scorers:' or a 'preset:')", path=suite.source)
    check_suite(suite, scorers, cases, places, baseline=baseline)
    check_systems(suite)
    text_fields = text_fields_for(suite_reads(list(scorers.values())))
    files = list(case_files(suite.cases, suite.base_dir))
    files += [suite.resolve(cfg.predictions) for cfg in suite.systems if cfg.predictions]
    systems = system_runs(suite, cases, text_fields, lazy=lazy)
    subset = selection if selection is not None and not selection.everything else None
    if subset is not None:
        if lazy:
            raise InputError("a subset of cases (--filter, --limit) is run unsharded")
        cases = subset.apply(cases)
    config_hash = hashlib.sha256(suite.model_dump_json(exclude=_NOT_HASHED).encode())
    inputs_hash, selected = _hash_files(files), subset.describe() if subset else None
    return RunPlan(suite, cases, scorers, systems, config_hash.hexdigest(), inputs_hash,
                   [str(p) for p in files], lazy, selected)  # fmt: skip


def system_runs(
    suite: SuiteConfig,
    cases: list[Case],
    text_fields: TextFields,
    *,
    lazy: bool = False,
    predictions: bool = True,
) -> list[SystemRun]:
    """The suite's system configurations to run (a grid's callable gives one per point):
    saved predictions read and checked against `cases` (`lazy`: only found, left for the
    sharded workers; `predictions=False`: not read, as a cluster's worker that is sent the
    outputs), live systems built (not attached)."""
    known = {c.id for c in cases}
    systems: list[SystemRun] = []
    for i, cfg in enumerate(suite.systems):
        if cfg.predictions:
            path = suite.resolve(cfg.predictions)
            if lazy and not path.is_file():  # read later by the workers: checked here
                raise InputError("cannot read predictions (no such file)", path=path)
            with bulk_allocation():
                read = predictions and not lazy
                preds = PredictionsFile(path, known, text_fields) if read else None
            systems.append(SystemRun(cfg.name, {}, predictions=preds))
        elif cfg.callable:
            try:
                fn = import_callable(cfg.callable, suite.base_dir)
            except InputError as exc:
                where = f"systems[{i}].callable"
                raise InputError(exc.message, path=suite.source, where=where) from None
            systems += [
                SystemRun(name, params, callable=CallableSystem(fn, params, cfg.timeout_s,
                          text_fields), concurrency=cfg.concurrency, group=cfg.name)
                for name, params in cfg.configurations()
            ]  # fmt: skip
        else:  # a model or an endpoint: queryeval calls it
            live = build_system(suite, i, cfg, cases)
            concurrency = getattr(live, "concurrency", cfg.concurrency)
            systems.append(SystemRun(cfg.name, {}, callable=live, concurrency=concurrency))
    return systems


def import_plugins(suite: SuiteConfig) -> None:
    """The suite's `plugins:` modules (custom scorers), imported in this process as the
    suite's loader imported them in the driver's (`sys.path` left as it was)."""
    from queryeval._registry import import_module_from

    for module in suite.plugins:
        import_module_from(module, [suite.base_dir])
