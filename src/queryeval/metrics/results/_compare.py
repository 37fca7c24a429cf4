"""``compare_results``: one comparator of query results for every engine.

Rows are compared as whole rows after the columns are aligned:

- ``precision = matched / predicted rows``, ``recall = matched / gold rows``,
  ``f1 = 2PR / (P + R)``, where ``matched`` is the size of the multiset intersection (under
  ``rows="set"``, of the two sets of distinct rows). When both sides have no rows,
  P = R = F1 = 1; a 0/0 with only one side empty is 0.
- ``exact``: the columns align under the column policy and the rows are equal under the row
  policy: same multiset (or set); for ``ordered``, also in gold's order, where rows tied on
  the gold's sort keys may come in any order among themselves.
- ``legacy_recall``: seed 002's number (see ``queryeval.metrics.results._legacy``), computed
  only when asked for (``legacy=True``); None otherwise.

When the columns do not align (a gold column has no counterpart, or an extra predicted
column outside ``gold_subset``), no row can be equal: matched = 0 and ``exact`` is False.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from queryeval.languages import SortKey, result_ordering
from queryeval.metrics.results._canonical import ValuePolicy
from queryeval.metrics.results._columns import (
    Alignment,
    ColumnView,
    Mapping,
    align_by_name,
    align_by_position,
    search_permutation,
)
from queryeval.metrics.results._encode import (
    TAG_CARDINALITY,
    encode_exact,
    encode_numeric,
    numeric_kind,
)
from queryeval.metrics.results._legacy import LEGACY_ROW_LIMIT, legacy_recall
from queryeval.metrics.results._resultset import ResultLike, ResultSet, as_result_set
from queryeval.metrics.results._rows import (
    Options,
    Pair,
    RowOutcome,
    compare_rows,
    encode_rows,
    is_tolerant,
    pair_encoder,
    row_counts,
    rows_equal,
    tolerant_pair,
)
from queryeval.metrics.results._small import BEST_NOTE, NAMES_NOTE, small_comparison

RowPolicy = Literal["auto", "ordered", "multiset", "set"]
ColumnPolicy = Literal["by_name", "by_position", "permutation", "gold_subset"]
_ROW_POLICIES = ("auto", "ordered", "multiset", "set")
_COLUMN_POLICIES = ("by_name", "by_position", "permutation", "gold_subset")
DEFAULT_MAX_PERMUTATIONS = 10_000
# Equivalent aggregations differ in the last bits (0.1 + 0.2 vs 0.3, SUM in another order):
# a relative tolerance of 1e-9 forgives that and nothing a person would call a different
# number. ``rel_tol=0`` compares floats exactly.
DEFAULT_REL_TOL = 1e-9


def _check_comparison(
    prediction: ResultLike,
    reference: ResultLike,
    rows: str,
    columns: str,
    abs_tol: float,
    rel_tol: float,
    max_permutations: int,
) -> tuple[ResultSet, ResultSet]:
    """Both sides as ResultSets, once the policies are known to be valid (else ValueError;
    a side that is not a result is a TypeError)."""
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
    return as_result_set(prediction, "pred"), as_result_set(reference, "gold")


@dataclass(frozen=True, slots=True)
class ComparisonResult:
    """The comparison of one predicted result with one gold result."""

    exact: bool
    precision: float
    recall: float
    f1: float
    legacy_recall: float | None  # None: not asked for (legacy=False)
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


def compare_results(
    prediction: ResultLike,
    reference: ResultLike,
    *,
    rows: RowPolicy = "auto",
    columns: ColumnPolicy = "permutation",
    abs_tol: float = 0.0,
    rel_tol: float = DEFAULT_REL_TOL,
    null_equals_null: bool = True,
    gold_query: str | None = None,
    language: str | None = None,
    order_keys: Sequence[SortKey] | None = None,
    max_permutations: int = DEFAULT_MAX_PERMUTATIONS,
    naive_timezone: str | None = "UTC",
    date_equals_midnight: bool = True,
    legacy_row_limit: int = LEGACY_ROW_LIMIT,
    legacy: bool = False,
) -> ComparisonResult:
    """Compare a predicted query result with the gold one (see the module docstring).

    By default column names are ignored (``columns="permutation"``: any one-to-one mapping
    of columns that makes the rows equal, as the field's execution accuracy does) and
    floats compare within ``rel_tol=1e-9``.

    Each side is a ResultSet, a ``(columns, rows)`` pair, a list of dict rows or an Arrow,
    pandas or polars table. ``rows="auto"`` is ``ordered`` when ``order_keys`` are given or
    ``gold_query`` (in ``language``, default SQL) has a top-level ordering, else
    ``multiset``. ``abs_tol`` and ``rel_tol`` apply ``math.isclose`` to numeric columns
    holding floats or decimals, after the columns and rows are aligned; integer columns
    always compare exactly. ``legacy=True`` also computes seed 002's ``legacy_recall`` (an
    O(n*m) scan of up to ``legacy_row_limit`` rows per side); by default it is left None.

    >>> gold = (["name", "n"], [("ada", 3), ("bob", 1)])
    >>> r = compare_results((["n", "name"], [(1, "bob"), (3, "ada")]), gold)
    >>> r.exact, r.f1, r.rows
    (True, 1.0, 'multiset')
    >>> r = compare_results((["name", "n"], [("bob", 1), ("ada", 3)]), gold,
    ...                     gold_query="SELECT name, n FROM t ORDER BY n DESC")
    >>> r.exact, r.f1, r.reason
    (False, 1.0, 'rows out of order from row 0')
    """
    p, g = _check_comparison(
        prediction, reference, rows, columns, abs_tol, rel_tol, max_permutations
    )
    options = _options(
        float(abs_tol), float(rel_tol), null_equals_null, naive_timezone, date_equals_midnight
    )
    notes: list[str] = []
    row_policy, keys = _row_policy(rows, gold_query, language, order_keys, notes)
    tie_columns = _resolve_keys(keys, g.columns, notes) if row_policy == "ordered" else ()
    legacy_value = legacy_recall(p, g, row_limit=legacy_row_limit) if legacy else None

    small = small_comparison(p, g, row_policy, columns, options, max_permutations)
    known: dict[Mapping, RowOutcome] = {}  # row outcomes the permutation search computed
    if small is not None:  # small Python rows: the same answer by Counter
        alignment, small_rows, small_notes = small
        if not alignment.missing and (not alignment.extra or columns == "gold_subset"):
            return _small_result(
                small_rows, alignment, p, g, row_policy, columns, tie_columns, legacy_value,
                (*notes, *small_notes),
            )  # fmt: skip
        known[alignment.pairs] = small_rows
        notes.extend(small_notes)
    elif columns == "permutation":
        alignment = _permutation(
            p, g, row_policy, tie_columns, options, max_permutations, notes, known
        )
    elif columns == "by_position":
        alignment = align_by_position(g.num_columns, p.num_columns)
    else:
        alignment = align_by_name(g.columns, p.columns)

    gold_names, pred_names = g.columns, p.columns
    mapping = tuple([(gold_names[gi], pred_names[pj]) for gi, pj in alignment.pairs])
    missing = tuple([gold_names[i] for i in alignment.missing]) if alignment.missing else ()
    extra = tuple([pred_names[j] for j in alignment.extra]) if alignment.extra else ()

    def result(rows: RowOutcome, column_problem: str | None) -> ComparisonResult:
        precision, recall, f1 = _prf(rows.matched, rows.pred_rows, rows.gold_rows)
        equal = column_problem is None and rows_equal(rows, row_policy)
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
            legacy_recall=legacy_value,
            matched_rows=rows.matched,
            pred_rows=rows.pred_rows,
            gold_rows=rows.gold_rows,
            rows=row_policy,
            columns=columns,
            column_mapping=mapping,
            missing_columns=missing,
            extra_columns=extra,
            order_keys=tuple([g.columns[i] for i in tie_columns]) if tie_columns else (),
            order_ok=rows.order_ok,
            reason=reason,
            notes=tuple(notes),
        )

    column_problem = _column_problem(missing, extra, columns)
    if column_problem is not None:
        n_pred, n_gold = row_counts(p, g, row_policy, options)
        return result(RowOutcome(0, n_pred, n_gold, None), column_problem)
    if alignment.pairs in known:  # the search compared the rows under this mapping already
        return result(known[alignment.pairs], None)

    tolerant = tolerant_pair(p, g, options)
    encoded = encode_rows(
        alignment.pairs,
        pair_encoder(p, g, options, tolerant),
        p.num_rows,
        g.num_rows,
        _tie_positions(tie_columns, alignment.pairs),
        options,
        last=tolerant,
    )
    return result(compare_rows(encoded, p.num_rows, g.num_rows, row_policy, options), None)


def _small_result(
    rows: RowOutcome,
    alignment: Alignment,
    p: ResultSet,
    g: ResultSet,
    row_policy: str,
    columns: str,
    tie_columns: tuple[int, ...],
    legacy_value: float | None,
    notes: tuple[str, ...],
) -> ComparisonResult:
    """The ComparisonResult of the fast path's answer (columns that align; every row
    matched exactly, never greedily), as `compare_results` builds it."""
    matched, n_pred, n_gold = rows.matched, rows.pred_rows, rows.gold_rows
    precision, recall, f1 = _prf(matched, n_pred, n_gold)
    equal = matched == n_pred == n_gold and (row_policy != "ordered" or bool(rows.order_ok))
    gold_names, pred_names = g.columns, p.columns
    extra = alignment.extra
    return ComparisonResult(
        equal,
        precision,
        recall,
        f1,
        legacy_value,
        matched,
        n_pred,
        n_gold,
        row_policy,
        columns,
        tuple([(gold_names[gi], pred_names[pj]) for gi, pj in alignment.pairs]),
        (),
        tuple([pred_names[j] for j in extra]) if extra else (),
        tuple([gold_names[i] for i in tie_columns]) if tie_columns else (),
        rows.order_ok,
        None if equal else _row_reason(rows),
        notes,
    )


@functools.lru_cache(maxsize=64)
def _options(abs_tol: float, rel_tol: float, null_equals_null: bool,
             naive_timezone: str | None, date_equals_midnight: bool) -> Options:  # fmt: skip
    """The value policy of a comparison (frozen: one per distinct set of arguments)."""
    policy = ValuePolicy(naive_timezone=naive_timezone, date_equals_midnight=date_equals_midnight)
    return Options(abs_tol, rel_tol, null_equals_null, policy)


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
            parsed = result_ordering(gold_query, language or "sql")
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
    if not missing and not extra:
        return None
    problems = []
    if missing:
        problems.append(f"missing columns: {', '.join(missing)}")
    if extra and policy != "gold_subset":
        problems.append(f"extra columns: {', '.join(extra)}")
    return "; ".join(problems) if problems else None


def _prf(matched: int, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    if n_pred == 0 and n_gold == 0:
        return 1.0, 1.0, 1.0
    precision = matched / n_pred if n_pred else 0.0
    recall = matched / n_gold if n_gold else 0.0
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return precision, recall, f1


def _row_reason(outcome: RowOutcome) -> str:
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
    options: Options,
    max_permutations: int,
    notes: list[str],
    known: dict[Mapping, RowOutcome],
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
        return options.tolerant and is_tolerant({a.numeric, b.numeric})

    def pair(gi: int, pj: int) -> Pair:
        gv, pv = gold_views[gi], pred_views[pj]
        if tolerant(gv, pv):
            assert gv.tags is not None and pv.tags is not None
            return Pair(gv.tags, pv.tags, TAG_CARDINALITY, gv.values, pv.values)
        return Pair(gv.codes, pv.codes, shared.cardinality)

    def rows_for(mapping: Mapping) -> RowOutcome:
        encoded = encode_rows(
            mapping, pair, p.num_rows, g.num_rows, _tie_positions(tie_columns, mapping), options
        )
        known[mapping] = compare_rows(encoded, p.num_rows, g.num_rows, row_policy, options)
        return known[mapping]

    def is_exact(mapping: Mapping) -> bool:
        return rows_equal(rows_for(mapping), row_policy)

    first = by_name.pairs if not by_name.missing else None
    names_pair_up = not by_name.missing and not by_name.extra
    search = search_permutation(
        gold_views,
        pred_views,
        tolerant=tolerant,
        tolerance=(options.abs_tol, options.rel_tol),
        as_set=row_policy == "set",
        is_exact=is_exact,
        max_steps=max_permutations,
        first_try=first,
        want_best=not names_pair_up,  # without an exact mapping the names are used
    )
    if search.capped:
        notes.append(f"column permutation search stopped after {max_permutations} steps")
    if search.mapping is not None:
        return Alignment(search.mapping, (), ())
    if names_pair_up:  # the names say which column is which
        notes.append(NAMES_NOTE)
        return Alignment(by_name.pairs, (), ())
    notes.append(BEST_NOTE)
    chosen = search.best or by_name.pairs
    return Alignment(chosen, (), ())


def _view(data: Any, codes: np.ndarray, options: Options) -> ColumnView:
    kind = numeric_kind(data) if options.tolerant else "other"
    if kind in {"int", "float", "null"}:
        tags, values = encode_numeric(data)
        return ColumnView(codes, kind, tags, values)
    return ColumnView(codes, kind)
