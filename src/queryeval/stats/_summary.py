"""summary.json: per system, per scorer means with CIs, pass rates, sub-metrics, by tag.

Computed only from the stored records (as columns, see `_columns`), in case order, so an
interrupted-and-resumed run, a sharded one and a plain one give byte-identical summaries.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from queryeval.log import Summary
from queryeval.stats._bootstrap import MeanCIs, _linear_quantiles
from queryeval.stats._columns import (
    ABSENT,
    ERROR,
    UNSCORED,
    RunColumns,
    ScorerTable,
    SystemTable,
    aggregate_of,
    finish,
)

if TYPE_CHECKING:
    from queryeval.cases import CaseInfo
    from queryeval.scorers import Scorer


def _ci(values: Sequence[float] | np.ndarray, cis: MeanCIs) -> dict[str, Any] | None:
    """`mean_ci(values, seed=...)` as a dict, filled in when `cis` is resolved (the
    intervals of one summary are computed together: see `MeanCIs`)."""
    interval = cis.add(values)
    return interval.as_dict() if interval is not None else None


def _pass_counts(verdicts: np.ndarray) -> dict[str, Any]:
    """Counts of verdict codes (1 pass, 0 fail, -1 none) and the pass rate."""
    passed = int(np.count_nonzero(verdicts == 1))
    failed = int(np.count_nonzero(verdicts == 0))
    judged = passed + failed
    return {
        "passed": passed,
        "failed": failed,
        "no_verdict": len(verdicts) - judged,
        "pass_rate": passed / judged if judged else None,
    }


def _mean(values: np.ndarray) -> float | None:
    return float(np.mean(values)) if len(values) else None


DEFAULT_MAX_UNSCORED_SHARE = 0.05


def _flagged_view(values: np.ndarray, n: int, pass_rate: float | None) -> dict[str, Any]:
    """What a flagged scorer shows instead of a mean: the mean of what was scored, and the
    bounds the mean over every case would lie in (each unscored or error case counted as 0,
    then as 1), so a reader sees how much the unscored part could move it; `pass_rate` is
    the rate of the verdicts it gave.

    >>> _flagged_view(np.array([1.0, 0.0]), 4, 0.5)["bounds"]
    [0.25, 0.75]
    """
    missing = n - len(values)
    total = float(np.sum(values)) if len(values) else 0.0
    return {
        "mean_scored": _mean(values),
        "bounds": [total / n, (total + missing) / n] if n else None,
        "pass_rate_scored": pass_rate,
    }


def summarize_scorer(
    scorer: Scorer | None,
    cases: Sequence[CaseInfo],
    table: SystemTable,
    seed: int,
    max_unscored_share: float = DEFAULT_MAX_UNSCORED_SHARE,
    cis: MeanCIs | None = None,
) -> dict[str, Any]:
    """Counts by status, mean value with CI, pass rate, sub-metric means, the scorer's own
    dataset-level figures (see `queryeval.cases._rule`). A failure counts as 0 in the mean
    and in every sub-metric, its reason counted in `failures`; unscored/error never enter
    a mean and their share is `unscored_share`, `flagged` above `max_unscored_share`. A
    flagged scorer has no mean, pass rate or sub-metric mean (None, "—"): what was scored
    may be the part a system chose to leave scorable, or what a judge outage left; its
    `mean_scored`, `pass_rate_scored` and `bounds` (the unscored counted as 0, then as 1)
    are shown beside it instead. `cis`: where the intervals are computed (its caller
    resolves it; by default here)."""
    own = cis is None
    if cis is None:
        cis = MeanCIs(seed=seed)
    label = scorer.label if scorer is not None else ""
    column = table.scorers.get(label)
    if column is None:
        column = ScorerTable(_EMPTY_F, _EMPTY_I, _EMPTY_I, {}, [], [], [])
    present = column.status != ABSENT
    ok = column.ok
    failed = column.failed & ok
    n = int(np.count_nonzero(present))
    not_scored = int(np.count_nonzero(column.status == UNSCORED)) + int(
        np.count_nonzero(column.status == ERROR)
    )
    share = not_scored / n if n else 0.0
    flagged = share > max_unscored_share + 1e-12
    values = column.values[ok]
    verdicts = _pass_counts(column.passed[present])
    out: dict[str, Any] = {
        "n": n,
        "ok": int(np.count_nonzero(ok)),
        "unscored": int(np.count_nonzero(column.status == UNSCORED)),
        "error": int(np.count_nonzero(column.status == ERROR)),
        "failed_outputs": int(np.count_nonzero(failed)),
        # a flagged mean is no figure: what was scored may be the part a system chose to
        # leave scorable (valid KQL the engine cannot run in place of every wrong answer)
        "mean": None if flagged else _mean(values),
        "ci95": None if flagged else _ci(values, cis),
        **verdicts,
    }
    own_verdicts = present & ~failed & (column.passed >= 0)
    no_threshold = scorer is not None and scorer.threshold is None
    if flagged or (no_threshold and not own_verdicts.any()):
        # too much unscored, or the verdicts are the failures' alone (a scorer without a
        # threshold gives none of its own): no rate to show
        out["pass_rate"] = None
    out["unscored_share"] = share
    out["flagged"] = flagged
    if flagged:
        out |= _flagged_view(values, n, verdicts["pass_rate"])
    if column.failures:
        counts = Counter(reason for _, reason in column.failures)
        out["failures"] = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    metrics = {}
    for name, metric in sorted(column.metrics.items()):
        if failed.any():  # a failure is 0 in every sub-metric, reported or not
            metric = metric.copy()
            metric[failed] = 0.0
        vs = metric[ok & ~np.isnan(metric)]
        if len(vs) and not flagged:
            metrics[name] = {"mean": float(np.mean(vs)), "n": len(vs), "ci95": _ci(vs, cis)}
        elif len(vs):
            metrics[name] = {"mean": None, "n": len(vs), "ci95": None,
                             "mean_scored": float(np.mean(vs))}  # fmt: skip
    out["metrics"] = metrics
    if column.reasons:
        reasons = Counter(column.reasons)  # first seen first among equal counts
        out["not_scored_reasons"] = dict(sorted(reasons.items(), key=lambda kv: -kv[1])[:10])
    if scorer is not None:
        out["scorer"] = scorer.describe()
        extra = aggregate_of(scorer, table, cases)
        if extra:
            out["aggregate"] = extra
    if own:
        cis.resolve()
    return out


_EMPTY_F = np.empty(0, dtype=np.float64)
_EMPTY_I = np.empty(0, dtype=np.int8)


def summarize(
    suite_name: str,
    cases: Sequence[CaseInfo],
    records: Iterable[Mapping[str, Any]] | RunColumns,
    scorers: Mapping[str, Scorer],
    system_names: Sequence[str],
    seed: int = 0,
    max_unscored_share: float = DEFAULT_MAX_UNSCORED_SHARE,
) -> Summary:
    """The whole summary from the stored records (any order; put in case order here), or
    from their columns as a run collected them. `max_unscored_share`: a scorer whose share
    of unscored and error cases is above it is `flagged`."""
    if isinstance(records, RunColumns):
        columns = records
    else:
        columns = RunColumns(system_names)
        for rec in records:
            columns.add(rec)
    systems: dict[str, Any] = {}
    cis = MeanCIs(seed=seed)  # every interval of the summary, computed at the end
    names = [*system_names, *(n for n in columns.systems if n not in system_names)]
    for name in names:
        table = finish(columns.system(name), cases)
        entry: dict[str, Any] = {
            "cases": len(table.case_index),
            "system_errors": int(np.count_nonzero(table.error)),
            **_pass_counts(table.passed),
        }
        judged = table.passed[table.passed >= 0]
        entry["pass_rate_ci95"] = _ci((judged == 1).astype(np.float64), cis)
        # cases without a verdict are the evaluator's: too many of them and the pass rate
        # describes what could be judged, not the system
        share = entry["no_verdict"] / entry["cases"] if entry["cases"] else 0.0
        entry["no_verdict_share"] = share
        entry["flagged"] = share > max_unscored_share + 1e-12
        if entry["flagged"]:  # the rate of what could be judged, kept apart from the figure
            entry["pass_rate_scored"], entry["pass_rate"] = entry["pass_rate"], None
            entry["pass_rate_ci95"] = None
        latencies = table.latency[~np.isnan(table.latency)]
        if len(latencies):
            # np.percentile's values, without the numpy.ma it imports (`_linear_quantiles`)
            p50, p95 = _linear_quantiles(latencies, (0.5, 0.95))
            entry["latency_s"] = {
                "mean": float(np.mean(latencies)),
                "p50": p50,
                "p95": p95,
                "max": float(np.max(latencies)),
            }
        costs = table.cost[~np.isnan(table.cost)]
        if len(costs):
            entry["system_cost"] = float(np.sum(costs))
        entry["scorers"] = {
            label: summarize_scorer(scorer, cases, table, seed, max_unscored_share, cis)
            for label, scorer in scorers.items()
        }
        entry["by_tag"] = _by_tag(cases, table, list(scorers))
        systems[name] = entry
    cis.resolve()
    return {"suite": suite_name, "n_cases": len(cases), "systems": systems}


def _by_tag(cases: Sequence[CaseInfo], table: SystemTable, labels: list[str]) -> dict:
    groups: dict[str, list[int]] = {}
    for row, case_tags in enumerate([cases[i].tags for i in table.case_index.tolist()]):
        for tag in case_tags:
            rows = groups.get(tag)
            if rows is None:
                groups[tag] = [row]
            else:
                rows.append(row)
    out: dict[str, Any] = {}
    for tag, rows in sorted(groups.items()):
        at = np.asarray(rows, dtype=np.int64)
        means: dict[str, float | None] = {}
        for label in labels:
            column = table.scorers.get(label)
            means[label] = None if column is None else _mean(column.values[at][column.ok[at]])
        out[tag] = {"cases": len(rows), **_pass_counts(table.passed[at]), "means": means}
    return out
