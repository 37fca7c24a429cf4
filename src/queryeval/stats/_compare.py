"""Paired comparison of two runs: per-metric differences with paired bootstrap CIs, McNemar's
test on pass/fail, the cases that flipped, and a verdict.

Run A is the reference (the baseline, the old version), run B the candidate: every
difference is B - A, and "better" means B is better. Cases are paired by id within a pair
of systems (same name by default); only cases scored in both runs enter a metric.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from queryeval.errors import InputError
from queryeval.log import RunLog, as_log
from queryeval.stats._bootstrap import DEFAULT_RESAMPLES, Interval, mean_ci
from queryeval.stats._mcnemar import McNemarResult, mcnemar_test

BETTER = "better"
WORSE = "worse"
NO_DIFFERENCE = "no significant difference"
PASS = "pass"

RunLike = str | Path | RunLog | Sequence[Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class MetricComparison:
    """One metric on the paired cases: both means, B - A with its CI, a p-value, a verdict."""

    metric: str
    n: int
    mean_a: float | None
    mean_b: float | None
    diff: float | None
    ci: Interval | None
    p_value: float | None
    test: str
    verdict: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {
            "metric": self.metric,
            "n": self.n,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "diff": self.diff,
            "ci": self.ci.as_dict() if self.ci is not None else None,
            "p_value": self.p_value,
            "test": self.test,
            "verdict": self.verdict,
        }


@dataclass(frozen=True, slots=True)
class SystemComparison:
    """System `system_a` of run A against `system_b` of run B."""

    system_a: str
    system_b: str
    n_a: int
    n_b: int
    n_paired: int
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    metrics: tuple[MetricComparison, ...]
    mcnemar: McNemarResult | None
    fixed: tuple[str, ...]
    broken: tuple[str, ...]
    primary: str | None

    def metric(self, name: str) -> MetricComparison | None:
        """The comparison of one metric, by name."""
        return next((m for m in self.metrics if m.metric == name), None)

    @property
    def verdict(self) -> str:
        """The verdict of the primary metric."""
        primary = self.metric(self.primary) if self.primary else None
        return primary.verdict if primary is not None else NO_DIFFERENCE

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {
            "system_a": self.system_a,
            "system_b": self.system_b,
            "n_a": self.n_a,
            "n_b": self.n_b,
            "n_paired": self.n_paired,
            "only_a": list(self.only_a),
            "only_b": list(self.only_b),
            "primary": self.primary,
            "verdict": self.verdict,
            "mcnemar": self.mcnemar.as_dict() if self.mcnemar is not None else None,
            "fixed": list(self.fixed),
            "broken": list(self.broken),
            "metrics": [m.as_dict() for m in self.metrics],
        }


@dataclass(frozen=True, slots=True)
class RunComparison:
    """Every compared pair of systems, with the settings used."""

    label_a: str
    label_b: str
    alpha: float
    seed: int
    systems: tuple[SystemComparison, ...]

    @property
    def verdict(self) -> str:
        """Worse if any pair is worse, better if any is better (and none worse), else none."""
        verdicts = {s.verdict for s in self.systems}
        if WORSE in verdicts:
            return WORSE
        return BETTER if BETTER in verdicts else NO_DIFFERENCE

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form (what comparison.json and `compare --format json` hold)."""
        return {
            "run_a": self.label_a,
            "run_b": self.label_b,
            "alpha": self.alpha,
            "level": 1 - self.alpha,
            "seed": self.seed,
            "verdict": self.verdict,
            "systems": [s.as_dict() for s in self.systems],
        }


def _score_fields(score: Any) -> tuple[str, Any, Mapping[str, Any]]:
    """(status, value, details) of a stored score dict or a Score model."""
    if isinstance(score, Mapping):
        return score.get("status", "ok"), score.get("value"), score.get("details") or {}
    return score.status, score.value, score.details


def _record_values(rec: Mapping[str, Any]) -> dict[str, float]:
    """Every comparable number of one record: pass (1/0), scorer values, sub-metrics."""
    out: dict[str, float] = {}
    if rec.get("passed") is not None:
        out[PASS] = 1.0 if rec["passed"] else 0.0
    for label, score in (rec.get("scores") or {}).items():
        status, value, details = _score_fields(score)
        if status != "ok" or value is None:
            continue
        out[label] = float(value)
        for name, v in (details.get("metrics") or {}).items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                out[f"{label}.{name}"] = float(v)
    return out


def _by_system(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Mapping[str, Any]]]:
    out: dict[str, dict[str, Mapping[str, Any]]] = {}
    for rec in records:
        out.setdefault(str(rec["system"]), {})[str(rec["case_id"])] = rec  # last one wins
    return out


def _parse_pair(spec: str | tuple[str, str]) -> tuple[str, str]:
    if isinstance(spec, tuple):
        return spec
    a, sep, b = spec.partition("=")
    return (a.strip(), b.strip()) if sep else (spec.strip(), spec.strip())


def pair_systems(
    systems_a: Sequence[str],
    systems_b: Sequence[str],
    wanted: Sequence[str | tuple[str, str]] | None,
) -> list[tuple[str, str]]:
    """The (A, B) system pairs to compare: the wanted ones (`name` or `a=b`, checked), else
    the names both runs have, else run A's only system against each of B's; InputError
    otherwise."""
    if wanted:
        pairs = [_parse_pair(w) for w in wanted]
        for a, b in pairs:
            for name, known, run in ((a, systems_a, "A"), (b, systems_b, "B")):
                if name not in known:
                    raise InputError(
                        f"run {run} has no system {name!r}; it has: {', '.join(known)}",
                        where="--system",
                    )
        return pairs
    common = [s for s in systems_a if s in systems_b]
    if common:
        return [(s, s) for s in common]
    if len(systems_a) == 1:  # one reference system: every candidate against it
        return [(systems_a[0], b) for b in systems_b]
    raise InputError(
        "the runs have no system name in common; pick pairs with --system A_NAME=B_NAME "
        f"(run A: {', '.join(systems_a)}; run B: {', '.join(systems_b)})",
        where="--system",
    )


