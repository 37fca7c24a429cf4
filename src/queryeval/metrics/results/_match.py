"""Row matching on encoded columns: exact multiset overlap, and overlap under tolerance.

Rows are packed into one int64 key (mixed radix over the column codes; re-ranked exactly
when the radix would overflow), so equal keys mean equal rows. Float columns compared with
tolerance stay floats and are matched after grouping rows by their exact key.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from queryeval.metrics.results._codes import BLOCK, Codes, fold
from queryeval.metrics.results._scratch import scratch_array, scratch_rows, scratch_zeros

_PACK_LIMIT = 2**62


class RowKeys:
    """One int64 key per row of both sides, built column by column: equal keys exactly when
    all codes so far are equal. Mixed radix; on overflow both sides are re-ranked together,
    so a key means the same row on either side."""

    def __init__(self, n_pred: int, n_gold: int) -> None:
        self.pred = scratch_zeros(n_pred, np.int64)  # see _scratch: ordinary pages
        self.gold = scratch_zeros(n_gold, np.int64)
        self.span = 1

    def add(self, pred_codes: Codes, gold_codes: Codes, cardinality: int) -> None:
        """Append one column (codes in ``[0, cardinality)`` on both sides)."""
        if cardinality <= 1:
            return
        if self.span * cardinality >= _PACK_LIMIT:
            self._rerank()
        for key, codes in ((self.pred, pred_codes), (self.gold, gold_codes)):
            fold(key, codes, cardinality, first=self.span == 1)
        self.span *= cardinality

    def _rerank(self) -> None:
        joint, self.span = rerank(np.concatenate([self.pred, self.gold]))
        self.pred, self.gold = joint[: len(self.pred)], joint[len(self.pred) :]


def pack_both(
    pred_codes: Sequence[np.ndarray], gold_codes: Sequence[np.ndarray], cardinalities: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Row keys of both sides from per-column codes (see :class:`RowKeys`)."""
    n_pred = len(pred_codes[0]) if pred_codes else 0
    n_gold = len(gold_codes[0]) if gold_codes else 0
    keys = RowKeys(n_pred, n_gold)
    for p, g, card in zip(pred_codes, gold_codes, cardinalities, strict=True):
        keys.add(p, g, card)
    return keys.pred, keys.gold


def rerank(key: np.ndarray) -> tuple[np.ndarray, int]:
    """Replace keys by dense codes ``0..k-1`` (exact: a dictionary, not a hash digest)."""
    if not len(key):
        return key, 1
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a core dependency
        uniques, inverse = np.unique(key, return_inverse=True)
        return inverse.astype(np.int64).reshape(-1), len(uniques)
    encoded = pa.array(key).dictionary_encode()
    return encoded.indices.to_numpy().astype(np.int64), len(encoded.dictionary)


