"""Property tests: invariance under row/column shuffles, agreement with reference
implementations (Counter on canonical rows, networkx maximum matching), Arrow == Python."""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from decimal import Decimal
from typing import Any

import networkx as nx
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.metrics import ResultSet, compare_results
from queryeval.metrics.results import canonical
from queryeval.metrics.results._match import group_matching

SETTINGS = settings(max_examples=60, deadline=None)

scalars = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.sampled_from([0.5, -0.0, 0.0, 0.1 + 0.2, 0.3, math.nan, math.inf, 1.0]),
    st.sampled_from(["a", "b", "A", ""]),
    st.booleans(),
    st.sampled_from([Decimal("1.00"), Decimal("0.5"), Decimal("0.30")]),
    st.sampled_from([dt.date(2024, 1, 1), dt.datetime(2024, 1, 1), dt.timedelta(0)]),
)


@st.composite
def results(draw: st.DrawFn, max_columns: int = 4, max_rows: int = 8) -> ResultSet:
    k = draw(st.integers(1, max_columns))
    names = [f"c{i}" for i in range(k)]
    rows = draw(st.lists(st.tuples(*[scalars] * k), max_size=max_rows))
    return ResultSet(names, rows)


@st.composite
def pred_and_gold(draw: st.DrawFn) -> tuple[ResultSet, ResultSet]:
    """A gold result and a prediction derived from it: rows dropped, duplicated or added."""
    gold = draw(results())
    rows = list(gold.rows)
    rows = [r for r in rows if draw(st.booleans()) or len(rows) < 2]
    extra = draw(st.lists(st.tuples(*[scalars] * gold.num_columns), max_size=2))
    dupes = rows[: draw(st.integers(0, 2))]
    return ResultSet(gold.columns, rows + extra + dupes), gold


def shuffled(result: ResultSet, rnd: Any) -> ResultSet:
    order = list(range(result.num_columns))
    rnd.shuffle(order)
    rows = [tuple(row[i] for i in order) for row in result.rows]
    rnd.shuffle(rows)
    return ResultSet([result.columns[i] for i in order], rows)


def reference_matched(pred: ResultSet, gold: ResultSet) -> int:
    order = [pred.columns.index(c) for c in gold.columns]
    p = Counter(tuple(canonical(row[i]) for i in order) for row in pred.rows)
    g = Counter(tuple(canonical(v) for v in row) for row in gold.rows)
    return sum((p & g).values())


def summary(result: Any) -> tuple[Any, ...]:
    return (result.exact, result.matched_rows, result.pred_rows, result.gold_rows, result.f1)


@SETTINGS
@given(pred_and_gold(), st.randoms(use_true_random=False))
def test_invariant_under_row_and_column_shuffles(pair: Any, rnd: Any) -> None:
    pred, gold = pair
    base = compare_results(pred, gold)
    assert summary(compare_results(shuffled(pred, rnd), shuffled(gold, rnd))) == summary(base)
    for rows in ("set", "multiset"):
        a = compare_results(pred, gold, rows=rows, columns="permutation")
        b = compare_results(shuffled(pred, rnd), gold, rows=rows, columns="permutation")
        assert a.exact == b.exact


@SETTINGS
@given(pred_and_gold())
def test_matched_rows_equal_a_counter_on_canonical_rows(pair: Any) -> None:
    pred, gold = pair
    result = compare_results(pred, gold)
    expected = reference_matched(pred, gold)
    assert result.matched_rows == expected
    assert result.exact == (expected == pred.num_rows == gold.num_rows)


@SETTINGS
@given(results(), st.randoms(use_true_random=False))
def test_a_result_equals_its_own_shuffle_in_every_unordered_policy(
    gold: ResultSet, rnd: Any
) -> None:
    pred = shuffled(gold, rnd)
    renamed = ResultSet([f"x{i}" for i in range(pred.num_columns)], pred.rows)
    assert compare_results(pred, gold).exact
    assert compare_results(pred, gold, rows="set").exact
    assert compare_results(renamed, gold, columns="permutation").exact
    assert compare_results(pred, gold, abs_tol=1e-9).exact


arrow_rows = st.lists(
    st.tuples(
        st.one_of(st.none(), st.integers(-(2**60), 2**60), st.integers(0, 3)),
        st.one_of(st.none(), st.sampled_from([0.5, -0.0, 0.0, math.nan, 1e300, 0.1 + 0.2])),
        st.one_of(st.none(), st.sampled_from(["x", "y", "é", ""])),
        st.one_of(st.none(), st.booleans()),
    ),
    max_size=10,
)


def as_arrow(rows: list[tuple[Any, ...]], names: list[str]) -> ResultSet:
    types = [pa.int64(), pa.float64(), pa.string(), pa.bool_()]
    columns = {
        n: pa.array([r[i] for r in rows], t)
        for i, (n, t) in enumerate(zip(names, types, strict=True))
    }
    return ResultSet.from_arrow(pa.table(columns))


@SETTINGS
@given(arrow_rows, arrow_rows, st.sampled_from(["multiset", "set", "ordered"]))
def test_arrow_and_python_paths_agree(pred_rows: Any, gold_rows: Any, rows: Any) -> None:
    names = ["i", "f", "s", "b"]
    gold_rows = gold_rows + pred_rows[:3]
    fast = compare_results(
        as_arrow(pred_rows, names),
        as_arrow(gold_rows, names),
        rows=rows,
        order_keys=["i"] if rows == "ordered" else None,
    )
    slow = compare_results(
        ResultSet(names, pred_rows),
        ResultSet(names, gold_rows),
        rows=rows,
        order_keys=["i"] if rows == "ordered" else None,
    )
    assert summary(fast) == summary(slow)
    assert fast.order_ok == slow.order_ok


def networkx_matching(
    a: list[tuple[float, ...]], b: list[tuple[float, ...]], tol: float, rel: float
) -> int:
    graph = nx.Graph()
    left = [("a", i) for i in range(len(a))]
    graph.add_nodes_from(left)
    graph.add_nodes_from(("b", j) for j in range(len(b)))
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            if all(math.isclose(u, v, rel_tol=rel, abs_tol=tol) for u, v in zip(x, y, strict=True)):
                graph.add_edge(("a", i), ("b", j))
    matching = nx.bipartite.maximum_matching(graph, top_nodes=left)
    return len(matching) // 2


floats = st.floats(-20, 20, allow_nan=False).map(lambda x: round(x, 1))


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 2).flatmap(
        lambda k: st.tuples(
            st.lists(st.tuples(*[floats] * k), max_size=7),
            st.lists(st.tuples(*[floats] * k), max_size=7),
        )
    ),
    st.sampled_from([0.0, 0.1, 0.5, 1.0, 3.0]),
    st.sampled_from([0.0, 0.01, 0.2]),
)
def test_tolerance_matching_is_a_maximum_matching(sides: Any, tol: float, rel: float) -> None:
    import numpy as np

    a, b = sides
    if not a or not b:
        return
    got, greedy = group_matching(np.array(a, dtype=float), np.array(b, dtype=float), tol, rel)
    assert not greedy
    assert got == networkx_matching(a, b, tol, rel)


@SETTINGS
@given(st.lists(floats, max_size=8), st.lists(floats, max_size=8), st.sampled_from([0.1, 1.0]))
def test_compare_with_tolerance_matches_networkx(a: Any, b: Any, tol: float) -> None:
    result = compare_results((["x"], [(v,) for v in a]), (["x"], [(v,) for v in b]), abs_tol=tol)
    assert result.matched_rows == networkx_matching([(v,) for v in a], [(v,) for v in b], tol, 0.0)
