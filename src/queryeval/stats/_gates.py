"""Quality gates: `metric op number` or `metric op baseline [+-* number]`, checked against
each system's summary (a failing gate makes `queryeval run` exit with code 1).

A baseline-relative gate (after MLflow's `min_absolute_change` / `min_relative_change`)
compares a metric with the same metric of the same system in a stored baseline run:
`execution_match >= baseline - 0.02` allows a drop of at most two points,
`pass_rate >= baseline * 0.95` a relative drop of at most 5%.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from queryeval.errors import InputError
from queryeval.log import GateResult

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
}
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_GATE = re.compile(
    rf"^\s*(?P<metric>[A-Za-z_][\w.\-]*)\s*(?P<op>>=|<=|==|>|<)\s*"
    rf"(?:(?P<number>{_NUMBER})|baseline(?:\s*(?P<rel>[-+*])\s*(?P<offset>{_NUMBER}))?)\s*$"
)


@dataclass(frozen=True, slots=True)
class Gate:
    """A parsed gate: metric path, comparison, and a fixed bound or a baseline expression."""

    text: str
    metric: str
    op: str
    bound: float
    relative: str | None = None  # None: absolute; "+", "-", "*": baseline expression

    @property
    def needs_baseline(self) -> bool:
        """Whether the bound comes from a baseline run."""
        return self.relative is not None

    def bound_from(self, baseline_value: float | None) -> float | None:
        """The effective bound: the number, or the baseline value with the offset applied."""
        if self.relative is None:
            return self.bound
        if baseline_value is None:
            return None
        if self.relative == "+":
            return baseline_value + self.bound
        if self.relative == "-":
            return baseline_value - self.bound
        return baseline_value * self.bound

    def check(self, value: float | None, bound: float | None = None) -> bool:
        """Whether `value` satisfies the gate (a missing value or bound fails it). `>=`, `<=`
        and `==` allow float rounding (so `x >= baseline - 0.02` holds for a drop of 0.02)."""
        limit = self.bound if self.relative is None else bound
        if value is None or limit is None:
            return False
        eps = 1e-9 * max(1.0, abs(limit))
        if self.op == ">=":
            return value >= limit - eps
        if self.op == "<=":
            return value <= limit + eps
        if self.op == "==":
            return abs(value - limit) <= eps
        return _OPS[self.op](value, limit)


def parse_gate(text: str) -> Gate:
    """Parse `pass_rate >= 0.8`, `term_selection.macro_recall > .5`,
    `execution_match >= baseline - 0.02`, `pass_rate >= baseline * 0.95`."""
    m = _GATE.match(text)
    if not m:
        raise InputError(
            f"cannot read gate {text!r}; expected 'METRIC OP NUMBER' or "
            "'METRIC OP baseline [+|-|* NUMBER]', e.g. 'pass_rate >= 0.8' or "
            "'pass_rate >= baseline - 0.02'",
            where="gates",
        )
    if m.group("number") is not None:
        return Gate(text, m.group("metric"), m.group("op"), float(m.group("number")))
    rel = m.group("rel")
    if rel is None:
        return Gate(text, m.group("metric"), m.group("op"), 0.0, "+")
    return Gate(text, m.group("metric"), m.group("op"), float(m.group("offset")), rel)


_SYSTEM_FIGURES = ("pass_rate", "system_errors", "cases")


def _scorer_entry(system_summary: Mapping[str, Any], metric: str) -> tuple[Any, str] | None:
    """The scorer entry a metric path names and what of it: (`<scorer>`'s entry, the part
    after the dot) or (the one scorer with that sub-metric, the sub-metric); None if none."""
    scorers = system_summary.get("scorers", {})
    head, _, tail = metric.partition(".")
    if head in scorers:
        return scorers[head], tail
    owners = [s for s in scorers.values() if metric in s.get("metrics", {})]
    return (owners[0], metric) if len(owners) == 1 else None


def metric_value(system_summary: Mapping[str, Any], metric: str) -> float | None:
    """Look a metric up in one system's summary: `pass_rate`, `<scorer>` (its mean),
    `<scorer>.pass_rate`, `<scorer>.<sub-metric>`, or a sub-metric name unique across scorers."""
    if metric in _SYSTEM_FIGURES:
        v = system_summary.get(metric)
        return float(v) if v is not None else None
    found = _scorer_entry(system_summary, metric)
    if found is None:
        return None
    entry, part = found
    if not part:
        return entry.get("mean")
    if part in ("pass_rate", "mean") and part != metric:  # `<scorer>.pass_rate`
        return entry.get(part)
    sub = entry.get("metrics", {}).get(part)
    value = sub.get("mean") if sub else None
    return float(value) if value is not None else None


def metric_flagged(system_summary: Mapping[str, Any], metric: str) -> bool:
    """Whether the figure a gate names is flagged (too much unscored to be a figure): the
    gate then fails, since nothing it could check describes the system.

    >>> metric_flagged({"scorers": {"em": {"flagged": True}}}, "em.exact")
    True
    """
    if metric in _SYSTEM_FIGURES:
        return metric == "pass_rate" and bool(system_summary.get("flagged"))
    found = _scorer_entry(system_summary, metric)
    return found is not None and bool(found[0].get("flagged"))


def _baseline_system(baseline: Mapping[str, Any], system: str) -> Mapping[str, Any] | None:
    """The baseline's entry for `system`, or its only system when names differ."""
    systems = baseline.get("systems", {})
    if system in systems:
        return systems[system]
    return next(iter(systems.values())) if len(systems) == 1 else None


def check_gates(
    gates: list[str],
    summary: Mapping[str, Any],
    baseline: Mapping[str, Any] | None = None,
) -> list[GateResult]:
    """Every gate for every system: {gate, system, value, passed}, plus `bound` and
    `baseline_value` for baseline-relative gates. `baseline` is the baseline run's summary;
    a relative gate without one is bad input (InputError), never a silent pass."""
    parsed = [parse_gate(text) for text in gates]
    if baseline is None and any(g.needs_baseline for g in parsed):
        needing = ", ".join(repr(g.text) for g in parsed if g.needs_baseline)
        raise InputError(
            f"gate(s) {needing} compare with a baseline run; pass --baseline RUN_DIR "
            "or set 'baseline:' in the suite",
            where="gates",
        )
    results: list[GateResult] = []
    for gate in parsed:
        for system, entry in summary.get("systems", {}).items():
            value = metric_value(entry, gate.metric)
            result: dict[str, Any] = {"gate": gate.text, "system": system, "value": value}
            if metric_flagged(entry, gate.metric):
                result["note"] = "flagged: too much unscored or in error to be a figure"
            if gate.needs_baseline:
                assert baseline is not None
                base_entry = _baseline_system(baseline, system)
                base_value = metric_value(base_entry, gate.metric) if base_entry else None
                bound = gate.bound_from(base_value)
                result |= {"baseline_value": base_value, "bound": bound}
                if base_entry is None:
                    result["note"] = f"the baseline run has no system {system!r}"
                result["passed"] = gate.check(value, bound)
            else:
                result["passed"] = gate.check(value)
            results.append(cast(GateResult, result))
    return results
