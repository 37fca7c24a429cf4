"""Rows of two results compared once their columns are aligned.

Each aligned (gold, predicted) column pair is encoded (exact codes, or tags plus floats for
numbers under tolerance) and packed into per-row keys at once, so only two int64 arrays stay
alive; the row policies (multiset, set, ordered with ties) are then counts over those keys.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from queryeval.metrics.results._canonical import ValuePolicy
from queryeval.metrics.results._codes import Codes, materialize, nonzero
from queryeval.metrics.results._columns import Mapping
from queryeval.metrics.results._encode import (
    TAG_CARDINALITY,
    blank_mask,
    cleaned,
    encode_columns,
    encode_exact,
    encode_numeric,
    numeric_kind,
)
from queryeval.metrics.results._match import (
    RowKeys,
    distinct,
    distinct_rows,
    multiset_overlap,
    tolerant_overlap,
)
from queryeval.metrics.results._resultset import ResultSet


@dataclass(frozen=True, slots=True)
class Options:
    """The value-level policy of one comparison."""

    abs_tol: float
    rel_tol: float
    null_equals_null: bool
    policy: ValuePolicy

    @property
    def tolerant(self) -> bool:
        """Whether float columns are compared with a tolerance."""
        return self.abs_tol > 0 or self.rel_tol > 0


@dataclass(frozen=True, slots=True)
class Pair:
    """One aligned column pair, encoded: exact codes (possibly lazy, see `_codes`), or tags
    plus floats under tolerance."""

    gold: Codes
    pred: Codes
    cardinality: int
    gold_values: np.ndarray | None = None
    pred_values: np.ndarray | None = None


class RowOutcome(NamedTuple):
    """Row counts of one comparison (after set de-duplication) and the order verdict (a
    named tuple: made for every comparison, several times in a permutation search)."""

    matched: int
    pred_rows: int
    gold_rows: int
    order_ok: bool | None
    first_misordered: int | None = None
    approximate: bool = False  # a dense group under tolerance was matched greedily


def rows_equal(rows: RowOutcome, row_policy: str) -> bool:
    """Same rows (and, for ``ordered``, in gold's order up to ties)."""
    same = rows.matched == rows.pred_rows == rows.gold_rows
    return same and (row_policy != "ordered" or bool(rows.order_ok))


def is_tolerant(kinds: set[str]) -> bool:
    """Tolerance applies to a pair of numeric columns where either side holds floats."""
    return "float" in kinds and kinds <= {"int", "float", "null"}


PairSource = Callable[[int, int], Pair]


def pair_encoder(
    p: ResultSet, g: ResultSet, options: Options, tolerant: Callable[[int, int], bool]
) -> PairSource:
    """Encode one (gold column, predicted column) pair on demand, in one shared code space
    (`tolerant`: `tolerant_pair`'s answer, which decides tags and floats or exact codes)."""

    def encode(gi: int, pj: int) -> Pair:
        gold_data, pred_data = g.column_data(gi), p.column_data(pj)
        if tolerant(gi, pj):
            gold_tags, gold_values = encode_numeric(gold_data)
            pred_tags, pred_values = encode_numeric(pred_data)
            return Pair(gold_tags, pred_tags, TAG_CARDINALITY, gold_values, pred_values)
        codes = encode_columns([pred_data, gold_data], options.policy)
        return Pair(codes.codes[1], codes.codes[0], codes.cardinality)

    return encode


def tolerant_pair(p: ResultSet, g: ResultSet, options: Options) -> Callable[[int, int], bool]:
    """Whether a (gold column, predicted column) pair is compared with tolerance (each
    column's kind found once: on Python rows it reads the whole column)."""
    kinds: dict[tuple[bool, int], str] = {}

    def kind(gold: bool, index: int) -> str:
        if (gold, index) not in kinds:
            kinds[gold, index] = numeric_kind((g if gold else p).column_data(index))
        return kinds[gold, index]

    def tolerant(gi: int, pj: int) -> bool:
        return options.tolerant and is_tolerant({kind(True, gi), kind(False, pj)})

    return tolerant


@dataclass(frozen=True, slots=True)
class EncodedRows:
    """Both sides' rows as keys (+ floats compared with tolerance, meaningless where
    `blank_*` says, nowhere when None) and gold's tie columns."""

    keys: RowKeys
    values_p: np.ndarray | None
    values_g: np.ndarray | None
    ok_p: np.ndarray
    ok_g: np.ndarray
    ties: list[np.ndarray]
    blank_p: np.ndarray | None = None
    blank_g: np.ndarray | None = None


def encode_rows(
    pairs: Mapping,
    source: PairSource,
    n_pred: int,
    n_gold: int,
    tie_positions: tuple[int, ...],
    options: Options,
    last: Callable[[int, int], bool] | None = None,
) -> EncodedRows:
    """Pack the aligned columns into row keys one pair at a time (codes are dropped as soon as
    they are packed, which keeps the peak memory near two int64 arrays). Pairs for which
    `last` holds (the float columns compared with tolerance, whose values are kept to the
    end) are encoded after the others, so the others' temporaries never coexist with
    them: a lower peak, and fewer fresh pages for a large result."""
    keys = RowKeys(n_pred, n_gold)
    ok_p = np.ones(n_pred, dtype=bool)
    ok_g = np.ones(n_gold, dtype=bool)
    values_p: list[np.ndarray] = []
    values_g: list[np.ndarray] = []
    blank_p: list[np.ndarray | None] = []
    blank_g: list[np.ndarray | None] = []
    ties: list[np.ndarray] = []
    indexes = list(range(len(pairs)))
    if last is not None:
        indexes.sort(key=lambda i: last(*pairs[i]))
    for index in indexes:
        pair = source(*pairs[index])
        keys.add(pair.pred, pair.gold, pair.cardinality)
        if not options.null_equals_null:
            ok_p &= nonzero(pair.pred)
            ok_g &= nonzero(pair.gold)
        gold_blank = None
        if pair.pred_values is not None and pair.gold_values is not None:
            # tagged floats: the tags (in the keys) say where the values mean something
            assert isinstance(pair.pred, np.ndarray) and isinstance(pair.gold, np.ndarray)
            gold_blank = blank_mask(pair.gold)
            values_p.append(pair.pred_values)
            values_g.append(pair.gold_values)
            blank_p.append(blank_mask(pair.pred))
            blank_g.append(gold_blank)
        if index in tie_positions:
            ties.append(materialize(pair.gold))
            if pair.gold_values is not None:
                ties.append(cleaned(pair.gold_values, gold_blank).view(np.int64))
        del pair  # its codes (Arrow buffers) go before the next pair's are made
    return EncodedRows(
        keys, _stack(values_p, n_pred), _stack(values_g, n_gold), ok_p, ok_g, ties,
        _stack_masks(blank_p, n_pred), _stack_masks(blank_g, n_gold),
    )  # fmt: skip


def compare_rows(
    encoded: EncodedRows, n_pred: int, n_gold: int, row_policy: str, options: Options
) -> RowOutcome:
    """The row outcome of one encoding. It consumes `encoded`: except under the ordered
    policy its keys are sorted in place, so an encoding is compared once."""
    key_p, key_g = encoded.keys.pred, encoded.keys.gold
    values_p, values_g = encoded.values_p, encoded.values_g
    blank_p, blank_g = encoded.blank_p, encoded.blank_g
    ok_p, ok_g = encoded.ok_p, encoded.ok_g

    approximate = False

    # rows with a NULL drop out only when NULL != NULL; otherwise every row stays, and the
    # arrays are used as they are (a masked copy of 5M-row arrays costs fresh pages)
    every_row = options.null_equals_null

    def overlap(kp: np.ndarray, kg: np.ndarray, last_use: bool) -> int:
        """The matched rows; `last_use`: nothing reads these keys afterwards, so the
        matching may sort them in place (no second copy of a large result's keys)."""
        nonlocal approximate
        if not every_row:  # masked copies, which nothing else reads
            kp, kg, last_use = kp[ok_p], kg[ok_g], True
        if values_p is None or values_g is None:
            return multiset_overlap(kp, kg, overwrite=last_use)
        vp, vg, bp, bg = values_p, values_g, blank_p, blank_g
        if not every_row:
            vp, vg = vp[ok_p], vg[ok_g]
            bp = None if bp is None else bp[ok_p]
            bg = None if bg is None else bg[ok_g]
        matched, greedy = tolerant_overlap(
            kp, vp, kg, vg, options.abs_tol, options.rel_tol, overwrite=last_use,
            pred_blank=bp, gold_blank=bg,
        )  # fmt: skip
        approximate |= greedy
        return matched

    if row_policy == "set":  # distinct rows by their values' bits: clean values first
        values_p, values_g = _cleaned(values_p, blank_p), _cleaned(values_g, blank_g)
        blank_p = blank_g = None
        key_p, values_p, ok_p = _distinct(key_p, values_p, ok_p)
        key_g, values_g, ok_g = _distinct(key_g, values_g, ok_g)
    matched = overlap(key_p, key_g, last_use=row_policy != "ordered")
    if row_policy != "ordered":
        return RowOutcome(matched, len(key_p), len(key_g), None, approximate=approximate)
    if n_pred != n_gold:
        return RowOutcome(matched, n_pred, n_gold, False, approximate=approximate)
    segment = _segments(encoded.ties, n_gold)
    ordered = RowKeys(0, 0)
    ordered.pred, ordered.gold, ordered.span = key_p.copy(), key_g.copy(), encoded.keys.span
    ordered.add(segment, segment, int(segment[-1]) + 1 if n_gold else 1)
    in_order = overlap(ordered.pred, ordered.gold, last_use=False)
    order_ok = in_order == n_gold and bool(ok_p.all()) and bool(ok_g.all())
    first_bad = None if order_ok else _first_misordered(ordered.pred, ordered.gold, segment)
    return RowOutcome(matched, n_pred, n_gold, order_ok, first_bad, approximate)


def _cleaned(values: np.ndarray | None, blank: np.ndarray | None) -> np.ndarray | None:
    return None if values is None else cleaned(values, blank)


def _stack_masks(masks: Sequence[np.ndarray | None], n: int) -> np.ndarray | None:
    """Per-column masks side by side (None: all false, in every column)."""
    if all(m is None for m in masks):
        return None
    return _stack([np.zeros(n, dtype=bool) if m is None else m for m in masks], n)


def _stack(columns: Sequence[np.ndarray], n: int) -> np.ndarray | None:
    """The float columns side by side, rows by columns (one column: a view, no copy)."""
    if not columns:
        return None
    if len(columns) == 1:
        return columns[0].reshape(n, 1)
    return np.column_stack(columns).reshape(n, len(columns))


def _matchable(codes: list[np.ndarray], n: int, options: Options) -> np.ndarray:
    """Rows that may match anything: all, unless NULL never equals NULL and the row has one."""
    ok = np.ones(n, dtype=bool)
    if not options.null_equals_null:
        for column in codes:
            ok &= column != 0
    return ok


def _distinct(
    key: np.ndarray, values: np.ndarray | None, ok: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Distinct rows; a row that can never match (NULL under null_equals_null=False) is
    distinct from every row, itself included, so each one is kept."""
    never = ~ok
    if values is None:
        kept = distinct(key[ok])
        out_values = None
    else:
        kept, out_values = distinct_rows(key[ok], values[ok])
        out_values = np.concatenate([out_values, values[never]])
    out_key = np.concatenate([kept, key[never]])
    out_ok = np.concatenate([np.ones(len(kept), bool), np.zeros(int(never.sum()), bool)])
    return out_key, out_values, out_ok


def _segments(ties: list[np.ndarray], n: int) -> np.ndarray:
    """Tie-group number of each gold row: runs of equal gold sort-key values; each row its
    own group when no sort key is known."""
    if not ties or not n:
        return np.arange(n, dtype=np.int64)
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for column in ties:
        change[1:] |= column[1:] != column[:-1]
    return np.cumsum(change, dtype=np.int64) - 1


def _first_misordered(seg_p: np.ndarray, seg_g: np.ndarray, segment: np.ndarray) -> int | None:
    """Row position where the first tie group with different rows starts (exact keys)."""
    bad = np.flatnonzero(seg_p != seg_g)
    if not len(bad):
        return None
    start = segment[bad[0]]
    return int(np.searchsorted(segment, start))


def row_counts(p: ResultSet, g: ResultSet, row_policy: str, options: Options) -> tuple[int, int]:
    if row_policy != "set":
        return p.num_rows, g.num_rows
    counts = []
    for result in (p, g):
        keys = RowKeys(result.num_rows, 0)
        for i in range(result.num_columns):
            codes = encode_exact([result.column_data(i)], options.policy)
            keys.add(codes.codes[0], np.empty(0, dtype=np.int64), codes.cardinality)
        counts.append(len(distinct(keys.pred)))
    return counts[0], counts[1]
