"""Which predicted column stands for which gold column.

``by_name`` (case-insensitive; exact-case matches first, repeated names in order),
``by_position``, ``gold_subset`` (by name, extra predicted columns allowed) and
``permutation``: any one-to-one mapping that makes the rows equal, whatever the names.
The permutation search never enumerates k! mappings blindly: a pair is a candidate only if
the two columns hold the same multiset of values, identical predicted columns are one
choice, and each partial mapping must already keep the projected rows equal.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from queryeval.metrics.results._match import close, multiset_overlap, pack_both

Mapping = tuple[tuple[int, int], ...]
"""(gold column index, predicted column index) pairs, in gold column order."""


@dataclass(frozen=True, slots=True)
class Alignment:
    """A mapping plus the gold columns left unmapped and the predicted columns left over."""

    pairs: Mapping
    missing: tuple[int, ...]
    extra: tuple[int, ...]


def align_by_name(gold: Sequence[str], pred: Sequence[str]) -> Alignment:
    """Match names exactly first, then case-insensitively; repeated names pair up in order.
    (Kept for the last 1,024 pairs of column names: a run compares the same few shapes.)"""
    return _align_by_name(tuple(gold), tuple(pred))


@functools.lru_cache(maxsize=1024)
def _align_by_name(gold: tuple[str, ...], pred: tuple[str, ...]) -> Alignment:
    if len(gold) == len(pred) and len(set(gold)) == len(gold) and set(gold) == set(pred):
        where = {name: pj for pj, name in enumerate(pred)}  # the same distinct names
        return Alignment(tuple((gi, where[name]) for gi, name in enumerate(gold)), (), ())
    taken: set[int] = set()
    found: dict[int, int] = {}
    for fold in (False, True):
        for gi, name in enumerate(gold):
            if gi in found:
                continue
            want = name.lower() if fold else name
            for pj, other in enumerate(pred):
                if pj not in taken and (other.lower() if fold else other) == want:
                    found[gi] = pj
                    taken.add(pj)
                    break
    pairs = tuple((gi, found[gi]) for gi in range(len(gold)) if gi in found)
    missing = tuple(gi for gi in range(len(gold)) if gi not in found)
    extra = tuple(pj for pj in range(len(pred)) if pj not in taken)
    return Alignment(pairs, missing, extra)


def align_by_position(n_gold: int, n_pred: int) -> Alignment:
    """Column i to column i."""
    common = min(n_gold, n_pred)
    return Alignment(
        tuple((i, i) for i in range(common)),
        tuple(range(common, n_gold)),
        tuple(range(common, n_pred)),
    )


@dataclass(frozen=True, slots=True)
class ColumnView:
    """One column's exact codes (shared code space) and, for numbers under tolerance, its
    tags and float values."""

    codes: np.ndarray
    numeric: str  # "int" | "float" | "null" | "other"
    tags: np.ndarray | None = None
    values: np.ndarray | None = None


@dataclass(frozen=True, slots=True)
class Search:
    """Outcome of the permutation search."""

    mapping: Mapping | None  # a mapping under which the rows are equal, if one was found
    best: Mapping | None  # otherwise the mapping that keeps the most values in common
    steps: int
    capped: bool


def search_permutation(
    gold: list[ColumnView],
    pred: list[ColumnView],
    *,
    tolerant: Callable[[ColumnView, ColumnView], bool],
    tolerance: tuple[float, float],
    as_set: bool,
    is_exact: Callable[[Mapping], bool],
    max_steps: int,
    first_try: Mapping | None = None,
    want_best: bool = True,
) -> Search:
    """Find a column bijection under which ``is_exact(mapping)`` holds (see module doc).
    Without one, ``best`` is the mapping keeping the most values in common, computed only
    when ``want_best`` (it costs a sort per column pair)."""

    def best() -> Mapping | None:
        return _best_mapping(gold, pred) if want_best else None

    k = len(gold)
    if first_try is not None and is_exact(first_try):
        return Search(first_try, first_try, 1, False)
    same_rows = len(gold[0].codes) == len(pred[0].codes) if k else True
    if k == 0 or not (same_rows or as_set):
        return Search(None, best(), 0, False)

    signature = _set_signature if as_set else _multiset_signature
    gold_sig = [signature(c.codes) for c in gold]
    pred_sig = [signature(c.codes) for c in pred]
    classes = _identical_columns(pred)
    candidates: list[list[int]] = []
    for gi, g in enumerate(gold):
        ok = []
        for ci, members in enumerate(classes):
            p = pred[members[0]]
            if tolerant(g, p):
                if _close_multisets(g, p, tolerance, as_set):
                    ok.append(ci)
            elif np.array_equal(gold_sig[gi], pred_sig[members[0]]):
                ok.append(ci)
        candidates.append(ok)
    if any(not c for c in candidates):
        return Search(None, best(), 0, False)

    order = sorted(range(k), key=lambda gi: len(candidates[gi]))
    free = [len(m) for m in classes]
    used = [0] * len(classes)
    chosen: dict[int, int] = {}
    steps = 0
    capped = False

    def consistent() -> bool:
        exact = [gi for gi in chosen if not tolerant(gold[gi], pred[chosen[gi]])]
        if len(exact) < 2:
            return True
        cards = [
            int(max(gold[gi].codes.max(initial=0), pred[chosen[gi]].codes.max(initial=0))) + 1
            for gi in exact
        ]
        kp, kg = pack_both(
            [pred[chosen[gi]].codes for gi in exact], [gold[gi].codes for gi in exact], cards
        )
        if as_set:
            return np.array_equal(np.unique(kg), np.unique(kp))
        return multiset_overlap(kp, kg) == len(kg) == len(kp)

    def place(depth: int) -> Mapping | None:
        nonlocal steps, capped
        if depth == k:
            mapping = tuple(sorted(chosen.items()))
            return mapping if is_exact(mapping) else None
        gi = order[depth]
        for ci in candidates[gi]:
            if free[ci] == 0:
                continue
            steps += 1
            if steps > max_steps:
                capped = True
                return None
            chosen[gi] = classes[ci][used[ci]]
            free[ci] -= 1
            used[ci] += 1
            found = place(depth + 1) if consistent() else None
            free[ci] += 1
            used[ci] -= 1
            del chosen[gi]
            if found is not None or capped:
                return found
        return None

    found = place(0)
    return Search(found, found or best(), steps, capped)


def _multiset_signature(codes: np.ndarray) -> np.ndarray:
    return np.sort(codes)


def _set_signature(codes: np.ndarray) -> np.ndarray:
    return np.unique(codes)


def _identical_columns(columns: list[ColumnView]) -> list[list[int]]:
    """Groups of columns holding the same values row for row (interchangeable in a mapping)."""
    groups: dict[bytes, list[int]] = {}
    for j, column in enumerate(columns):
        groups.setdefault(column.codes.tobytes(), []).append(j)
    return list(groups.values())


def _close_multisets(
    g: ColumnView, p: ColumnView, tolerance: tuple[float, float], as_set: bool
) -> bool:
    """Whether the two numeric columns' values pair up one to one within tolerance (sorted
    pairing is optimal in one dimension); under set semantics this is only a pre-filter."""
    assert g.tags is not None and g.values is not None
    assert p.tags is not None and p.values is not None
    if as_set:
        return True
    if not np.array_equal(np.sort(g.tags), np.sort(p.tags)):
        return False
    a = np.sort(g.values[g.tags == 1])
    b = np.sort(p.values[p.tags == 1])
    return bool(close(a, b, *tolerance).all())


def _best_mapping(gold: list[ColumnView], pred: list[ColumnView]) -> Mapping | None:
    """The bijection keeping the most values in common, column by column (Hungarian
    assignment on value-multiset overlaps); None when the column counts differ."""
    if len(gold) != len(pred) or not gold:
        return None
    return best_by_overlap([[multiset_overlap(p.codes, g.codes) for p in pred] for g in gold])


def best_by_overlap(overlap: list[list[int]]) -> Mapping:
    """The bijection of gold columns (rows of `overlap`) to predicted ones (its columns)
    with the largest total overlap, as `scipy.optimize.linear_sum_assignment` picks it.

    >>> best_by_overlap([[1, 3], [2, 0]])
    ((0, 1), (1, 0))
    """
    if len(overlap) <= 2:  # most results: no scipy import (a sixth of a small run's time)
        return _best_of_two(overlap)
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(np.array(overlap, dtype=np.float64), maximize=True)
    return tuple((int(r), int(c)) for r, c in zip(rows, cols, strict=True))


def _best_of_two(overlap: list[list[int]]) -> Mapping:
    """`linear_sum_assignment(overlap, maximize=True)` for one or two columns, including its
    choice between equal totals (the swap when the first gold column overlaps its second
    candidate more; checked against scipy in the tests)."""
    if len(overlap) == 1:
        return ((0, 0),)
    (a, b), (c, d) = overlap
    swap = a + d < b + c or (a + d == b + c and b > a)
    return ((0, 1), (1, 0)) if swap else ((0, 0), (1, 1))
