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
EXACT = {"rel_tol": 0.0}


@pytest.mark.parametrize(
    ("pred", "options", "taken"),
    [
        (ResultSet(["n", "name"], [(1, "bob"), (3, "ada"), (1, "cy")]), {}, True),
        (ResultSet(["x", "y"], [("bob", 1), ("ada", 3), ("cy", 1)]), {}, True),  # renamed
        (ResultSet(["name", "n"], [("bob", 1)]), {}, True),  # wrong: scored with the names
        (ResultSet(["name", "n"], [("ada", 3.0), ("bob", 1), ("cy", 1)]), {}, True),  # equal
        # floats far apart under the tolerance: it changes nothing, the fast path answers
        (ResultSet(["name", "n"], [("ada", 3.1), ("bob", 1), ("cy", 1)]), {}, True),
        (ResultSet(["x", "y"], [("ada", 3.0), ("bob", 1), ("cy", 1)]), {}, True),  # renamed
        # a float within (about twice) the tolerance of a gold value: the general path
        (ResultSet(["name", "n"], [("ada", 3 + 3e-9), ("bob", 1), ("cy", 1)]), {}, False),
        (ResultSet(["x", "y"], [("ada", 3 + 1e-12), ("bob", 1), ("cy", 1)]), {}, False),
        (ResultSet(["name", "n"], [("ada", 3 + 1e-12), ("bob", 1), ("cy", 1)]), EXACT, True),
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


# -- floats under a tolerance, decimals, dates, NULLs, duplicates --------------------------

EPS = 2.0**-52


def _near(x: float) -> st.SearchStrategy[float]:
    """`x` and values around it: inside, at and past the default tolerance's bound, twice
    it (the fast path's margin), and one unit in the last place away."""
    steps = [0.0, 0.4e-9, 0.9e-9, 1e-9, 1.1e-9, 2e-9, 2.1e-9, 3e-9, 1e-6, 0.5]
    shifts = [0.25, 0.5, 0.75, 1.0, 1.1, -0.5, 1e-9, 2e-9, 3e-9]  # against abs_tol
    return (
        st.sampled_from(steps).map(lambda d: x * (1 + d))
        | st.sampled_from(shifts).map(lambda d: x + d)
        | st.sampled_from([math.nextafter(x, math.inf), math.nextafter(x, -math.inf)])
    )


float_values = st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e6, 0.1 + 0.2, 0.3]).flatmap(_near) | (
    st.sampled_from([math.nan, math.inf, -math.inf, 1e-300, 5e-324, 2.0**53, 1.7e308])
)
int_values = st.integers(-3, 3) | st.sampled_from(
    [2**53 - 1, 2**53, 2**53 + 1, -(2**53) - 1, 10**9, 10**9 + 1, 10**6]
)
decimal_values = st.sampled_from(
    [Decimal("2.5"), Decimal("2.50"), Decimal("1"), Decimal("1.000"), Decimal("0.1"),
     Decimal("0.30000000000000004"), Decimal("NaN"), Decimal("-0"), Decimal(2**53 + 1),
     Decimal("1e30"), Decimal("Infinity"), Decimal("2.5000000001")]
)  # fmt: skip
date_values = st.sampled_from([dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(1970, 1, 1)])
families = {
    "float": float_values | int_values,
    "int": int_values,
    "decimal": decimal_values | float_values,
    "date": date_values,
    "str": st.sampled_from(["a", "b", "1"]),
    "mixed": float_values | decimal_values | date_values | st.sampled_from(["a", True]),
    "temporal": date_values | st.just(dt.datetime(2024, 1, 1)),  # a datetime: canonical
}


