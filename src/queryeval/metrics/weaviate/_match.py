"""Building blocks of the Weaviate AST comparison: name resolution (fuzzy property names),
numeric-condition canonical forms, text normalisation and optimal assignment."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

_SEPARATORS = re.compile(r"[\s_\-]+")
_SPACES = re.compile(r"\s+")


def name_key(name: str) -> str:
    """A property name with case and spacing ignored: `Price_Per Night` -> `pricepernight`."""
    return _SEPARATORS.sub("", name).casefold()


def normalize_text(text: str | None) -> str | None:
    """Search text / text value compared without case and runs of spaces; blank -> None."""
    if text is None:
        return None
    text = _SPACES.sub(" ", text).strip().casefold()
    return text or None


@lru_cache(maxsize=65536)
def resolve_name(name: str, candidates: tuple[str, ...], max_edits: int) -> tuple[str, str | None]:
    """(resolved name, how): `how` is None for an exact hit or no match, `"case/spacing"`
    for a match once case and separators are ignored, `"edit distance N"` for a unique
    candidate within `max_edits` edits (rapidfuzz Levenshtein) that is not a third of the
    name or more."""
    if name in candidates:
        return name, None
    key = name_key(name)
    same = [c for c in candidates if name_key(c) == key]
    if len(same) == 1:
        return same[0], "case/spacing"
    if max_edits <= 0 or not key:
        return name, None
    try:
        from rapidfuzz import process
        from rapidfuzz.distance import Levenshtein
    except ImportError as exc:  # pragma: no cover - rapidfuzz is in the `text` extra
        raise ImportError(
            "fuzzy_properties needs rapidfuzz: pip install 'queryeval[text]'"
        ) from exc

    keys = {c: name_key(c) for c in candidates}
    bound = min(max_edits, max(0, (len(key) - 1) // 3))
    if bound == 0:
        return name, None
    hits = process.extract(key, keys, scorer=Levenshtein.distance, score_cutoff=bound, limit=2)
    if not hits or (len(hits) > 1 and hits[1][1] == hits[0][1]):
        return name, None  # nothing close enough, or a tie: do not guess
    return hits[0][2], f"edit distance {int(hits[0][1])}"


def integer_bound(operator: str, value: Any) -> tuple[str, Any]:
    """A condition on an integer property in canonical form: `> 4` and `>= 5` both give
    `(">=", 5)`; `< 10` and `<= 9` give `("<=", 9)`. `=` and `!=` keep their value."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return operator, value
    if operator == ">":
        return ">=", math.floor(value) + 1
    if operator == ">=":
        return ">=", math.ceil(value)
    if operator == "<":
        return "<=", math.ceil(value) - 1
    if operator == "<=":
        return "<=", math.floor(value)
    if isinstance(value, float) and value.is_integer():
        return operator, int(value)
    return operator, value


def assign(scores: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """Row/column pairs of a maximum-total assignment on a rows x cols score matrix
    (scipy's linear_sum_assignment; a 1x1 or one-row/column matrix is solved directly)."""
    rows = len(scores)
    cols = len(scores[0]) if rows else 0
    if rows == 0 or cols == 0:
        return []
    if rows == 1:
        row = scores[0]
        return [(0, max(range(cols), key=row.__getitem__))]
    if cols == 1:
        return [(max(range(rows), key=lambda r: scores[r][0]), 0)]
    from scipy.optimize import linear_sum_assignment

    r, c = linear_sum_assignment(scores, maximize=True)
    return [(int(i), int(j)) for i, j in zip(r, c, strict=True)]
