"""Row policies: multiset vs set, NULLs, float tolerance, empty results, ordered with ties."""

from __future__ import annotations

import math
from collections import Counter
from decimal import Decimal

import pytest

from queryeval.metrics import compare_results

A = ["a"]
AB = ["a", "b"]


def test_identical_results_are_exact() -> None:
    result = compare_results((AB, [(1, "x"), (2, "y")]), (AB, [(2, "y"), (1, "x")]))
    assert result.exact
    assert (result.precision, result.recall, result.f1) == (1.0, 1.0, 1.0)
    assert result.reason is None
    assert result.rows == "multiset"


def test_duplicates_count_under_multiset_but_not_under_set() -> None:
    pred = (A, [(1,), (1,), (2,)])
    gold = (A, [(1,), (2,)])
    multiset = compare_results(pred, gold, rows="multiset")
    assert not multiset.exact
    assert multiset.matched_rows == 2
    assert multiset.precision == pytest.approx(2 / 3)
    assert multiset.recall == 1.0
    assert multiset.f1 == pytest.approx(0.8)
    assert "3 rows predicted, 2 expected" in (multiset.reason or "")
    as_set = compare_results(pred, gold, rows="set")
    assert as_set.exact
    assert (as_set.pred_rows, as_set.gold_rows) == (2, 2)


def test_missing_duplicate_is_a_recall_loss() -> None:
    result = compare_results((A, [(1,)]), (A, [(1,), (1,)]))
    assert result.matched_rows == 1
    assert (result.precision, result.recall) == (1.0, 0.5)


def test_f1_formula_on_a_partial_match() -> None:
    pred = (A, [(1,), (2,), (3,), (9,)])
    gold = (A, [(1,), (2,), (3,), (4,), (5,), (6,)])
    result = compare_results(pred, gold)
    p, r = 3 / 4, 3 / 6
    assert result.precision == p
    assert result.recall == r
    assert result.f1 == pytest.approx(2 * p * r / (p + r))
    assert (
        result.reason
        == "4 rows predicted, 6 expected; 3 expected rows not found; 1 unexpected rows"
    )


def test_null_equals_null_by_default_and_not_when_disabled() -> None:
    pred = (AB, [(None, 1), (2, 3)])
    gold = (AB, [(None, 1), (2, 3)])
    assert compare_results(pred, gold).exact
    strict = compare_results(pred, gold, null_equals_null=False)
    assert not strict.exact
    assert strict.matched_rows == 1


def test_null_is_not_a_value() -> None:
    assert not compare_results((A, [(None,)]), (A, [("None",)])).exact
    assert not compare_results((A, [(None,)]), (A, [(0,)])).exact
    assert not compare_results((A, [(None,)]), (A, [(float("nan"),)])).exact


def test_point_one_plus_point_two_is_forgiven_by_default() -> None:
    pred = (A, [(0.1 + 0.2,)])
    gold = (A, [(0.3,)])
    assert 0.1 + 0.2 != 0.3
    assert compare_results(pred, gold).exact  # the default rel_tol=1e-9
    assert not compare_results(pred, gold, rel_tol=0).exact  # exact floats on request
    assert compare_results(pred, gold, rel_tol=0, abs_tol=1e-9).exact
    assert not compare_results((A, [(0.31,)]), gold).exact
    assert not compare_results((A, [(0.3 * (1 + 2e-9),)]), gold).exact  # beyond 1e-9


def test_tolerance_applies_after_alignment_on_float_columns_only() -> None:
    pred = (["n", "x"], [(1, 2.0000001), (2, 1.0)])
    gold = (["x", "n"], [(1.0, 2), (2.0, 1)])
    assert compare_results(pred, gold, abs_tol=1e-6).exact
    # integers compare exactly even with a tolerance
    assert not compare_results((["n"], [(1,)]), (["n"], [(2,)]), abs_tol=5).exact


def test_tolerance_matching_is_maximal_not_greedy() -> None:
    # exact pairs first would match 1-1 and leave 0 and 2 apart (1 match); the best is 2
    pred = (A, [(0.0,), (1.0,)])
    gold = (A, [(1.0,), (2.0,)])
    assert compare_results(pred, gold, abs_tol=1.0).matched_rows == 2