@st.composite
def typed_pair(draw: st.DrawFn) -> tuple[ResultSet, ResultSet]:
    """A gold result of typed columns (NULLs sprinkled in) and a prediction derived from it:
    rows shuffled, duplicated, dropped or changed to a nearby or far value, columns
    reordered or renamed."""
    k = draw(st.integers(1, 3))
    kinds = draw(st.lists(st.sampled_from(sorted(families)), min_size=k, max_size=k))
    cells = [families[kind] | st.none() for kind in kinds]
    rows = draw(st.lists(st.tuples(*cells), max_size=6))
    rows += draw(st.lists(st.sampled_from(rows), max_size=2)) if rows else []  # duplicates
    names = ["a", "b", "c"][:k]
    gold = ResultSet(names, rows)
    pred_rows = list(draw(st.permutations(rows)))
    for _ in range(draw(st.integers(0, 3))):  # change a cell: to a nearby or another value
        if not pred_rows:
            break
        i, j = draw(st.integers(0, len(pred_rows) - 1)), draw(st.integers(0, k - 1))
        old = pred_rows[i][j]
        new = draw(_near(float(old)) if isinstance(old, float) else cells[j])
        pred_rows[i] = (*pred_rows[i][:j], new, *pred_rows[i][j + 1 :])
    if pred_rows and draw(st.booleans()):
        pred_rows = pred_rows[1:] + pred_rows[:1] * draw(st.integers(0, 2))
    order = draw(st.permutations(range(k)))
    renamed = draw(st.booleans())
    pred_names = [f"p{i}" if renamed else names[i] for i in order]
    return ResultSet(pred_names, [tuple(r[i] for i in order) for r in pred_rows]), gold


typed_policies = st.fixed_dictionaries(
    {},
    optional={
        "rows": st.sampled_from(["auto", "ordered", "multiset", "set"]),
        "columns": st.sampled_from(["permutation", "by_name", "by_position", "gold_subset"]),
        "rel_tol": st.sampled_from([0.0, 1e-9, 1e-6]),
        "abs_tol": st.sampled_from([0.0, 1e-9, 0.5]),
        "max_permutations": st.sampled_from([1, 2, 10_000]),
        "date_equals_midnight": st.booleans(),
        "naive_timezone": st.sampled_from(["UTC", "Europe/Paris", None]),
    },
)


def same_or_nan(a: Any, b: Any) -> bool:
    """Equal ComparisonResults, a NaN figure equal to a NaN figure."""
    left, right = a.to_dict(), b.to_dict()
    for key in ("precision", "recall", "f1"):
        if math.isnan(left[key]) and math.isnan(right[key]):
            left[key] = right[key] = 0.0
    return bool(left == right)


@settings(max_examples=150, deadline=None)
@given(typed_pair(), typed_policies)
def test_the_fast_path_equals_the_general_path_on_typed_columns(
    both: Any, options: dict[str, Any]
) -> None:
    """Floats compared within a tolerance (values inside, at and just past its bound), NaN,
    infinities, decimals, dates, integers near 2**53, NULLs and repeated rows: the fast
    path's whole result is the general path's."""
    pred, gold = both
    assert same_or_nan(compare_results(pred, gold, **options), general(pred, gold, **options))


def typed_result(n: int, wrong: bool) -> tuple[ResultSet, ResultSet]:
    """The benchmark's shape: an id, a float amount with NULLs, a decimal price, a date."""
    rows = [(i * 7919 % 10**6, None if i % 10 == 3 else round(i * 1.37, 2),
             Decimal(i * 131 % 10**5) / 100, dt.date(2020, 1, 1) + dt.timedelta(days=i))
            for i in range(n)]  # fmt: skip
    pred = [(r[3], r[1], r[2], r[0]) for r in reversed(rows)]
    if wrong:
        pred[0] = (dt.date(1999, 1, 1), 1.5, Decimal("0.01"), -1)
    return ResultSet(["day", "amount", "price", "id"], pred), ResultSet(
        ["id", "price", "amount", "day"], rows
    )


@pytest.mark.parametrize(
    ("pred", "gold", "options"),
    [
        ([(1.5,)], [(1.0,)], {"abs_tol": 0.5}),  # at abs_tol
        ([(1.5,)], [(1.0,)], {"abs_tol": 0.49}),
        ([(1.0 + 1e-9,)], [(1.0,)], {}),  # at rel_tol
        ([(math.nextafter(1.0 + 2e-9, 2),)], [(1.0,)], {}),  # just past the margin
        ([(float(2**53),)], [(2**53 + 1,)], {}),  # an integer a float would round
        ([(1e-300,)], [(0.0,)], {"abs_tol": 1e-300}),
        ([(1.0, "a"), (2.0, "b")], [(1.0 + 1e-12, "b"), (2.0, "a")], {}),  # rows differ
        ([(Decimal("0.1"), 1)], [(0.1, 1.0)], {}),  # a decimal is its float
    ],
)
@pytest.mark.parametrize("rows", ["multiset", "set", "ordered"])
def test_values_at_the_tolerance_bound(
    pred: list[tuple[Any, ...]], gold: list[tuple[Any, ...]], options: dict[str, Any], rows: str
) -> None:
    k = len(gold[0])
    p, g = ResultSet(["a", "b"][:k], pred), ResultSet(["a", "b"][:k], gold)
    assert same(compare_results(p, g, rows=rows, **options), general(p, g, rows=rows, **options))


