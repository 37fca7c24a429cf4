"""``compare_results``: one comparator of query results for every engine.

Rows are compared as whole rows after the columns are aligned:

- ``precision = matched / predicted rows``, ``recall = matched / gold rows``,
  ``f1 = 2PR / (P + R)``, where ``matched`` is the size of the multiset intersection (under
  ``rows="set"``, of the two sets of distinct rows). When both sides have no rows,
  P = R = F1 = 1; a 0/0 with only one side empty is 0.
- ``exact``: the columns align under the column policy and the rows are equal under the row
  policy: same multiset (or set); for ``ordered``, also in gold's order, where rows tied on
  the gold's sort keys may come in any order among themselves.
- ``legacy_recall``: seed 002's number (see ``queryeval.metrics._legacy``).

When the columns do not align (a gold column has no counterpart, or an extra predicted
column outside ``gold_subset``), no row can be equal: matched = 0 and ``exact`` is False.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from queryeval.metrics._canonical import ValuePolicy
from queryeval.metrics._columns import (
    Alignment,
    ColumnView,
    Mapping,
    align_by_name,
    align_by_position,
    search_permutation,
)
from queryeval.metrics._encode import (
    TAG_CARDINALITY,
    encode_exact,
    encode_numeric,
    numeric_kind,
)
from queryeval.metrics._legacy import LEGACY_ROW_LIMIT, legacy_recall
from queryeval.metrics._match import (
    RowKeys,
    distinct,
    distinct_rows,
    multiset_overlap,
    tolerant_overlap,
)
from queryeval.metrics._ordering import SortKey, gold_is_ordered
from queryeval.metrics._resultset import ResultLike, ResultSet, as_result_set

RowPolicy = Literal["auto", "ordered", "multiset", "set"]
ColumnPolicy = Literal["by_name", "by_position", "permutation", "gold_subset"]
_ROW_POLICIES = ("auto", "ordered", "multiset", "set")
_COLUMN_POLICIES = ("by_name", "by_position", "permutation", "gold_subset")
DEFAULT_MAX_PERMUTATIONS = 10_000


@dataclass(frozen=True, slots=True)
class ComparisonResult:
    """The comparison of one predicted result with one gold result."""

    exact: bool
    precision: float
    recall: float
    f1: float
    legacy_recall: float
    matched_rows: int
    pred_rows: int
    gold_rows: int
    rows: str  # the row policy applied: ordered | multiset | set
    columns: str  # the column policy applied
    column_mapping: tuple[tuple[str, str], ...]  # (gold column, predicted column)
    missing_columns: tuple[str, ...]  # gold columns with no predicted counterpart
    extra_columns: tuple[str, ...]  # predicted columns mapped to no gold column
    order_keys: tuple[str, ...] = ()  # gold columns whose ties may come in any order
    order_ok: bool | None = None  # rows in gold's order (ordered policy only)
    reason: str | None = None  # why not exact
    notes: tuple[str, ...] = ()  # policy decisions worth knowing (fallbacks, caps)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (for ``Score.details``)."""
        data = asdict(self)
        data["column_mapping"] = [list(p) for p in self.column_mapping]
        for key in ("missing_columns", "extra_columns", "order_keys", "notes"):
            data[key] = list(data[key])
        return data


@dataclass(frozen=True, slots=True)
class _Options:
    abs_tol: float
    rel_tol: float
    null_equals_null: bool
    policy: ValuePolicy

    @property
    def tolerant(self) -> bool:
        return self.abs_tol > 0 or self.rel_tol > 0


@dataclass(frozen=True, slots=True)
class _Pair:
    """One aligned column pair, encoded: exact codes, or tags plus floats under tolerance."""

    gold: np.ndarray
    pred: np.ndarray
    cardinality: int
    gold_values: np.ndarray | None = None
    pred_values: np.ndarray | None = None


@dataclass(frozen=True, slots=True)
class _Rows:
    matched: int
    pred_rows: int
    gold_rows: int
    order_ok: bool | None
    first_misordered: int | None = None
    approximate: bool = False  # a dense group under tolerance was matched greedily