def test_tolerance_with_several_float_columns() -> None:
    pred = (["k", "x", "y"], [("a", 1.0, 2.0), ("a", 1.0005, 5.0), ("b", 0.0, 0.0)])
    gold = (["k", "x", "y"], [("a", 1.0, 5.0004), ("a", 1.0004, 2.0), ("b", 0.0, 0.0)])
    result = compare_results(pred, gold, abs_tol=1e-3)
    assert result.exact
    assert not compare_results(pred, gold, abs_tol=1e-5).exact


def test_nan_and_infinities_under_tolerance() -> None:
    values = [(math.nan,), (math.inf,), (-math.inf,), (None,), (1.0,)]
    assert compare_results((A, values), (A, list(reversed(values))), abs_tol=0.5).exact
    assert not compare_results((A, [(math.inf,)]), (A, [(1e308,)]), rel_tol=0.5).exact


def test_empty_vs_empty_is_exact() -> None:
    result = compare_results((AB, []), (AB, []))
    assert result.exact
    assert (result.precision, result.recall, result.f1) == (1.0, 1.0, 1.0)


def test_empty_vs_non_empty() -> None:
    empty_pred = compare_results((AB, []), (AB, [(1, 2)]))
    assert not empty_pred.exact
    assert (empty_pred.precision, empty_pred.recall, empty_pred.f1) == (0.0, 0.0, 0.0)
    empty_gold = compare_results((AB, [(1, 2)]), (AB, []))
    assert not empty_gold.exact
    assert (empty_gold.precision, empty_gold.recall, empty_gold.f1) == (0.0, 0.0, 0.0)


def test_ordered_rows_must_follow_gold_order() -> None:
    gold = (AB, [(1, "x"), (2, "y"), (3, "z")])
    shuffled = (AB, [(1, "x"), (3, "z"), (2, "y")])
    result = compare_results(shuffled, gold, rows="ordered", order_keys=["a"])
    assert not result.exact
    assert result.order_ok is False
    assert result.f1 == 1.0  # the same rows, only in another order
    assert result.reason == "rows out of order from row 1"
    assert compare_results(gold, gold, rows="ordered", order_keys=["a"]).exact


def test_ties_on_the_sort_key_may_permute() -> None:
    gold = (AB, [(1, "x"), (2, "p"), (2, "q"), (2, "r"), (3, "z")])
    pred = (AB, [(1, "x"), (2, "r"), (2, "p"), (2, "q"), (3, "z")])
    query = "SELECT a, b FROM t ORDER BY a"
    result = compare_results(pred, gold, gold_query=query)
    assert result.rows == "ordered"
    assert result.order_keys == ("a",)
    assert result.exact
    # moving a row out of its tie group is an order error
    moved = (AB, [(2, "r"), (1, "x"), (2, "p"), (2, "q"), (3, "z")])
    assert not compare_results(moved, gold, gold_query=query).exact


def test_ties_on_two_keys() -> None:
    cols = ["a", "b", "c"]
    gold = (cols, [(1, 1, "p"), (1, 1, "q"), (1, 2, "r"), (2, 1, "s")])
    ok = (cols, [(1, 1, "q"), (1, 1, "p"), (1, 2, "r"), (2, 1, "s")])
    bad = (cols, [(1, 2, "r"), (1, 1, "p"), (1, 1, "q"), (2, 1, "s")])
    query = "SELECT a, b, c FROM t ORDER BY a DESC, b"
    assert compare_results(ok, gold, gold_query=query).exact
    assert not compare_results(bad, gold, gold_query=query).exact


def test_ordered_without_known_keys_is_position_by_position() -> None:
    gold = (AB, [(1, "x"), (1, "y")])
    swapped = (AB, [(1, "y"), (1, "x")])
    result = compare_results(swapped, gold, rows="ordered")
    assert not result.exact
    assert any("position by position" in note for note in result.notes)
    # an ORDER BY on an expression: ties unknown, so also strict
    expr = compare_results(swapped, gold, gold_query="SELECT a, b FROM t ORDER BY lower(b)")
    assert expr.rows == "ordered" and not expr.exact


def test_order_by_in_a_subquery_does_not_order_the_result() -> None:
    gold = (A, [(1,), (2,)])
    pred = (A, [(2,), (1,)])
    query = "SELECT a FROM (SELECT a FROM t ORDER BY a) AS s"
    result = compare_results(pred, gold, gold_query=query)
    assert result.rows == "multiset"
    assert result.exact


