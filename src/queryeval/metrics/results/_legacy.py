"""Seed 002's "results match": the share of expected rows found in the generated rows.

Reproduced as the seed describes it, flaws included, so old numbers can be compared:

- rows become dicts with lower-cased keys and ``str(value)`` values (so ``1`` and ``1.0``,
  or ``None`` and ``"None"``, are told apart or confused exactly as the seed did);
- an expected row is found when some generated row holds all its key/value pairs: extra
  generated columns are not penalised, and row and field order do not matter;
- one generated row may "find" several identical expected rows (no one-to-one matching),
  and extra generated rows are never penalised (this is recall only);
- only the first 100 rows of each side are compared (``LEGACY_ROW_LIMIT``).

An empty expected result scores 1.0 when nothing was generated either, else 0.0 (the seed
does not say; this is the reading that does not divide by zero).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from queryeval.metrics.results._resultset import ResultLike, ResultSet, as_result_set

LEGACY_ROW_LIMIT = 100


def _check_results(
    prediction: ResultLike, reference: ResultLike, row_limit: int
) -> tuple[ResultSet, ResultSet]:
    """Both sides as ResultSets (a TypeError names the side that is not a result)."""
    if row_limit < 0:
        raise ValueError(f"row_limit={row_limit!r}: expected >= 0")
    return as_result_set(prediction, "pred"), as_result_set(reference, "gold")


def _normalised(result: ResultSet, limit: int) -> list[dict[str, str]]:
    names = [c.lower() for c in result.columns]
    rows: Sequence[tuple[Any, ...]] = result.head(limit).rows
    return [dict(zip(names, (str(v) for v in row), strict=True)) for row in rows]


def legacy_recall(
    prediction: ResultLike, reference: ResultLike, *, row_limit: int = LEGACY_ROW_LIMIT
) -> float:
    """Expected rows found in the generated rows / expected rows (seed 002). Each side is
    anything `compare_results` takes.

    >>> gold = (["city"], [("Paris",), ("Oslo",)])
    >>> legacy_recall((["CITY", "n"], [("Paris", 1)]), gold)  # extra columns are free
    0.5
    """
    generated, expected = _check_results(prediction, reference, row_limit)
    wanted = _normalised(expected, row_limit)
    got = _normalised(generated, row_limit)
    if not wanted:
        return 1.0 if not got else 0.0
    found = sum(1 for row in wanted if any(all(g.get(k) == v for k, v in row.items()) for g in got))
    return found / len(wanted)