def compare_results(
    pred: ResultLike,
    gold: ResultLike,
    *,
    rows: RowPolicy = "auto",
    columns: ColumnPolicy = "by_name",
    abs_tol: float = 0.0,
    rel_tol: float = 0.0,
    null_equals_null: bool = True,
    gold_query: str | None = None,
    language: str | None = None,
    order_keys: Sequence[SortKey] | None = None,
    max_permutations: int = DEFAULT_MAX_PERMUTATIONS,
    naive_timezone: str | None = "UTC",
    date_equals_midnight: bool = True,
    legacy_row_limit: int = LEGACY_ROW_LIMIT,
) -> ComparisonResult:
    """Compare a predicted query result with the gold one (see the module docstring).

    ``rows="auto"`` is ``ordered`` when ``order_keys`` are given or ``gold_query`` (in
    ``language``, default SQL) has a top-level ordering, else ``multiset``. ``abs_tol`` and
    ``rel_tol`` apply ``math.isclose`` to numeric columns holding floats or decimals, after
    the columns and rows are aligned; integer columns always compare exactly.
    """
    _check_options(rows, columns, abs_tol, rel_tol, max_permutations)
    p = as_result_set(pred, "pred")
    g = as_result_set(gold, "gold")
    options = _Options(
        float(abs_tol),
        float(rel_tol),
        null_equals_null,
        ValuePolicy(naive_timezone=naive_timezone, date_equals_midnight=date_equals_midnight),
    )
    notes: list[str] = []
    row_policy, keys = _row_policy(rows, gold_query, language, order_keys, notes)
    tie_columns = _resolve_keys(keys, g.columns, notes) if row_policy == "ordered" else ()
    legacy = legacy_recall(p, g, row_limit=legacy_row_limit)

    if columns == "permutation":
        alignment = _permutation(p, g, row_policy, tie_columns, options, max_permutations, notes)
    elif columns == "by_position":
        alignment = align_by_position(g.num_columns, p.num_columns)
    else:
        alignment = align_by_name(g.columns, p.columns)

    mapping = tuple((g.columns[gi], p.columns[pj]) for gi, pj in alignment.pairs)
    missing = tuple(g.columns[i] for i in alignment.missing)
    extra = tuple(p.columns[j] for j in alignment.extra)

    def result(rows: _Rows, column_problem: str | None) -> ComparisonResult:
        precision, recall, f1 = _prf(rows.matched, rows.pred_rows, rows.gold_rows)
        equal = column_problem is None and _rows_equal(rows, row_policy)
        reason = column_problem or (None if equal else _row_reason(rows))
        if column_problem is not None:  # the columns do not align: no row can be equal
            precision = recall = f1 = 0.0
        if rows.approximate:
            notes.append(
                "float tolerance: a group with too many close pairs for an exact matching was "
                "matched greedily, so matched_rows is a lower bound"
            )
        return ComparisonResult(
            exact=equal,
            precision=precision,
            recall=recall,
            f1=f1,
            legacy_recall=legacy,
            matched_rows=rows.matched,
            pred_rows=rows.pred_rows,
            gold_rows=rows.gold_rows,
            rows=row_policy,
            columns=columns,
            column_mapping=mapping,
            missing_columns=missing,
            extra_columns=extra,
            order_keys=tuple(g.columns[i] for i in tie_columns),
            order_ok=rows.order_ok,
            reason=reason,
            notes=tuple(notes),
        )

    column_problem = _column_problem(missing, extra, columns)
    if column_problem is not None:
        n_pred, n_gold = _row_counts(p, g, row_policy, options)
        return result(_Rows(0, n_pred, n_gold, None), column_problem)

    encoded = _encode_rows(
        alignment.pairs,
        _pair_encoder(p, g, options),
        p.num_rows,
        g.num_rows,
        _tie_positions(tie_columns, alignment.pairs),
        options,
    )
    return result(_compare_rows(encoded, p.num_rows, g.num_rows, row_policy, options), None)


def _rows_equal(rows: _Rows, row_policy: str) -> bool:
    same = rows.matched == rows.pred_rows == rows.gold_rows
    return same and (row_policy != "ordered" or bool(rows.order_ok))


# -- options ------------------------------------------------------------------------------


