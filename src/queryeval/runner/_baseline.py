"""The baseline run of a suite: loaded and checked before the run, compared with after it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from queryeval.config import SuiteConfig
from queryeval.errors import InputError
from queryeval.log import RunLog, read_log


def load_baseline(
    suite: SuiteConfig, override: Path | None, system_names: Sequence[str]
) -> RunLog | None:
    """The baseline run (`--baseline` wins over the suite's `baseline:`), or None. Fails
    before anything runs when the baseline did not finish, or when its systems cannot be
    paired with the suite's (a relative gate without a baseline: `runner._check`)."""
    path = Path(override) if override is not None else None
    if path is None and suite.baseline is not None:
        path = suite.resolve(suite.baseline.run)
    if path is None:
        return None
    from queryeval.stats import pair_systems  # the comparisons, only with a baseline

    run = read_log(path)
    if run.summary is None:
        raise InputError("the baseline run has no summary.json (did it finish?)", path=path)
    wanted = suite.baseline.systems if suite.baseline is not None else []
    baseline_systems = list(dict.fromkeys(str(r["system"]) for r in run.records))
    try:
        pair_systems(baseline_systems, list(system_names), wanted or None)
    except InputError as exc:
        raise InputError(exc.message, path=suite.source, where="baseline.systems") from None
    return run


def compare_with_baseline(
    suite: SuiteConfig,
    baseline: RunLog,
    records: Sequence[Mapping[str, Any]],
    out_dir: Path,
) -> dict[str, Any]:
    """The comparison of this run (B) with the baseline (A), as stored in comparison.json."""
    from queryeval.stats import compare_records

    cfg = suite.baseline
    return compare_records(
        baseline.records, records, systems=(cfg.systems or None) if cfg else None,
        metrics=(cfg.metrics or None) if cfg else None, alpha=cfg.alpha if cfg else 0.05,
        seed=suite.seed, label_a=str(baseline.path or baseline.label), label_b=str(out_dir),
    ).as_dict()  # fmt: skip
