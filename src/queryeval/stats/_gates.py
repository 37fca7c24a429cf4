"""Quality gates: `metric op number` checked against a system's summary (exit code 1)."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from queryeval.errors import InputError

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
}
_GATE = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*(>=|<=|==|>|<)\s*([-+]?\d+(?:\.\d+)?)\s*$")


@dataclass(frozen=True, slots=True)
class Gate:
    """A parsed gate: the metric path, the comparison and the bound."""

    text: str
    metric: str
    op: str
    bound: float

    def check(self, value: float | None) -> bool:
        """Whether `value` satisfies the gate (a missing value fails it)."""
        return value is not None and _OPS[self.op](value, self.bound)


def parse_gate(text: str) -> Gate:
    """Parse `pass_rate >= 0.8`, `term_selection >= 0.7`, `term_selection.macro_recall > .5`."""
    m = _GATE.match(text)
    if not m:
        raise InputError(
            f"cannot read gate {text!r}; expected 'METRIC OP NUMBER', e.g. 'pass_rate >= 0.8'",
            where="gates",
        )
    return Gate(text, m.group(1), m.group(2), float(m.group(3)))


def metric_value(system_summary: Mapping[str, Any], metric: str) -> float | None:
    """Look a metric up in one system's summary: `pass_rate`, `<scorer>` (its mean),
    `<scorer>.pass_rate`, `<scorer>.<sub-metric>`, or a sub-metric name unique across scorers."""
    if metric in ("pass_rate", "system_errors", "cases"):
        v = system_summary.get(metric)
        return float(v) if v is not None else None
    scorers = system_summary.get("scorers", {})
    head, _, tail = metric.partition(".")
    if head in scorers:
        s = scorers[head]
        if not tail:
            return s.get("mean")
        if tail in ("pass_rate", "mean"):
            return s.get(tail)
        sub = s.get("metrics", {}).get(tail)
        return sub.get("mean") if sub else None
    found = [
        s["metrics"][metric]["mean"] for s in scorers.values() if metric in s.get("metrics", {})
    ]
    if len(found) == 1:
        return float(found[0])
    return None


def check_gates(gates: list[str], summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every gate for every system: {gate, system, value, passed}."""
    results = []
    for text in gates:
        gate = parse_gate(text)
        for system, entry in summary.get("systems", {}).items():
            value = metric_value(entry, gate.metric)
            results.append(
                {"gate": gate.text, "system": system, "value": value, "passed": gate.check(value)}
            )
    return results
