"""Results broken down the way benchmarks report them: by tags named ``FAMILY:VALUE`` for
the families Spider, SParC/CoSQL and BIRD use (hardness, turn, difficulty), in the
benchmarks' own order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# family -> the benchmark's order of its values (others follow, sorted)
FAMILIES: dict[str, tuple[str, ...]] = {
    "hardness": ("easy", "medium", "hard", "extra"),
    "difficulty": ("simple", "moderate", "challenging"),
    "turn": ("1", "2", "3", "4", ">4"),
}


def breakdowns(entry: Mapping[str, Any]) -> list[tuple[str, list[list[Any]]]]:
    """(title, rows) per family present in a system's ``by_tag``: a header row, then per
    value the cases, pass rate and each scorer's mean.

    >>> entry = {"by_tag": {"difficulty:simple": {"cases": 2, "pass_rate": 0.5,
    ...                                           "means": {"execution_match": 0.5}}}}
    >>> title, rows = breakdowns(entry)[0]
    >>> title, rows[1]
    ('by difficulty', ['simple', 2, 0.5, 0.5])
    """
    by_tag: Mapping[str, Any] = entry.get("by_tag") or {}
    tables = []
    for family, order in FAMILIES.items():
        found = {tag.split(":", 1)[1]: v for tag, v in by_tag.items()
                 if tag.startswith(f"{family}:")}  # fmt: skip
        if not found:
            continue
        values = [v for v in order if v in found] + sorted(set(found) - set(order))
        labels = list(next(iter(found.values())).get("means", {}))
        rows: list[list[Any]] = [[family, "cases", "pass rate", *labels]]
        for value in values:
            t = found[value]
            rows.append([value, t.get("cases"), t.get("pass_rate"),
                         *(t.get("means", {}).get(label) for label in labels)])  # fmt: skip
        tables.append((f"by {family}", rows))
    return tables
