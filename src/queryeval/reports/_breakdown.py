"""Results broken down the way benchmarks report them: by tags named ``FAMILY:VALUE`` for
the families Spider, SParC/CoSQL, BIRD and Weaviate Gorilla use (hardness, turn,
difficulty, schema), in the benchmarks' own order."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# family -> the benchmark's order of its values (others follow: numbers, then text)
FAMILIES: dict[str, tuple[str, ...]] = {
    "hardness": ("easy", "medium", "hard", "extra"),
    "difficulty": ("simple", "moderate", "challenging"),
    "turn": ("1", "2", "3", "4", ">4"),
    "schema": (),  # Gorilla's collection schemas, numbered
}


def value_key(family: str, value: str) -> tuple[int, float, str]:
    """Sort key of a family's value: the benchmark's order, then numbers, then text.

    >>> sorted(["extra", "easy", "hard"], key=lambda v: value_key("hardness", v))
    ['easy', 'hard', 'extra']
    >>> sorted(["10", "2", "b"], key=lambda v: value_key("schema", v))
    ['2', '10', 'b']
    """
    order = FAMILIES.get(family, ())
    if value in order:
        return (0, float(order.index(value)), "")
    try:
        return (1, float(value), "")
    except ValueError:
        return (2, 0.0, value)


def ordered(family: str, values: Iterable[str]) -> list[str]:
    """A family's values in the benchmark's order."""
    return sorted(values, key=lambda v: value_key(family, v))


def tag_key(tag: str) -> tuple[str, tuple[int, float, str]]:
    """Sort key of a tag: by family, then its values in the benchmark's order.

    >>> sorted(["hardness:extra", "db:x", "hardness:easy"], key=tag_key)
    ['db:x', 'hardness:easy', 'hardness:extra']
    """
    family, sep, value = tag.partition(":")
    return (family, value_key(family, value)) if sep else (tag, (-1, 0.0, ""))


def families(by_tag: Mapping[str, Any]) -> dict[str, dict[str, Mapping[str, Any]]]:
    """family -> value -> the tag's figures, for the families present, values in order."""
    out = {}
    for family in FAMILIES:
        found = {tag.split(":", 1)[1]: v for tag, v in by_tag.items()
                 if tag.startswith(f"{family}:")}  # fmt: skip
        if found:
            out[family] = {value: found[value] for value in ordered(family, found)}
    return out


def breakdowns(entry: Mapping[str, Any]) -> list[tuple[str, list[list[Any]]]]:
    """(title, rows) per family present in a system's ``by_tag``: a header row, then per
    value the cases, pass rate and each scorer's mean.

    >>> entry = {"by_tag": {"difficulty:simple": {"cases": 2, "pass_rate": 0.5,
    ...                                           "means": {"execution_match": 0.5}}}}
    >>> title, rows = breakdowns(entry)[0]
    >>> title, rows[1]
    ('by difficulty', ['simple', 2, 0.5, 0.5])
    """
    tables = []
    for family, found in families(entry.get("by_tag") or {}).items():
        labels = list(next(iter(found.values())).get("means", {}))
        rows: list[list[Any]] = [[family, "cases", "pass rate", *labels]]
        for value, t in found.items():
            rows.append([value, t.get("cases"), t.get("pass_rate"),
                         *(t.get("means", {}).get(label) for label in labels)])  # fmt: skip
        tables.append((f"by {family}", rows))
    return tables