def test_ordered_with_tolerance_and_ties() -> None:
    gold = (["g", "v"], [(1, 0.3), (1, 0.5), (2, 0.1)])
    pred = (["g", "v"], [(1, 0.5000001), (1, 0.1 + 0.2), (2, 0.1)])
    assert compare_results(pred, gold, order_keys=["g"], abs_tol=1e-6).exact
    assert not compare_results(pred, gold, order_keys=["v"], abs_tol=1e-6).exact


def test_unparseable_gold_query_falls_back_to_multiset_with_a_note() -> None:
    gold = "SELEC a FROM t ORDER BY ("
    result = compare_results((A, [(2,), (1,)]), (A, [(1,), (2,)]), gold_query=gold)
    assert result.rows == "multiset"
    assert result.exact
    assert any("not parsed" in note for note in result.notes)
    # without the word ORDER the text alone shows no ordering: not parsed, nothing to note
    plain = compare_results((A, [(2,), (1,)]), (A, [(1,), (2,)]), gold_query="SELEC FROM (")
    assert plain.rows == "multiset" and plain.exact and plain.notes == ()


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="rows='sorted'"):
        compare_results((A, []), (A, []), rows="sorted")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="abs_tol"):
        compare_results((A, []), (A, []), abs_tol=-1)
    with pytest.raises(ValueError, match="rel_tol"):
        compare_results((A, []), (A, []), rel_tol=1.5)


def test_result_is_json_able() -> None:
    import json

    data = compare_results((AB, [(1, 2)]), (AB, [(1, 3)])).to_dict()
    assert json.loads(json.dumps(data))["column_mapping"] == [["a", "a"], ["b", "b"]]


def test_tolerance_at_the_exact_boundary_with_several_float_columns() -> None:
    # |3.7 - 0.7| == 3.0 in floating point, while 3.7 - 3.0 rounds above 0.7
    pred = (["x", "y"], [(3.7, 7.3)])
    gold = (["x", "y"], [(0.7, 8.7)])
    assert compare_results(pred, gold, abs_tol=3.0).exact


