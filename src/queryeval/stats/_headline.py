"""The headline numbers of a stored summary, flat: what an experiment tracker logs and the
run history charts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x)


def headline_metrics(system: Mapping[str, Any]) -> dict[str, float]:
    """One system's entry of `summary.json` as flat name -> number: `pass_rate`, each
    scorer's mean (`label`) and sub-metric means (`label.sub`), `latency_p50_s`,
    `latency_p95_s`, `cost`. Means that are missing or flagged "—" are left out.

    >>> headline_metrics({"pass_rate": 0.5, "scorers": {"em": {"mean": 0.25,
    ...     "metrics": {"f1": {"mean": 0.4}}}}, "latency_s": {"p50": 1.0, "p95": 2.0}})
    {'pass_rate': 0.5, 'em': 0.25, 'em.f1': 0.4, 'latency_p50_s': 1.0, 'latency_p95_s': 2.0}
    """
    out: dict[str, float] = {}
    if (rate := _number(system.get("pass_rate"))) is not None:
        out["pass_rate"] = rate
    for label, scorer in (system.get("scorers") or {}).items():
        if (mean := _number(scorer.get("mean"))) is not None:
            out[str(label)] = mean
        for sub, figures in (scorer.get("metrics") or {}).items():
            value = _number(figures.get("mean")) if isinstance(figures, Mapping) else None
            if value is not None:
                out[f"{label}.{sub}"] = value
    latency = system.get("latency_s") or {}
    for q in ("p50", "p95"):
        if (v := _number(latency.get(q))) is not None:
            out[f"latency_{q}_s"] = v
    if (cost := _number(system.get("system_cost"))) is not None:
        out["cost"] = cost
    return out
