"""The small-rows fast path of compare_results (Counter on canonical rows) gives exactly the
general path's ComparisonResult, on every policy, or declines."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.metrics import ResultSet, compare_results
from queryeval.metrics.results import _compare

SETTINGS = settings(max_examples=300, deadline=None)

scalars = st.one_of(
    st.none(),
    st.integers(-2, 2),
    st.sampled_from([0.5, -0.0, 0.0, 0.1 + 0.2, 0.3, math.nan, 1.0, 2.0]),
    st.sampled_from(["a", "b", "A", ""]),
    st.booleans(),
    st.sampled_from([Decimal("1.00"), Decimal("0.5")]),
    st.sampled_from([dt.date(2024, 1, 1), dt.datetime(2024, 1, 1), dt.timedelta(0)]),
)
# mostly ints and strings, as most answers are: the fast path must often answer
plain = st.one_of(st.none(), st.integers(0, 3), st.sampled_from(["x", "y"]))
NAMES = ["a", "b", "c", "A", "n"]


@st.composite
def pair(draw: st.DrawFn) -> tuple[ResultSet, ResultSet]:
    """A gold result and a prediction derived from it: columns renamed or reordered, rows
    shuffled, dropped, duplicated or changed."""
    values = draw(st.sampled_from([plain, scalars]))
    k = draw(st.integers(1, 3))
    gold_names = draw(st.lists(st.sampled_from(NAMES), min_size=k, max_size=k))
    rows = draw(st.lists(st.tuples(*[values] * k), max_size=6))
    gold = ResultSet(gold_names, rows)
    order = draw(st.permutations(range(k)))
    pred_rows = [tuple(r[i] for i in order) for r in rows]
    if draw(st.booleans()):
        pred_rows = draw(st.permutations(pred_rows))
    if pred_rows and draw(st.booleans()):
        pred_rows = pred_rows[1:] + pred_rows[:1] * draw(st.integers(0, 2))
    if draw(st.booleans()):
        pred_rows = [*pred_rows, *draw(st.lists(st.tuples(*[values] * k), max_size=2))]
    renamed = draw(st.booleans())
    pred_names = [f"p{i}" if renamed else gold_names[i] for i in order]
    if draw(st.integers(0, 5)) == 0:  # a column more or fewer
        pred_names, pred_rows = pred_names[:-1], [r[:-1] for r in pred_rows]
    return ResultSet(pred_names, pred_rows), gold


policies = st.fixed_dictionaries(
    {},
    optional={
        "rows": st.sampled_from(["auto", "ordered", "multiset", "set"]),
        "columns": st.sampled_from(["permutation", "by_name", "by_position", "gold_subset"]),
        "rel_tol": st.sampled_from([0.0, 1e-9]),
        "null_equals_null": st.booleans(),
        "max_permutations": st.sampled_from([1, 2, 10_000]),
        "order_keys": st.sampled_from([(0,), ("a",), ()]),
        "gold_query": st.sampled_from(["SELECT a FROM t ORDER BY a", "SELECT a FROM t"]),
    },
)


def general(pred: ResultSet, gold: ResultSet, **options: Any) -> Any:
    original = _compare.small_comparison
    _compare.small_comparison = lambda *a, **k: None  # type: ignore[assignment]
    try:
        return compare_results(pred, gold, **options)
    finally:
        _compare.small_comparison = original


def same(a: Any, b: Any) -> bool:
    """Equal ComparisonResults (NaN-free: every field compares with ==)."""
    return a.to_dict() == b.to_dict()


@SETTINGS
@given(pair(), policies)
def test_the_fast_path_equals_the_general_path(both: Any, options: dict[str, Any]) -> None:
    pred, gold = both
    assert same(compare_results(pred, gold, **options), general(pred, gold, **options))


@SETTINGS
@given(pair())
def test_the_fast_path_equals_the_general_path_under_the_defaults(both: Any) -> None:
    pred, gold = both
    assert same(compare_results(pred, gold), general(pred, gold))


def answered(pred: ResultSet, gold: ResultSet, **options: Any) -> bool:
    from queryeval.metrics.results import ValuePolicy
    from queryeval.metrics.results._rows import Options
    from queryeval.metrics.results._small import small_comparison

    opts = Options(0.0, options.get("rel_tol", 1e-9), True, ValuePolicy())
    rows = options.get("rows", "multiset")
    columns = options.get("columns", "permutation")
    return small_comparison(pred, gold, rows, columns, opts, 10_000) is not None


GOLD = ResultSet(["name", "n"], [("ada", 3), ("bob", 1), ("cy", 1)])


@pytest.mark.parametrize(
    ("pred", "options", "taken"),
    [
        (ResultSet(["n", "name"], [(1, "bob"), (3, "ada"), (1, "cy")]), {}, True),
        (ResultSet(["x", "y"], [("bob", 1), ("ada", 3), ("cy", 1)]), {}, True),  # renamed
        (ResultSet(["name", "n"], [("bob", 1)]), {}, True),  # wrong: scored with the names
        (ResultSet(["name", "n"], [("ada", 3.0), ("bob", 1), ("cy", 1)]), {}, True),  # equal
        (ResultSet(["name", "n"], [("ada", 3.1), ("bob", 1), ("cy", 1)]), {}, False),  # float
        (ResultSet(["x", "y"], [("ada", 3.0), ("bob", 1), ("cy", 1)]), {}, False),  # renamed
        (ResultSet(["n"], [(3.0,), (1,), (1,)]), {}, False),  # a column missing
        (ResultSet(["name", "n"], [("ada", 3.0), ("bob", 1), ("cy", 1)]), {"rel_tol": 0.0}, True),
        (ResultSet(["name", "n"], [("bob", 1), ("ada", 3), ("cy", 1)]), {"rows": "ordered"}, False),
        (ResultSet(["name", "n"], [("ada", 3), ("bob", 1), ("cy", 1)]), {"rows": "ordered"}, True),
    ],
)
def test_which_comparisons_the_fast_path_answers(
    pred: ResultSet, options: dict[str, Any], taken: bool
) -> None:
    assert answered(pred, GOLD, **options) is taken
    assert same(compare_results(pred, GOLD, **options), general(pred, GOLD, **options))


def test_arrow_results_take_the_general_path() -> None:
    import pyarrow as pa

    table = pa.table({"name": ["ada"], "n": [3]})
    assert not answered(ResultSet.from_arrow(table), GOLD)


@pytest.mark.parametrize(
    ("pred_rows", "gold_rows"),
    [
        # distinct rows, one changed: the cells differ, no mapping can be exact
        ([(1, "a", 0), (2, "b", 0), (-1, "z", 9)], [(1, "a", 0), (2, "b", 0), (3, "c", 0)]),
        # the names' mapping is wrong but another is exact (the cells are the same)
        ([(0, "a", 1), (0, "b", 2)], [(1, "a", 0), (2, "b", 0)]),
        # the same cells, no exact mapping (rows recombined)
        ([(1, "a", 2), (2, "b", 1)], [(1, "a", 1), (2, "b", 2)]),
        # repeated rows (the multiset path), one unmatched
        ([(1, "a", 0), (1, "a", 0), (2, "b", 0)], [(1, "a", 0), (2, "b", 0), (2, "b", 0)]),
        # one row a side, equal and not
        ([(3, "x", 1)], [(3, "x", 1)]),
        ([(3, "x", 1)], [(1, "x", 3)]),
        ([(3, "x", 1)], [(4, "x", 1)]),
    ],
)
@pytest.mark.parametrize("rows", ["auto", "ordered", "multiset", "set"])
def test_the_shortcuts_of_small_rows_equal_the_general_path(
    pred_rows: list[tuple[Any, ...]], gold_rows: list[tuple[Any, ...]], rows: str
) -> None:
    """One row a side, distinct rows as sets, and the unmatched rows' cells as the proof
    that no column mapping is exact: each answer is the general path's."""
    pred = ResultSet(["n", "name", "id"], [(r[2], r[1], r[0]) for r in pred_rows])
    gold = ResultSet(["id", "name", "n"], gold_rows)
    assert same(compare_results(pred, gold, rows=rows), general(pred, gold, rows=rows))
