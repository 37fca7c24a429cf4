"""Turn the scorers' free-form `aggregate` dicts into tables and charts, generically.

A scorer's aggregate may hold per-dimension figures (SDMX), per-family scores (Weaviate AST),
error-type counts (agentic loops) or anything else JSON-able. Any mapping whose values are
flat records of numbers becomes a table (rows = keys); any mapping's own numbers become a
list of scalars. Reports render what is there without knowing the scorer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Preferred column to chart, in order: the first present whose values lie in [0, 1].
_MAIN_HINTS = (
    "f1",
    "score",
    "accuracy",
    "recall",
    "precision",
    "rate",
    "match",
    "mean",
)


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_flat_record(v: Any) -> bool:
    return (
        isinstance(v, Mapping)
        and any(_is_num(x) for x in v.values())
        and not any(isinstance(x, Mapping) for x in v.values())
    )


@dataclass
class Family:
    """One table or list of scalars of one scorer's aggregate, merged across systems."""

    scorer: str
    path: str
    kind: str  # "table" (items x columns) or "scalars" (items -> value)
    items: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    # system -> item -> column -> value ("value" is the column of scalars)
    data: dict[str, dict[str, dict[str, float | None]]] = field(default_factory=dict)

    @property
    def title(self) -> str:
        """Human title: `scorer: path`."""
        name = self.path.replace("_", " ") if self.path else "aggregate"
        return f"{self.scorer}: {name}"

    def values(self, column: str) -> list[float]:
        """Every present value of a column, across systems and items."""
        return [
            v
            for by_item in self.data.values()
            for row in by_item.values()
            if (v := row.get(column)) is not None
        ]

    def rate_columns(self) -> list[str]:
        """Columns whose values are all fractions in [0, 1] (floats, not counts)."""
        out = []
        for col in self.columns:
            vals = self.values(col)
            if vals and all(0 <= v <= 1 for v in vals) and any(isinstance(v, float) for v in vals):
                out.append(col)
        return out

    def rate_items(self) -> list[str]:
        """Scalars whose values are all fractions in [0, 1] (floats, not counts)."""
        out = []
        for item in self.items:
            vals = [
                v
                for by_item in self.data.values()
                if (v := by_item.get(item, {}).get("value")) is not None
            ]
            if vals and all(0 <= v <= 1 for v in vals) and any(isinstance(v, float) for v in vals):
                out.append(item)
        return out

    def main_column(self) -> tuple[str | None, bool]:
        """The column to chart and whether it is a rate (else a count/amount)."""
        rates = self.rate_columns()
        for hint in _MAIN_HINTS:
            for col in rates:
                if hint in col.lower():
                    return col, True
        if rates:
            return rates[0], True
        for col in self.columns:
            vals = self.values(col)
            if vals and all(v >= 0 for v in vals):
                return col, False
        return None, False


def _walk(node: Any, path: tuple[str, ...], out: dict[tuple[str, ...], tuple[str, dict]]) -> None:
    if not isinstance(node, Mapping):
        return
    scalars = {str(k): v for k, v in node.items() if _is_num(v) or v is None}
    children = {str(k): v for k, v in node.items() if isinstance(v, Mapping)}
    if scalars and any(_is_num(v) for v in scalars.values()):
        out[(*path, "#scalars")] = ("scalars", {k: {"value": v} for k, v in scalars.items()})
    if children and all(_is_flat_record(c) for c in children.values()):
        rows = {
            k: {str(ck): cv for ck, cv in c.items() if _is_num(cv) or cv is None}
            for k, c in children.items()
        }
        out[path] = ("table", rows)
        return
    for k, child in children.items():
        _walk(child, (*path, k), out)


def component_families(summary: Mapping[str, Any]) -> list[Family]:
    """Every aggregate table/scalar list of every scorer, merged across the systems."""
    families: dict[tuple[str, tuple[str, ...]], Family] = {}
    for system, entry in (summary.get("systems") or {}).items():
        for label, s in (entry.get("scorers") or {}).items():
            found: dict[tuple[str, ...], tuple[str, dict]] = {}
            _walk(s.get("aggregate") or {}, (), found)
            for path, (kind, rows) in found.items():
                clean = tuple(p for p in path if p != "#scalars")
                fam = families.get((label, path))
                if fam is None:
                    fam = families[(label, path)] = Family(label, ".".join(clean), kind)
                fam.data[system] = rows
                for item, row in rows.items():
                    if item not in fam.items:
                        fam.items.append(item)
                    for col in row:
                        if col not in fam.columns:
                            fam.columns.append(col)
    return list(families.values())


def scorer_labels(summary: Mapping[str, Any]) -> list[str]:
    """Every scorer label of a summary, in order of first appearance."""
    systems = summary.get("systems", {}).values()
    return list(dict.fromkeys(label for e in systems for label in e.get("scorers", {})))