def _check_options(
    rows: str, columns: str, abs_tol: float, rel_tol: float, max_permutations: int
) -> None:
    if rows not in _ROW_POLICIES:
        raise ValueError(f"rows={rows!r}: expected one of {', '.join(_ROW_POLICIES)}")
    if columns not in _COLUMN_POLICIES:
        raise ValueError(f"columns={columns!r}: expected one of {', '.join(_COLUMN_POLICIES)}")
    if not (math.isfinite(abs_tol) and abs_tol >= 0):
        raise ValueError(f"abs_tol={abs_tol!r}: expected a finite number >= 0")
    if not (math.isfinite(rel_tol) and 0 <= rel_tol < 1):
        raise ValueError(f"rel_tol={rel_tol!r}: expected a number in [0, 1)")
    if max_permutations < 1:
        raise ValueError(f"max_permutations={max_permutations!r}: expected >= 1")


def _row_policy(
    rows: str,
    gold_query: str | None,
    language: str | None,
    order_keys: Sequence[SortKey] | None,
    notes: list[str],
) -> tuple[str, tuple[SortKey, ...]]:
    if rows in {"multiset", "set"}:
        return rows, ()
    if order_keys is not None:
        return "ordered", tuple(order_keys)
    parsed = None
    if gold_query is not None:
        try:
            parsed = gold_is_ordered(gold_query, language or "sql")
        except ValueError as error:
            notes.append(
                f"gold query not parsed for ordering ({error}); rows compared "
                f"{'in strict order' if rows == 'ordered' else 'as a multiset'}"
            )
    if rows == "ordered":
        return "ordered", parsed.keys if parsed is not None else ()
    if parsed is not None and parsed.ordered:
        return "ordered", parsed.keys
    return "multiset", ()


def _resolve_keys(
    keys: tuple[SortKey, ...], columns: tuple[str, ...], notes: list[str]
) -> tuple[int, ...]:
    """Gold column indexes of the longest prefix of sort keys that name output columns."""
    lowered = [c.lower() for c in columns]
    resolved: list[int] = []
    for key in keys:
        index: int | None = None
        if isinstance(key, int) and not isinstance(key, bool):
            index = key if 0 <= key < len(columns) else None
        elif isinstance(key, str):
            for candidate in (key, key.rsplit(".", 1)[-1]):
                if candidate in columns:
                    index = columns.index(candidate)
                elif candidate.lower() in lowered:
                    index = lowered.index(candidate.lower())
                if index is not None:
                    break
        if index is None:
            break
        resolved.append(index)
    if len(resolved) < len(keys):
        notes.append(
            "sort keys not all output columns: ties taken on "
            + (
                ", ".join(columns[i] for i in resolved)
                if resolved
                else "nothing, so rows must match position by position"
            )
        )
    elif not keys:
        notes.append("ordered without known sort keys: rows must match position by position")
    return tuple(resolved)


def _tie_positions(tie_columns: tuple[int, ...], pairs: Mapping) -> tuple[int, ...]:
    where = {gi: i for i, (gi, _) in enumerate(pairs)}
    return tuple(where[gi] for gi in tie_columns if gi in where)


def _column_problem(missing: tuple[str, ...], extra: tuple[str, ...], policy: str) -> str | None:
    problems = []
    if missing:
        problems.append(f"missing columns: {', '.join(missing)}")
    if extra and policy != "gold_subset":
        problems.append(f"extra columns: {', '.join(extra)}")
    return "; ".join(problems) if problems else None


# -- encoding and rows -----------------------------------------------------------------------


def _is_tolerant(kinds: set[str]) -> bool:
    return "float" in kinds and kinds <= {"int", "float", "null"}


PairSource = Callable[[int, int], _Pair]