@pytest.mark.parametrize("n", [1, 10, 100])
@pytest.mark.parametrize("wrong", [False, True])
def test_typed_results_take_the_fast_path(n: int, wrong: bool) -> None:
    """Floats, decimals, dates and NULLs under the default tolerance are answered by the
    fast path (and as the general path answers)."""
    pred, gold = typed_result(n, wrong)
    assert answered(pred, gold)
    assert same(compare_results(pred, gold), general(pred, gold))
    assert compare_results(pred, gold).exact is not wrong


SAME_OBJECT_NAN = math.nan


@pytest.mark.parametrize(
    ("pred", "gold"),
    [
        ([(Decimal("1e30"), 1)], [(10**30, 1)]),  # equal as given: an integral decimal's int
        ([(Decimal("0.5"), "a")], [(0.5, "a")]),  # a decimal equal to its float
        ([(Decimal("0.1"), "a")], [(0.1, "a")]),  # unequal as given, equal canonically
        ([(Decimal("-0"), 0.0)], [(0, -0.0)]),
        ([(SAME_OBJECT_NAN, 1)], [(SAME_OBJECT_NAN, 1)]),  # one NaN object: equal as given
        ([(float("nan"), 1)], [(float("nan"), 1)]),  # two NaN objects: equal canonically
        ([(2**53 + 1, 1.0)], [(float(2**53), 1.0)]),  # a float would round the integer
        ([(dt.date(2024, 1, 1), None), (dt.date(2024, 1, 2), 1.5)],
         [(dt.date(2024, 1, 2), 1.5), (dt.date(2024, 1, 1), None)]),
        ([(1, "a"), (1, "a"), (2, "b")], [(1, "a"), (2, "b"), (1, "a")]),  # repeated rows
        ([(1, "a"), (2, "b")], [(2, "b"), (1, "a")]),  # out of gold's order
        # several rows, unequal as given: only the unmatched ones are compared converted
        ([(Decimal("0.1"), 1), (2.5, 2), (7, 3)], [(0.1, 1), (Decimal("2.5"), 2), (7, 3)]),
        ([(Decimal("0.1"), 1), (Decimal("0.1"), 1), (3.0, 2)],
         [(0.1, 1), (0.1, 1), (Decimal(3), 2)]),  # repeated rows: counted
        ([(Decimal("0.1"), 1), (Decimal("0.1"), 1), (3.0, 2)],
         [(0.1, 1), (3.0, 2), (Decimal(3), 2)]),  # the same rows, other counts
        ([(Decimal("0.1"), 1), (2.5, 2)], [(0.1, 2), (Decimal("2.5"), 1)]),
        ([(float("nan"), 1), (2.5, 2)], [(float("nan"), 1), (2.5, 2)]),
    ],
)  # fmt: skip
def test_rows_equal_as_given_equal_the_general_path(
    pred: list[tuple[Any, ...]], gold: list[tuple[Any, ...]]
) -> None:
    """The rows compared as given before any is converted (plain types): every answer is
    the general path's, including where only the canonical forms are equal, under every
    row and column policy, with and without a float tolerance."""
    g = ResultSet(["a", "b"], gold)
    for p in (ResultSet(["a", "b"], pred), ResultSet(["b", "a"], [(r[1], r[0]) for r in pred])):
        for rows in ("auto", "ordered", "multiset", "set"):
            for columns in ("permutation", "by_name", "by_position", "gold_subset"):
                for rel_tol in (0.0, 1e-9):
                    options: dict[str, Any] = {"rows": rows, "columns": columns,
                                               "rel_tol": rel_tol}  # fmt: skip
                    fast, slow = compare_results(p, g, **options), general(p, g, **options)
                    assert same_or_nan(fast, slow), (p, options)
