"""Column policies: by name (case), by position, gold subset, and the capped permutation search."""

from __future__ import annotations

import itertools
import random
import time

import numpy as np

from queryeval.metrics import compare_results
from queryeval.metrics.results._columns import (
    ColumnView,
    _best_of_two,
    align_by_name,
    search_permutation,
)


def test_by_name_ignores_case_and_order() -> None:
    pred = (["NAME", "Total"], [("a", 1)])
    gold = (["total", "name"], [(1, "a")])
    result = compare_results(pred, gold)
    assert result.exact
    assert result.column_mapping == (("total", "Total"), ("name", "NAME"))


def test_by_name_prefers_exact_case_then_pairs_repeats_in_order() -> None:
    alignment = align_by_name(["a", "A", "a"], ["A", "a", "a"])
    assert alignment.pairs == ((0, 1), (1, 0), (2, 2))
    assert alignment.missing == () and alignment.extra == ()


def test_missing_and_extra_columns_make_no_row_equal() -> None:
    missing = compare_results((["a"], [(1,)]), (["a", "b"], [(1, 2)]))
    assert not missing.exact
    assert missing.missing_columns == ("b",)
    assert missing.f1 == 0.0
    assert missing.reason == "missing columns: b"
    extra = compare_results((["a", "b"], [(1, 2)]), (["a"], [(1,)]))
    assert not extra.exact
    assert extra.extra_columns == ("b",)
    assert extra.reason == "extra columns: b"


def test_gold_subset_allows_extra_predicted_columns() -> None:
    pred = (["id", "Name", "debug"], [(1, "a", "x"), (2, "b", "y")])
    gold = (["name", "id"], [("b", 2), ("a", 1)])
    result = compare_results(pred, gold, columns="gold_subset")
    assert result.exact
    assert result.extra_columns == ("debug",)
    # ... but not missing ones
    assert not compare_results((["id"], [(1,)]), gold, columns="gold_subset").exact


def test_by_position_ignores_names() -> None:
    pred = (["x", "y"], [(1, "a")])
    assert compare_results(pred, (["a", "b"], [(1, "a")]), columns="by_position").exact
    assert not compare_results(pred, (["a", "b"], [("a", 1)]), columns="by_position").exact


def test_permutation_finds_the_mapping_that_keeps_rows_aligned() -> None:
    # both columns hold the same multiset of values: only the row-aligned mapping is right
    gold = (["a", "b"], [(1, 2), (2, 3), (3, 1)])
    pred = (["p", "q"], [(1, 3), (2, 1), (3, 2)])  # q is a, p is b
    result = compare_results(pred, gold, columns="permutation")
    assert result.exact
    assert result.column_mapping == (("a", "q"), ("b", "p"))


def test_permutation_reports_no_alignment() -> None:
    gold = (["a", "b"], [(1, 2), (3, 4)])
    pred = (["p", "q"], [(1, 4), (3, 2)])  # column values match, rows do not
    result = compare_results(pred, gold, columns="permutation")
    assert not result.exact
    assert any("no column permutation" in note for note in result.notes)


def _shuffled_columns(k: int, n: int, values: int, seed: int) -> tuple[tuple, tuple, list[int]]:
    rng = random.Random(seed)
    gold_rows = [tuple(rng.randrange(values) for _ in range(k)) for _ in range(n)]
    perm = list(range(k))
    rng.shuffle(perm)
    pred_rows = [tuple(row[i] for i in perm) for row in gold_rows]
    rng.shuffle(pred_rows)
    gold = ([f"g{i}" for i in range(k)], gold_rows)
    pred = ([f"p{i}" for i in range(k)], pred_rows)
    return pred, gold, perm


def test_permutation_of_fourteen_binary_columns_without_blow_up() -> None:
    # 14 columns of 0/1 values: many columns share a value multiset, so signatures alone
    # leave a large search; partial-row checks must prune it (14! is about 8.7e10)
    pred, gold, perm = _shuffled_columns(k=14, n=300, values=2, seed=3)
    start = time.perf_counter()
    result = compare_results(pred, gold, columns="permutation")
    assert result.exact
    assert time.perf_counter() - start < 20  # generous: guards against exponential search
    expected = {(f"g{perm[j]}", f"p{j}") for j in range(14)}
    assert set(result.column_mapping) == expected