def _pair_encoder(p: ResultSet, g: ResultSet, options: _Options) -> PairSource:
    """Encode one (gold column, predicted column) pair on demand, in one shared code space."""

    def encode(gi: int, pj: int) -> _Pair:
        gold_data, pred_data = g.column_data(gi), p.column_data(pj)
        kinds = {numeric_kind(gold_data), numeric_kind(pred_data)} if options.tolerant else set()
        if _is_tolerant(kinds):
            gold_tags, gold_values = encode_numeric(gold_data)
            pred_tags, pred_values = encode_numeric(pred_data)
            return _Pair(gold_tags, pred_tags, TAG_CARDINALITY, gold_values, pred_values)
        codes = encode_exact([pred_data, gold_data], options.policy)
        return _Pair(codes.codes[1], codes.codes[0], codes.cardinality)

    return encode


@dataclass(frozen=True, slots=True)
class _Encoded:
    """Both sides' rows as keys (+ floats compared with tolerance) and gold's tie columns."""

    keys: RowKeys
    values_p: np.ndarray | None
    values_g: np.ndarray | None
    ok_p: np.ndarray
    ok_g: np.ndarray
    ties: list[np.ndarray]


def _encode_rows(
    pairs: Mapping,
    source: PairSource,
    n_pred: int,
    n_gold: int,
    tie_positions: tuple[int, ...],
    options: _Options,
) -> _Encoded:
    """Pack the aligned columns into row keys one pair at a time (codes are dropped as soon as
    they are packed, which keeps the peak memory near two int64 arrays)."""
    keys = RowKeys(n_pred, n_gold)
    ok_p = np.ones(n_pred, dtype=bool)
    ok_g = np.ones(n_gold, dtype=bool)
    values_p: list[np.ndarray] = []
    values_g: list[np.ndarray] = []
    ties: list[np.ndarray] = []
    for index, (gi, pj) in enumerate(pairs):
        pair = source(gi, pj)
        keys.add(pair.pred, pair.gold, pair.cardinality)
        if not options.null_equals_null:
            ok_p &= pair.pred != 0
            ok_g &= pair.gold != 0
        if pair.pred_values is not None and pair.gold_values is not None:
            values_p.append(pair.pred_values)
            values_g.append(pair.gold_values)
        if index in tie_positions:
            ties.append(pair.gold)
            if pair.gold_values is not None:
                ties.append(pair.gold_values.view(np.int64))
    return _Encoded(keys, _stack(values_p, n_pred), _stack(values_g, n_gold), ok_p, ok_g, ties)


def _compare_rows(
    encoded: _Encoded, n_pred: int, n_gold: int, row_policy: str, options: _Options
) -> _Rows:
    key_p, key_g = encoded.keys.pred, encoded.keys.gold
    values_p, values_g = encoded.values_p, encoded.values_g
    ok_p, ok_g = encoded.ok_p, encoded.ok_g

    approximate = False

    def overlap(kp: np.ndarray, kg: np.ndarray) -> int:
        nonlocal approximate
        if values_p is None or values_g is None:
            return multiset_overlap(kp[ok_p], kg[ok_g])
        matched, greedy = tolerant_overlap(
            kp[ok_p], values_p[ok_p], kg[ok_g], values_g[ok_g], options.abs_tol, options.rel_tol
        )
        approximate |= greedy
        return matched

    if row_policy == "set":
        key_p, values_p, ok_p = _distinct(key_p, values_p, ok_p)
        key_g, values_g, ok_g = _distinct(key_g, values_g, ok_g)
    matched = overlap(key_p, key_g)
    if row_policy != "ordered":
        return _Rows(matched, len(key_p), len(key_g), None, approximate=approximate)
    if n_pred != n_gold:
        return _Rows(matched, n_pred, n_gold, False, approximate=approximate)
    segment = _segments(encoded.ties, n_gold)
    ordered = RowKeys(0, 0)
    ordered.pred, ordered.gold, ordered.span = key_p.copy(), key_g.copy(), encoded.keys.span
    ordered.add(segment, segment, int(segment[-1]) + 1 if n_gold else 1)
    in_order = overlap(ordered.pred, ordered.gold)
    order_ok = in_order == n_gold and bool(ok_p.all()) and bool(ok_g.all())
    first_bad = None if order_ok else _first_misordered(ordered.pred, ordered.gold, segment)
    return _Rows(matched, n_pred, n_gold, order_ok, first_bad, approximate)


def _stack(columns: Sequence[np.ndarray], n: int) -> np.ndarray | None:
    if not columns:
        return None
    return np.column_stack(columns).reshape(n, len(columns))


