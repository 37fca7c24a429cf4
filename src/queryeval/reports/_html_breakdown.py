"""The HTML report's benchmark breakdown: Spider hardness, BIRD difficulty, SParC/CoSQL turn
and Gorilla schema tables (`_breakdown`), merged across systems, each with a chart."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from queryeval.reports._breakdown import FAMILIES, families, ordered
from queryeval.reports._svg import Series, colour, grouped_hbars


def benchmark_breakdowns(
    summary: Mapping[str, Any], systems: list[str], labels: list[str], max_series: int
) -> list[dict[str, Any]]:
    """Per family present: its name, rows (value, system, cases, pass rate, one mean per
    label) in the benchmark's order of values, and a chart of the pass rate per value (the
    first `max_series` systems drawn; the table lists all)."""
    per_system = {s: families(summary["systems"].get(s, {}).get("by_tag") or {}) for s in systems}
    out = []
    for family in FAMILIES:
        present = [s for s in systems if family in per_system[s]]
        if not present:
            continue
        values = ordered(family, {v for s in present for v in per_system[s][family]})
        rows = [
            {
                "value": value,
                "tag": f"{family}:{value}",
                "system": s,
                "cases": t.get("cases"),
                "pass_rate": t.get("pass_rate"),
                "means": [(t.get("means") or {}).get(label) for label in labels],
            }
            for value in values
            for s in present
            if (t := per_system[s][family].get(value)) is not None
        ]
        drawn = present[:max_series]
        series = [
            Series(
                s,
                [(per_system[s][family].get(v) or {}).get("pass_rate") for v in values],
                colour(systems.index(s)),
            )
            for s in drawn
        ]
        note = (
            f"(first {len(drawn)} of {len(present)} systems drawn)" if present[len(drawn) :] else ""
        )
        chart = grouped_hbars(values, series, label=f"pass rate by {family}")
        out.append({"family": family, "rows": rows, "chart": chart, "chart_note": note})
    return out
