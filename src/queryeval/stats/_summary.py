"""summary.json: per system, per scorer means with CIs, pass rates, sub-metrics, by tag.

Computed only from the stored records, sorted by case order, so an interrupted-and-resumed
run and an uninterrupted one give byte-identical summaries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from queryeval.cases import Case, Score
from queryeval.stats._bootstrap import mean_ci

if TYPE_CHECKING:
    from queryeval.scorers import Scorer


def _ci(values: Sequence[float], seed: int) -> dict[str, Any] | None:
    interval = mean_ci(values, seed=seed)
    return interval.as_dict() if interval is not None else None


def _pass_counts(verdicts: Sequence[bool | None]) -> dict[str, Any]:
    passed = sum(1 for v in verdicts if v is True)
    failed = sum(1 for v in verdicts if v is False)
    judged = passed + failed
    return {
        "passed": passed,
        "failed": failed,
        "no_verdict": len(verdicts) - judged,
        "pass_rate": passed / judged if judged else None,
    }


def summarize_scorer(
    scorer: Scorer | None,
    cases: Sequence[Case],
    scores: Sequence[Score],
    seed: int,
) -> dict[str, Any]:
    """Counts by status, mean value with CI, pass rate, sub-metric means, the scorer's own
    dataset-level figures. unscored/error never enter a mean."""
    ok = [s for s in scores if s.status == "ok" and s.value is not None]
    values = [float(s.value) for s in ok if s.value is not None]
    out: dict[str, Any] = {
        "n": len(scores),
        "ok": len(ok),
        "unscored": sum(1 for s in scores if s.status == "unscored"),
        "error": sum(1 for s in scores if s.status == "error"),
        "mean": float(np.mean(values)) if values else None,
        "ci95": _ci(values, seed),
        **_pass_counts([s.passed for s in scores]),
    }
    metric_values: dict[str, list[float]] = {}
    for s in ok:
        metrics = s.details.get("metrics")
        if not metrics:
            continue
        for name, v in metrics.items():
            kind = type(v)
            if kind is float or kind is int:  # not bool, not None
                bucket = metric_values.get(name)
                if bucket is None:
                    bucket = metric_values[name] = []
                bucket.append(v)
    out["metrics"] = {
        name: {"mean": float(np.mean(vs)), "n": len(vs), "ci95": _ci(vs, seed)}
        for name, vs in sorted(metric_values.items())
    }
    reasons: dict[str, int] = {}
    for s in scores:
        if s.status != "ok":
            key = (s.explanation or s.status).split("\n")[0][:120]
            reasons[key] = reasons.get(key, 0) + 1
    if reasons:
        out["not_scored_reasons"] = dict(sorted(reasons.items(), key=lambda kv: -kv[1])[:10])
    if scorer is not None:
        out["scorer"] = scorer.describe()
        extra = scorer.aggregate(cases, scores)
        if extra:
            out["aggregate"] = extra
    return out


class ScoreView:
    """A stored score read back for summaries: the attributes of a Score without
    re-validating every record (a summary reads them; it never changes them)."""

    __slots__ = ("details", "explanation", "passed", "status", "value")

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.value = data.get("value")
        self.status = data.get("status", "ok")
        self.passed = data.get("passed")
        self.details = data.get("details") or {}
        self.explanation = data.get("explanation", "")


def _as_score(value: Score | Mapping[str, Any]) -> Score:
    return value if isinstance(value, Score) else cast(Score, ScoreView(value))


def summarize(
    suite_name: str,
    cases: Sequence[Case],
    records: Sequence[Mapping[str, Any]],
    scorers: Mapping[str, Scorer],
    system_names: Sequence[str],
    seed: int = 0,
) -> dict[str, Any]:
    """The whole summary from the stored records (any order; sorted here)."""
    index = {c.id: i for i, c in enumerate(cases)}
    by_system: dict[str, list[Mapping[str, Any]]] = {name: [] for name in system_names}
    for rec in records:
        by_system.setdefault(rec["system"], []).append(rec)
    systems: dict[str, Any] = {}
    for name, recs in by_system.items():
        recs = sorted(recs, key=lambda r: index.get(r["case_id"], len(index)))
        rec_cases = [cases[index[r["case_id"]]] for r in recs if r["case_id"] in index]
        recs = [r for r in recs if r["case_id"] in index]
        entry: dict[str, Any] = {
            "cases": len(recs),
            "system_errors": sum(1 for r in recs if r.get("error")),
            **_pass_counts([r.get("passed") for r in recs]),
        }
        entry["pass_rate_ci95"] = _ci(
            [1.0 if r["passed"] else 0.0 for r in recs if r.get("passed") is not None], seed
        )
        latencies = [r["latency_s"] for r in recs if r.get("latency_s") is not None]
        if latencies:
            entry["latency_s"] = {
                "mean": float(np.mean(latencies)),
                "p50": float(np.percentile(latencies, 50)),
                "p95": float(np.percentile(latencies, 95)),
                "max": float(np.max(latencies)),
            }
        costs = [r["cost"] for r in recs if r.get("cost") is not None]
        if costs:
            entry["system_cost"] = float(np.sum(costs))
        entry["scorers"] = {}
        for label, scorer in scorers.items():
            scores = [_as_score(r["scores"][label]) for r in recs if label in r["scores"]]
            entry["scorers"][label] = summarize_scorer(scorer, rec_cases, scores, seed)
        entry["by_tag"] = _by_tag(rec_cases, recs, list(scorers))
        systems[name] = entry
    return {"suite": suite_name, "n_cases": len(cases), "systems": systems}


def _by_tag(cases: Sequence[Case], recs: Sequence[Mapping[str, Any]], labels: list[str]) -> dict:
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for case, rec in zip(cases, recs, strict=True):
        for tag in case.tags:
            groups.setdefault(tag, []).append(rec)
    out: dict[str, Any] = {}
    for tag, rs in sorted(groups.items()):
        means: dict[str, float | None] = {}
        for label in labels:
            vs = [
                s.value
                for r in rs
                if label in r["scores"]
                and (s := _as_score(r["scores"][label])).status == "ok"
                and s.value is not None
            ]
            means[label] = float(np.mean(vs)) if vs else None
        out[tag] = {"cases": len(rs), **_pass_counts([r.get("passed") for r in rs]), "means": means}
    return out