def _matchable(codes: list[np.ndarray], n: int, options: _Options) -> np.ndarray:
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


def _row_counts(p: ResultSet, g: ResultSet, row_policy: str, options: _Options) -> tuple[int, int]:
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


def _prf(matched: int, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    if n_pred == 0 and n_gold == 0:
        return 1.0, 1.0, 1.0
    precision = matched / n_pred if n_pred else 0.0
    recall = matched / n_gold if n_gold else 0.0
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return precision, recall, f1


def _row_reason(outcome: _Rows) -> str:
    parts = []
    if outcome.pred_rows != outcome.gold_rows:
        parts.append(f"{outcome.pred_rows} rows predicted, {outcome.gold_rows} expected")
    missing = outcome.gold_rows - outcome.matched
    unexpected = outcome.pred_rows - outcome.matched
    if missing:
        parts.append(f"{missing} expected rows not found")
    if unexpected:
        parts.append(f"{unexpected} unexpected rows")
    if not parts and outcome.order_ok is False:
        where = outcome.first_misordered
        parts.append("rows out of order" + (f" from row {where}" if where is not None else ""))
    if not parts:
        parts.append("rows differ")
    return "; ".join(parts)


# -- permutation ------------------------------------------------------------------------------


def _permutation(
    p: ResultSet,
    g: ResultSet,
    row_policy: str,
    tie_columns: tuple[int, ...],
    options: _Options,
    max_permutations: int,
    notes: list[str],
) -> Alignment:
    by_name = align_by_name(g.columns, p.columns)
    if p.num_columns != g.num_columns:
        notes.append("permutation needs as many predicted as gold columns; matched by name")
        return by_name
    gold_data = [g.column_data(i) for i in range(g.num_columns)]
    pred_data = [p.column_data(j) for j in range(p.num_columns)]
    shared = encode_exact([*pred_data, *gold_data], options.policy)
    k = p.num_columns
    pred_views = [_view(d, c, options) for d, c in zip(pred_data, shared.codes[:k], strict=True)]
    gold_views = [_view(d, c, options) for d, c in zip(gold_data, shared.codes[k:], strict=True)]

    def tolerant(a: ColumnView, b: ColumnView) -> bool:
        return options.tolerant and _is_tolerant({a.numeric, b.numeric})

    def pair(gi: int, pj: int) -> _Pair:
        gv, pv = gold_views[gi], pred_views[pj]
        if tolerant(gv, pv):
            assert gv.tags is not None and pv.tags is not None
            return _Pair(gv.tags, pv.tags, TAG_CARDINALITY, gv.values, pv.values)
        return _Pair(gv.codes, pv.codes, shared.cardinality)

    def rows_for(mapping: Mapping) -> _Rows:
        encoded = _encode_rows(
            mapping, pair, p.num_rows, g.num_rows, _tie_positions(tie_columns, mapping), options
        )
        return _compare_rows(encoded, p.num_rows, g.num_rows, row_policy, options)

    def is_exact(mapping: Mapping) -> bool:
        return _rows_equal(rows_for(mapping), row_policy)

    first = by_name.pairs if not by_name.missing else None
    search = search_permutation(
        gold_views,
        pred_views,
        tolerant=tolerant,
        tolerance=(options.abs_tol, options.rel_tol),
        as_set=row_policy == "set",
        is_exact=is_exact,
        max_steps=max_permutations,
        first_try=first,
    )
    if search.capped:
        notes.append(f"column permutation search stopped after {max_permutations} steps")
    if search.mapping is not None:
        return Alignment(search.mapping, (), ())
    notes.append(
        "no column permutation makes the rows equal; scored with the mapping that "
        "keeps the most values in common"
    )
    chosen = search.best or by_name.pairs
    return Alignment(chosen, (), ())


def _view(data: Any, codes: np.ndarray, options: _Options) -> ColumnView:
    kind = numeric_kind(data) if options.tolerant else "other"
    if kind in {"int", "float", "null"}:
        tags, values = encode_numeric(data)
        return ColumnView(codes, kind, tags, values)
    return ColumnView(codes, kind)