def _verdict_from_ci(ci: Interval | None) -> str:
    if ci is None:
        return NO_DIFFERENCE
    if ci.low > 1e-12:
        return BETTER
    if ci.high < -1e-12:
        return WORSE
    return NO_DIFFERENCE


def _compare_metric(
    metric: str,
    a: list[float],
    b: list[float],
    *,
    alpha: float,
    seed: int,
    resamples: int,
) -> tuple[MetricComparison, McNemarResult | None]:
    if not a:
        empty = MetricComparison(metric, 0, None, None, None, None, None, "none", NO_DIFFERENCE)
        return empty, None
    xa, xb = np.asarray(a), np.asarray(b)
    diffs = xb - xa
    ci = mean_ci(diffs, level=1 - alpha, seed=seed, resamples=resamples)
    mean_a, mean_b, diff = float(xa.mean()), float(xb.mean()), float(diffs.mean())
    if metric == PASS:
        test = mcnemar_test(int(np.sum((xa == 1) & (xb == 0))), int(np.sum((xa == 0) & (xb == 1))))
        if test.p_value < alpha and test.b != test.c:
            verdict = BETTER if test.c > test.b else WORSE
        else:
            verdict = NO_DIFFERENCE
        label = f"McNemar ({test.method})"
        comp = MetricComparison(
            metric, len(a), mean_a, mean_b, diff, ci, test.p_value, label, verdict
        )
        return comp, test
    comp = MetricComparison(
        metric, len(a), mean_a, mean_b, diff, ci, None, "paired bootstrap", _verdict_from_ci(ci)
    )
    return comp, None


def compare_records(
    records_a: Sequence[Mapping[str, Any]],
    records_b: Sequence[Mapping[str, Any]],
    *,
    systems: Sequence[str | tuple[str, str]] | None = None,
    metrics: Sequence[str] | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    label_a: str = "A",
    label_b: str = "B",
) -> RunComparison:
    """Compare two lists of run records; see `compare_runs`."""
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be between 0 and 1, got {alpha}", where="--alpha")
    by_a, by_b = _by_system(records_a), _by_system(records_b)
    results: list[SystemComparison] = []
    for sys_a, sys_b in pair_systems(list(by_a), list(by_b), systems):
        cases_a, cases_b = by_a[sys_a], by_b[sys_b]
        paired = [cid for cid in cases_a if cid in cases_b]
        vals_a = {cid: _record_values(cases_a[cid]) for cid in paired}
        vals_b = {cid: _record_values(cases_b[cid]) for cid in paired}
        available: list[str] = []
        for cid in paired:
            for name in vals_a[cid]:
                if name in vals_b[cid] and name not in available:
                    available.append(name)
        available.sort(key=lambda m: (m != PASS, "." in m, m))  # pass, scorers, sub-metrics
        chosen = list(metrics) if metrics else available
        unknown = [m for m in chosen if m not in available]
        if unknown and paired:
            raise InputError(
                f"no paired values for metric(s) {', '.join(unknown)}; "
                f"available: {', '.join(available) or 'none'}",
                where="--metric",
            )
        comps: list[MetricComparison] = []
        mcnemar: McNemarResult | None = None
        for name in chosen:
            ids = [c for c in paired if name in vals_a[c] and name in vals_b[c]]
            comp, test = _compare_metric(
                name,
                [vals_a[c][name] for c in ids],
                [vals_b[c][name] for c in ids],
                alpha=alpha,
                seed=seed,
                resamples=resamples,
            )
            comps.append(comp)
            mcnemar = test or mcnemar
        fixed = tuple(
            c for c in paired if vals_a[c].get(PASS) == 0.0 and vals_b[c].get(PASS) == 1.0
        )
        broken = tuple(
            c for c in paired if vals_a[c].get(PASS) == 1.0 and vals_b[c].get(PASS) == 0.0
        )
        primary = chosen[0] if chosen else None
        results.append(
            SystemComparison(
                system_a=sys_a,
                system_b=sys_b,
                n_a=len(cases_a),
                n_b=len(cases_b),
                n_paired=len(paired),
                only_a=tuple(c for c in cases_a if c not in cases_b),
                only_b=tuple(c for c in cases_b if c not in cases_a),
                metrics=tuple(comps),
                mcnemar=mcnemar,
                fixed=fixed,
                broken=broken,
                primary=primary,
            )
        )
    return RunComparison(label_a, label_b, alpha, seed, tuple(results))


def compare_runs(
    run_a: RunLike,
    run_b: RunLike,
    *,
    systems: Sequence[str | tuple[str, str]] | None = None,
    metrics: Sequence[str] | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
) -> RunComparison:
    """Compare run B with run A (the reference), pairing cases by id per system.

    `systems`: names present in both runs, or `(a, b)` / `"a=b"` pairs (default: the
    systems the runs share, or their only systems). `metrics`: `pass`, a scorer label or
    `label.sub_metric`; the first decides the verdict (default: `pass`, McNemar's test).
    Continuous metrics are judged by the paired bootstrap CI of the mean difference at
    level 1 - alpha (seeded); pass/fail by McNemar's test at `alpha`.
    """
    a = as_log(run_a, "A")
    b = as_log(run_b, "B")
    return compare_records(
        a.records,
        b.records,
        systems=systems,
        metrics=metrics,
        alpha=alpha,
        seed=seed,
        resamples=resamples,
        label_a=a.label,
        label_b=b.label,
    )