def test_identical_columns_are_one_choice() -> None:
    rows = [tuple([1] * 12 + [i]) for i in range(4)]
    cols = [f"c{i}" for i in range(13)]
    result = compare_results(
        (list(reversed(cols)), [r[::-1] for r in rows]), (cols, rows), columns="permutation"
    )
    assert result.exact


def _views(matrix: np.ndarray) -> list[ColumnView]:
    return [ColumnView(np.ascontiguousarray(matrix[:, j]), "other") for j in range(matrix.shape[1])]


def test_search_visits_few_nodes_at_sixteen_columns() -> None:
    rng = np.random.default_rng(0)
    gold = rng.integers(1, 3, size=(200, 16))
    perm = rng.permutation(16)
    pred = gold[rng.permutation(200)][:, perm]
    calls = []

    def is_exact(mapping: tuple[tuple[int, int], ...]) -> bool:
        calls.append(mapping)
        return all(perm[pj] == gi for gi, pj in mapping)

    search = search_permutation(
        _views(gold),
        _views(pred),
        tolerant=lambda a, b: False,
        tolerance=(0.0, 0.0),
        as_set=False,
        is_exact=is_exact,
        max_steps=10_000,
    )
    assert search.mapping is not None
    assert not search.capped
    assert search.steps <= 16 * 16
    assert len(calls) == 1  # only complete, row-consistent mappings are evaluated


def test_search_stops_at_the_cap() -> None:
    # rows all distinct in gold, pred has columns that agree on values but never on rows
    rng = np.random.default_rng(1)
    gold = rng.integers(1, 3, size=(50, 12))
    pred = rng.integers(1, 3, size=(50, 12))
    search = search_permutation(
        _views(gold),
        _views(pred),
        tolerant=lambda a, b: False,
        tolerance=(0.0, 0.0),
        as_set=False,
        is_exact=lambda m: False,
        max_steps=25,
    )
    assert search.mapping is None
    assert search.steps <= 26


def test_permutation_with_float_tolerance() -> None:
    gold = (["x", "y"], [(0.3, 1.5), (0.7, 2.5)])
    pred = (["b", "a"], [(2.5, 0.7000001), (1.5, 0.1 + 0.2)])
    assert compare_results(pred, gold, columns="permutation", abs_tol=1e-6).exact
    assert not compare_results(pred, gold, columns="permutation").exact


def test_permutation_respects_gold_order() -> None:
    gold = (["k", "v"], [(1, "a"), (2, "b"), (3, "c")])
    in_order = (["v2", "k2"], [("a", 1), ("b", 2), ("c", 3)])
    out_of_order = (["v2", "k2"], [("b", 2), ("a", 1), ("c", 3)])
    query = "SELECT k, v FROM t ORDER BY k"
    assert compare_results(in_order, gold, columns="permutation", gold_query=query).exact
    assert not compare_results(out_of_order, gold, columns="permutation", gold_query=query).exact


def test_permutation_needs_equal_column_counts() -> None:
    result = compare_results((["a", "b"], [(1, 2)]), (["a"], [(1,)]), columns="permutation")
    assert not result.exact
    assert result.extra_columns == ("b",)


def test_the_two_column_assignment_is_scipys_choice_ties_included() -> None:
    """One or two columns skip the scipy import; the choice is linear_sum_assignment's,
    between equal totals too (every 2x2 overlap matrix of values 0-6, and large ones)."""
    from scipy.optimize import linear_sum_assignment

    rng = random.Random(5)
    large = [[rng.randrange(10**6) for _ in range(4)] for _ in range(500)]
    large += [[a, b, c, b + c - a] for a, b, c, _ in large if b + c >= a]  # ties
    for values in [*itertools.product(range(7), repeat=4), *large]:
        overlap = [list(values[:2]), list(values[2:])]
        rows, cols = linear_sum_assignment(np.array(overlap, dtype=np.float64), maximize=True)
        expected = tuple((int(r), int(c)) for r, c in zip(rows, cols, strict=True))
        assert _best_of_two(overlap) == expected, values
    assert _best_of_two([[3]]) == ((0, 0),)