def _runs(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct keys of a sorted array with each run's start and length."""
    if not len(sorted_keys):
        empty = np.empty(0, dtype=np.int64)
        return sorted_keys, empty, empty
    change = np.empty(len(sorted_keys), dtype=bool)
    change[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    lengths = np.empty_like(starts)  # run lengths, without np.append's and np.diff's copies
    np.subtract(starts[1:], starts[:-1], out=lengths[:-1])
    lengths[-1] = len(sorted_keys) - starts[-1]
    return sorted_keys[starts], starts, lengths


def _common(uniq_a: np.ndarray, uniq_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indexes into two sorted unique arrays of the keys they share."""
    if not len(uniq_a) or not len(uniq_b):
        empty = np.empty(0, dtype=np.int64)
        return empty, empty
    where = np.searchsorted(uniq_b, uniq_a)
    where[where == len(uniq_b)] = 0
    hit = uniq_b[where] == uniq_a
    return np.flatnonzero(hit), where[hit]


KEY_RANGE_ROWS = 1 << 14
"""Rows per side in one range of sorted keys (see `key_ranges`): 128 KiB int64 temporaries."""


def key_ranges(sorted_p: np.ndarray, sorted_g: np.ndarray) -> list[tuple[slice, slice]]:
    """Slices of two sorted key arrays, cut at shared key values about every
    `KEY_RANGE_ROWS` rows of either side, so that each key's rows on both sides lie in one
    pair of slices. Working range by range keeps each temporary array small: glibc maps
    arrays past 32 MiB fresh from the system on every allocation, and every page of a
    fresh mapping faults (slow on virtual machines; growth from 1M to 5M rows was 2.5x
    superlinear), where small arrays reuse freed memory.

    >>> key_ranges(np.array([1, 2]), np.array([2, 3]))
    [(slice(0, 2, None), slice(0, 2, None))]
    """
    n_p, n_g = len(sorted_p), len(sorted_g)
    if max(n_p, n_g) <= KEY_RANGE_ROWS:
        return [(slice(0, n_p), slice(0, n_g))]
    cuts = np.unique(np.concatenate([sorted_p[KEY_RANGE_ROWS::KEY_RANGE_ROWS],
                                     sorted_g[KEY_RANGE_ROWS::KEY_RANGE_ROWS]]))  # fmt: skip
    at_p = [0, *np.searchsorted(sorted_p, cuts).tolist(), n_p]
    at_g = [0, *np.searchsorted(sorted_g, cuts).tolist(), n_g]
    return [(slice(a, b), slice(c, d))
            for a, b, c, d in zip(at_p, at_p[1:], at_g, at_g[1:], strict=False)
            if b > a or d > c]  # fmt: skip


def multiset_overlap(pred: np.ndarray, gold: np.ndarray, *, overwrite: bool = False) -> int:
    """Size of the multiset intersection: the sum over keys of min(count in pred, count in
    gold). `overwrite`: sort the arrays in place (no copies)."""
    if overwrite:
        pred.sort()
        gold.sort()
        sorted_p, sorted_g = pred, gold
    else:
        sorted_p, sorted_g = np.sort(pred), np.sort(gold)
    total = 0
    for range_p, range_g in key_ranges(sorted_p, sorted_g):
        up, _, cp = _runs(sorted_p[range_p])
        ug, _, cg = _runs(sorted_g[range_g])
        ia, ib = _common(up, ug)
        total += int(np.minimum(cp[ia], cg[ib]).sum())
    return total


def distinct(key: np.ndarray) -> np.ndarray:
    """The distinct keys (set semantics)."""
    return np.unique(key)


def distinct_rows(key: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (key, float values) rows; floats compared by exact value."""
    if not len(key):
        return key, values
    stacked = np.column_stack([key, np.ascontiguousarray(values).view(np.int64)])
    unique = np.unique(stacked, axis=0)
    return unique[:, 0].copy(), np.ascontiguousarray(unique[:, 1:]).view(np.float64)


def close(a: np.ndarray, b: np.ndarray, abs_tol: float, rel_tol: float) -> np.ndarray:
    """Elementwise ``math.isclose``: ``|a-b| <= max(rel_tol * max(|a|,|b|), abs_tol)``."""
    bound = np.maximum(rel_tol * np.maximum(np.abs(a), np.abs(b)), abs_tol)
    return np.abs(a - b) <= bound


def tolerant_overlap(
    pred_key: np.ndarray,
    pred_values: np.ndarray,
    gold_key: np.ndarray,
    gold_values: np.ndarray,
    abs_tol: float,
    rel_tol: float,
    *,
    overwrite: bool = False,
    pred_blank: np.ndarray | None = None,
    gold_blank: np.ndarray | None = None,
) -> tuple[int, bool]:
    """Maximum number of (pred, gold) row pairs with equal keys and all values close, and
    whether any group was too dense for an exact matching (then a greedy lower bound).
    `overwrite`: the keys' memory may be reused (see `sort_keys`). `*_blank`: where the
    values mean nothing (the key says NULL, NaN or infinite there; read as 0.0); None:
    nowhere.

    A maximum bipartite matching, not a greedy one: greedily taking exact pairs first can
    lose matches (pred {0, 1}, gold {1, 2}, abs_tol 1 has two matches, not one).
    """
    # any order within a run of equal keys gives the same matching: no stable sort needed
    order_p, sorted_p = sort_keys(pred_key, overwrite=overwrite)
    order_g, sorted_g = sort_keys(gold_key, overwrite=overwrite)
    total = 0
    approximate = False
    for range_p, range_g in key_ranges(sorted_p, sorted_g):  # see key_ranges: small arrays
        matched, greedy = _tolerant_range(
            sorted_p[range_p], order_p[range_p], (pred_values, pred_blank),
            sorted_g[range_g], order_g[range_g], (gold_values, gold_blank), abs_tol, rel_tol,
        )  # fmt: skip
        total += matched
        approximate |= greedy
    return total, approximate


def sort_keys(key: np.ndarray, *, overwrite: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(an order that sorts `key`, the sorted keys), without `np.argsort` where it can:
    argsort reads the keys through indexes, so past the caches it grows far faster than
    n log n (5M keys cost 12x 1M), and so would a gather of all keys by the order.
    Instead one `np.sort` of (key, row) packed into int64, SIMD-sorted in place. A key too
    wide to fit beside its row number is packed by its high bits only; the keys are then
    sorted apart (`np.sort`), and the order is re-sorted by the keys in just the runs of
    rows that share their high bits (one argsort over those rows; runs of distinct keys
    sharing them are rare). `overwrite`: the sorted keys may take `key`'s memory (a 5M-row
    side then needs 40 MB less). Non-negative keys only, else `np.argsort`. Equal keys come
    in any order. `key`: int64; the order is int32 where the rows allow.

    >>> order, keys = sort_keys(np.array([3, 1, 3, 0]))
    >>> order.tolist(), keys.tolist()
    ([3, 1, 0, 2], [0, 1, 3, 3])
    """
    assert key.dtype == np.int64, "row keys are int64"
    n = len(key)
    shift = max(1, (n - 1).bit_length())
    if not n or shift > 31 or int(key.min()) < 0:
        order = np.argsort(key)
        return order, key[order]
    drop = max(0, int(key.max()).bit_length() + shift - 63)  # low key bits left out
    if drop:
        packed = np.right_shift(key, drop, out=scratch_array(n, np.int64))
    elif overwrite:
        packed = key
    else:
        packed = scratch_array(n, np.int64)
        np.copyto(packed, key)
    packed <<= shift
    order = scratch_rows(n)  # int32, as n < 2**31: half the memory of int64
    packed |= order
    packed.sort()
    np.bitwise_and(packed, (1 << shift) - 1, out=order, casting="unsafe")
    if not drop:
        packed >>= shift
        return order, packed
    shared = _shared_runs(packed, shift)  # positions whose high bits another row shares
    in_runs = order[shared]
    by_key = np.argsort(key[in_runs], kind="stable")  # the runs stay apart: high bits first
    del packed
    if overwrite:
        ordered = key
    else:
        ordered = scratch_array(n, np.int64)
        np.copyto(ordered, key)
    ordered.sort()
    order[shared] = in_runs[by_key]
    return order, ordered


def _shared_runs(packed: np.ndarray, shift: int) -> np.ndarray:
    """Positions of sorted packed (high bits, row) values in runs of two or more equal
    high bits, scanned in blocks (5M-element temporaries would take fresh pages, slow).

    >>> _shared_runs(np.array([0b100, 0b1001, 0b1010, 0b1011, 0b1100]), 2).tolist()
    [1, 2, 3]
    """
    n = len(packed)
    tied = np.zeros(n, dtype=bool)
    for start in range(0, n - 1, BLOCK):
        stop = min(start + BLOCK, n - 1)
        step = packed[start + 1 : stop + 1] ^ packed[start:stop]
        same = step < (1 << shift)  # equal high bits: only the row bits differ
        tied[start:stop] |= same
        tied[start + 1 : stop + 1] |= same
    return np.flatnonzero(tied)


Values = tuple[np.ndarray, "np.ndarray | None"]  # float values, where they mean nothing


def _rows_of(values: Values, rows: np.ndarray) -> np.ndarray:
    """The values of `rows` (a copy), 0.0 where they mean nothing (`np.take`: faster than
    fancy indexing on 2-D arrays)."""
    floats, blank = values
    out = np.take(floats, rows, axis=0)
    if blank is not None:
        np.copyto(out, 0.0, where=np.take(blank, rows, axis=0))
    return out


def _tolerant_range(
    sorted_p: np.ndarray,
    order_p: np.ndarray,
    pred_values: Values,
    sorted_g: np.ndarray,
    order_g: np.ndarray,
    gold_values: Values,
    abs_tol: float,
    rel_tol: float,
) -> tuple[int, bool]:
    """`tolerant_overlap` of the rows whose sorted keys are given (with their row order)."""
    up, sp, cp = _runs(sorted_p)
    ug, sg, cg = _runs(sorted_g)
    ia, ib = _common(up, ug)
    if not len(ia):
        return 0, False
    sp, cp, sg, cg = sp[ia], cp[ia], sg[ib], cg[ib]
    single = (cp == 1) & (cg == 1)
    total = 0
    approximate = False
    # the range's values in key order, in one gather a side (groups are then slices)
    values_a, values_b = _rows_of(pred_values, order_p), _rows_of(gold_values, order_g)
    if single.any():
        a, b = values_a[sp[single]], values_b[sg[single]]
        total += int(close(a, b, abs_tol, rel_tol).all(axis=1).sum())
    for start_p, n_p, start_g, n_g in zip(
        sp[~single].tolist(),
        cp[~single].tolist(),
        sg[~single].tolist(),
        cg[~single].tolist(),
        strict=True,
    ):
        a, b = values_a[start_p : start_p + n_p], values_b[start_g : start_g + n_g]
        matched, greedy = group_matching(a, b, abs_tol, rel_tol)
        total += matched
        approximate |= greedy
    return total, approximate


# Candidate pairs above which a multi-column group is matched greedily (memory bound).
MAX_CANDIDATE_PAIRS = 5_000_000


def group_matching(
    a: np.ndarray, b: np.ndarray, abs_tol: float, rel_tol: float
) -> tuple[int, bool]:
    """Maximum matching between rows of ``a`` and ``b`` (2-D float arrays) under closeness;
    the flag says a too-dense multi-column group got a greedy lower bound instead."""
    if a.shape[1] == 1:
        return _sorted_matching(np.sort(a[:, 0]), np.sort(b[:, 0]), abs_tol, rel_tol), False
    try:
        return _bipartite_matching(a, b, abs_tol, rel_tol), False
    except _TooDense:
        return _greedy_matching(a, b, abs_tol, rel_tol), True


class _TooDense(Exception):
    """More candidate pairs than MAX_CANDIDATE_PAIRS."""


def _greedy_matching(a: np.ndarray, b: np.ndarray, abs_tol: float, rel_tol: float) -> int:
    """A valid (not always maximum) matching: both sides sorted row-wise, two pointers."""
    a = a[np.lexsort(a.T[::-1])]
    b = b[np.lexsort(b.T[::-1])]
    i = j = matched = 0
    while i < len(a) and j < len(b):
        if close(a[i], b[j], abs_tol, rel_tol).all():
            matched += 1
            i += 1
            j += 1
        elif a[i, 0] < b[j, 0]:
            i += 1
        else:
            j += 1
    return matched


def _sorted_matching(a: np.ndarray, b: np.ndarray, abs_tol: float, rel_tol: float) -> int:
    """One value per row: two pointers over both sorted lists.

    Optimal because each value's set of close partners is an interval whose ends move right
    as the value grows (checked against a brute-force matching in the tests).
    """
    i = j = matched = 0
    xs, ys = a.tolist(), b.tolist()
    while i < len(xs) and j < len(ys):
        x, y = xs[i], ys[j]
        if abs(x - y) <= max(rel_tol * max(abs(x), abs(y)), abs_tol):
            matched += 1
            i += 1
            j += 1
        elif x < y:
            i += 1
        else:
            j += 1
    return matched


def _bipartite_matching(a: np.ndarray, b: np.ndarray, abs_tol: float, rel_tol: float) -> int:
    """Several values per row: Hopcroft-Karp (SciPy) over the pairs that are close."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    rows, cols = _close_pairs(a, b, abs_tol, rel_tol)
    if not len(rows):
        return 0
    graph = csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(len(a), len(b)))
    match = maximum_bipartite_matching(graph, perm_type="column")
    return int((match >= 0).sum())


def _close_pairs(
    a: np.ndarray, b: np.ndarray, abs_tol: float, rel_tol: float, block: int = 1 << 22
) -> tuple[np.ndarray, np.ndarray]:
    """All (i, j) with rows a[i] and b[j] close in every column, in memory-bounded blocks.

    Candidates come from a window on the first column (sorted), so only nearby pairs are
    checked; the window bound is conservative for the relative tolerance.
    """
    order = np.argsort(b[:, 0], kind="stable")
    first = b[order, 0]
    x = a[:, 0]
    reach = np.maximum(abs_tol, rel_tol * np.abs(x) / max(1.0 - rel_tol, 1e-12))
    reach += 4 * np.finfo(np.float64).eps * (np.abs(x) + reach)  # rounding of x -/+ reach
    lo = np.searchsorted(first, x - reach, side="left")
    hi = np.searchsorted(first, x + reach, side="right")
    counts = hi - lo
    if int(counts.sum()) > MAX_CANDIDATE_PAIRS:
        raise _TooDense
    rows_out: list[np.ndarray] = []
    cols_out: list[np.ndarray] = []
    start = 0
    while start < len(a):
        stop = start
        budget = 0
        while stop < len(a) and (budget == 0 or budget + counts[stop] <= block):
            budget += int(counts[stop])
            stop += 1
        span = counts[start:stop]
        i = np.repeat(np.arange(start, stop), span)
        offsets = np.arange(len(i)) - np.repeat(np.cumsum(span) - span, span)
        j = order[np.repeat(lo[start:stop], span) + offsets]
        keep = close(a[i], b[j], abs_tol, rel_tol).all(axis=1)
        rows_out.append(i[keep])
        cols_out.append(j[keep])
        start = stop
    return np.concatenate(rows_out), np.concatenate(cols_out)