def test_dense_tolerance_groups_fall_back_to_a_flagged_greedy_matching(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from queryeval.metrics.results import _match

    monkeypatch.setattr(_match, "MAX_CANDIDATE_PAIRS", 10)
    pred = (["x", "y"], [(0.0, float(i % 2)) for i in range(8)])
    gold = (["x", "y"], [(1e-9, float(i % 2)) for i in range(8)])
    result = compare_results(pred, gold, abs_tol=1e-6)
    assert result.exact  # the greedy matching still finds every pair here
    assert any("matched greedily" in note for note in result.notes)
    assert not any("greedily" in n for n in compare_results(pred, gold, abs_tol=1e-12).notes)


def test_nested_lists_and_maps() -> None:
    # KQL dynamic columns and Cypher collect()/map projections
    gold = (["k", "tags", "props"], [("a", [1, 2], {"x": 1, "y": [None, "z"]})])
    same = (["k", "tags", "props"], [("a", [1.0, 2], {"y": [None, "z"], "x": Decimal("1")})])
    reordered_list = (["k", "tags", "props"], [("a", [2, 1], {"x": 1, "y": [None, "z"]})])
    assert compare_results(same, gold).exact
    assert not compare_results(reordered_list, gold).exact


def test_matching_range_by_range_gives_the_same_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Large inputs are matched over ranges of sorted keys (small temporaries); cut into
    ranges of a few rows, the overlaps are those of one pass."""
    import numpy as np

    from queryeval.metrics.results import _match

    rng = np.random.default_rng(3)
    cases = []
    for n_p, n_g, keys in [(200, 180, 40), (500, 500, 3), (50, 300, 1000), (0, 20, 5), (30, 0, 5)]:
        kp, kg = rng.integers(0, keys, n_p), rng.integers(0, keys, n_g)
        vp = np.round(rng.normal(0, 1, (n_p, 2)), 1)
        vg = np.round(rng.normal(0, 1, (n_g, 2)), 1)
        cases.append((kp, vp, kg, vg))
    whole = [(_match.multiset_overlap(kp, kg), _match.tolerant_overlap(kp, vp, kg, vg, 0.1, 0))
             for kp, vp, kg, vg in cases]  # fmt: skip
    monkeypatch.setattr(_match, "KEY_RANGE_ROWS", 7)
    assert len(_match.key_ranges(np.sort(cases[0][0]), np.sort(cases[0][2]))) > 5
    ranged = [(_match.multiset_overlap(kp, kg), _match.tolerant_overlap(kp, vp, kg, vg, 0.1, 0))
              for kp, vp, kg, vg in cases]  # fmt: skip
    assert ranged == whole


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("high", [2, 1000, 2**30, 2**40, 2**62])
def test_sort_keys_sorts_by_packing_or_by_argsort(high: int, overwrite: bool) -> None:
    """Packed (key, row) sorting where key and row fit in 63 bits, packed by the high bits
    and finished run by run where they do not, `np.argsort` where a key is negative: each
    way an order that sorts the keys. `overwrite` may reuse the key's memory, and only
    then."""
    import numpy as np

    from queryeval.metrics.results._match import sort_keys

    rng = np.random.default_rng(high % 997)
    for n in (0, 1, 7, 70_000):
        for low in (0, -5):
            key = rng.integers(low, high, n, dtype=np.int64)
            given = key.copy()
            order, ordered = sort_keys(given, overwrite=overwrite)
            assert (key[order] == ordered).all()
            assert (ordered == np.sort(key)).all()
            assert sorted(order.tolist()) == list(range(n))  # a permutation of the rows
            if not overwrite:
                assert (given == key).all()


@pytest.mark.parametrize("overwrite", [False, True])
def test_sort_keys_where_distinct_wide_keys_share_their_high_bits(overwrite: bool) -> None:
    """Wide keys whose high bits alone do not order them: clusters of small keys (a NULL
    in the leading column), duplicates, and keys that differ only in their lowest bits."""
    import numpy as np

    from queryeval.metrics.results._match import sort_keys

    rng = np.random.default_rng(3)
    n = 50_000
    cases = {
        "small keys among wide ones": np.where(
            rng.random(n) < 0.2, rng.integers(0, 2**28, n), rng.integers(0, 2**58, n)
        ),
        "low bits only": (rng.integers(0, 4, n) << 58) | rng.integers(0, 16, n),
        "duplicated wide keys": rng.integers(0, 2**62, 500)[rng.integers(0, 500, n)],
        "one value": np.full(n, 2**61 + 3),
    }
    for name, key in cases.items():
        key = key.astype(np.int64)
        order, ordered = sort_keys(key.copy(), overwrite=overwrite)
        assert (ordered == np.sort(key)).all(), name
        assert (key[order] == ordered).all(), name
        assert len(np.unique(order)) == n, name


def test_multiset_overlap_in_place_equals_on_copies() -> None:
    import numpy as np

    from queryeval.metrics.results._match import multiset_overlap

    rng = np.random.default_rng(8)
    pred, gold = rng.integers(0, 50, 4000), rng.integers(0, 60, 3000)
    expected = sum((Counter(pred.tolist()) & Counter(gold.tolist())).values())
    assert multiset_overlap(pred, gold) == expected
    assert multiset_overlap(pred.copy(), gold.copy(), overwrite=True) == expected


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("high", [2**30, 2**58])
def test_sort_keys_on_arrays_from_the_system_allocator(high: int, overwrite: bool) -> None:
    """Past 4 MiB the sort's arrays come from the system allocator (`_scratch`): the same
    answers, packed whole (narrow keys) or by high bits (wide ones)."""
    import numpy as np
    import pyarrow as pa

    from queryeval.metrics.results._match import sort_keys
    from queryeval.metrics.results._scratch import NUMPY_HUGE_PAGE_BYTES

    n = NUMPY_HUGE_PAGE_BYTES // 4 + 1000  # the int32 order too
    key = np.random.default_rng(n).integers(0, high, n)
    key[: n // 10] = key[n // 10 : 2 * (n // 10)]  # duplicates
    order, ordered = sort_keys(key.copy(), overwrite=overwrite)
    assert isinstance(order.base, pa.Buffer) and order.dtype == np.int32
    assert (ordered == np.sort(key)).all() and (key[order] == ordered).all()


def test_scratch_arrays_are_writable_and_zeroed_on_request() -> None:
    import numpy as np
    import pyarrow as pa

    from queryeval.metrics.results._scratch import (
        NUMPY_HUGE_PAGE_BYTES,
        scratch_array,
        scratch_rows,
        scratch_zeros,
    )

    n = NUMPY_HUGE_PAGE_BYTES // 4
    rows = scratch_rows(n)
    assert isinstance(rows.base, pa.Buffer) and (rows == np.arange(n)).all()
    zeros = scratch_zeros(n, np.int64)
    assert zeros.flags.writeable and not zeros.any()
    small = scratch_array(10, np.int64)
    assert small.base is None  # below 4 MiB: np.empty
