"""The vectorised Arrow path gives the same answers as the canonical Python path."""

from __future__ import annotations

import datetime as dt
import random
import struct
from collections import Counter
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from queryeval.metrics import ResultSet, compare_results
from queryeval.metrics.results import ValuePolicy, canonical
from queryeval.metrics.results._encode import encode_exact


def reference_matched(pred: ResultSet, gold: ResultSet) -> int:
    """Multiset intersection of canonical rows (pred columns reordered by name), by Counter."""
    order = [pred.columns.index(c) for c in gold.columns]
    p = Counter(tuple(canonical(row[i]) for i in order) for row in pred.rows)
    g = Counter(tuple(canonical(v) for v in row) for row in gold.rows)
    return sum((p & g).values())


def both_ways(pred: pa.Table, gold: pa.Table, **options: Any) -> tuple[Any, Any]:
    fast = compare_results(ResultSet.from_arrow(pred), ResultSet.from_arrow(gold), **options)
    slow = compare_results(
        ResultSet(pred.column_names, ResultSet.from_arrow(pred).rows),
        ResultSet(gold.column_names, ResultSet.from_arrow(gold).rows),
        **options,
    )
    return fast, slow


def nan_with_payload(payload: int) -> float:
    value: float = struct.unpack("d", struct.pack("Q", 0x7FF8000000000000 | payload))[0]
    return value


def test_arrow_columns_take_the_vectorised_path() -> None:
    policy = ValuePolicy()
    codes = encode_exact(
        [pa.chunked_array([pa.array([1, 2])]), pa.chunked_array([pa.array([2])])], policy
    )
    assert codes.vectorised
    assert codes.codes[0][1] == codes.codes[1][0]
    mixed = encode_exact([pa.chunked_array([pa.array([Decimal("1.5")])])], policy)
    assert not mixed.vectorised


def test_nan_payloads_and_negative_zero() -> None:
    gold = pa.table({"x": pa.array([nan_with_payload(1), -0.0, None, 1.5])})
    pred = pa.table({"x": pa.array([0.0, nan_with_payload(7), 1.5, None])})
    fast, slow = both_ways(pred, gold)
    assert fast.exact and slow.exact


def test_int_and_float_columns_compare_by_value() -> None:
    gold = pa.table({"x": pa.array([1, 2, None], pa.int64())})
    pred = pa.table({"x": pa.array([2.0, None, 1.0])})
    fast, slow = both_ways(pred, gold)
    assert fast.exact and slow.exact
    off = pa.table({"x": pa.array([2.0, None, 1.5])})
    assert not compare_results(ResultSet.from_arrow(off), ResultSet.from_arrow(gold)).exact


def test_huge_ints_are_not_rounded_through_floats() -> None:
    big = 2**53 + 1
    gold = pa.table({"x": pa.array([big], pa.int64())})
    pred = pa.table({"x": pa.array([float(2**53)])})  # float(big) == 2**53
    fast, slow = both_ways(pred, gold, rel_tol=0)  # exact numbers
    assert not fast.exact and not slow.exact
    fast, slow = both_ways(pred, gold)  # within the default rel_tol=1e-9, through floats
    assert fast.exact and slow.exact
    same = pa.table({"x": pa.array([big], pa.int64())})
    assert compare_results(ResultSet.from_arrow(same), ResultSet.from_arrow(gold)).exact


def test_unsigned_beyond_int64() -> None:
    gold = pa.table({"x": pa.array([2**64 - 1, 3], pa.uint64())})
    pred = pa.table({"x": pa.array([3, 2**64 - 1], pa.uint64())})
    fast, slow = both_ways(pred, gold)
    assert fast.exact and slow.exact


def test_decimal_and_float_columns() -> None:
    gold = pa.table({"x": pa.array([Decimal("0.10"), Decimal("2.00")], pa.decimal128(10, 2))})
    pred = pa.table({"x": pa.array([2.0, 0.1])})
    fast, slow = both_ways(pred, gold)
    assert fast.exact and slow.exact


def test_timestamps_time_zones_dates_and_durations() -> None:
    utc = dt.UTC
    gold = pa.table(
        {
            "t": pa.array([dt.datetime(2024, 1, 1, 12, tzinfo=utc)], pa.timestamp("us", tz="UTC")),
            "d": pa.array([dt.date(2024, 1, 2)], pa.date32()),
            "s": pa.array([dt.timedelta(seconds=90)], pa.duration("ms")),
        }
    )
    pred = pa.table(
        {
            "t": pa.array(
                [dt.datetime(2024, 1, 1, 13, tzinfo=dt.timezone(dt.timedelta(hours=1)))],
                pa.timestamp("ns", tz="+01:00"),
            ),
            "d": pa.array([dt.datetime(2024, 1, 2)], pa.timestamp("s")),
            "s": pa.array([dt.timedelta(seconds=90)], pa.duration("ns")),
        }
    )
    fast, slow = both_ways(pred, gold)
    assert fast.exact and slow.exact
    strict_dates = both_ways(pred, gold, date_equals_midnight=False)
    assert not strict_dates[0].exact and not strict_dates[1].exact


def test_naive_and_aware_timestamps_under_each_policy() -> None:
    gold = pa.table({"t": pa.array([dt.datetime(2024, 1, 1, 12)], pa.timestamp("us"))})
    pred = pa.table(
        {"t": pa.array([dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC)], pa.timestamp("us", tz="UTC"))}
    )
    for policy, expected in (("UTC", True), (None, False)):
        fast, slow = both_ways(pred, gold, naive_timezone=policy)
        assert fast.exact is expected and slow.exact is expected
    paris = both_ways(pred, gold, naive_timezone="Europe/Paris")
    assert not paris[0].exact and not paris[1].exact


def test_nanosecond_timestamps_and_far_future_dates() -> None:
    ns = pa.array([1_704_067_200_000_000_001], pa.timestamp("ns"))
    ns_other = pa.array([1_704_067_200_000_000_002], pa.timestamp("ns"))
    assert not compare_results(
        ResultSet.from_arrow(pa.table({"t": ns})), ResultSet.from_arrow(pa.table({"t": ns_other}))
    ).exact
    far = pa.array([dt.datetime(3000, 1, 1)], pa.timestamp("us"))
    far_date = pa.array([dt.date(3000, 1, 1)], pa.date32())
    fast, slow = both_ways(pa.table({"t": far}), pa.table({"t": far_date}))
    assert fast.exact and slow.exact


def test_string_and_large_string() -> None:
    gold = pa.table({"s": pa.array(["a", None, "b"], pa.string())})
    pred = pa.table({"s": pa.array(["b", "a", None], pa.large_string())})
    fast, slow = both_ways(pred, gold)
    assert fast.exact and slow.exact


def test_bool_is_not_an_int_on_either_path() -> None:
    gold = pa.table({"b": pa.array([True, False])})
    pred = pa.table({"b": pa.array([1, 0])})
    fast, slow = both_ways(pred, gold)
    assert not fast.exact and not slow.exact


def test_many_high_cardinality_columns_force_exact_reranking() -> None:
    # six columns of full-range int64 values: the packed key overflows and is re-ranked
    rng = np.random.default_rng(5)
    n = 3000
    gold_np = {f"c{i}": rng.integers(-(2**62), 2**62, n) for i in range(6)}
    gold_np["c0"][:100] = gold_np["c0"][100:200]
    gold = pa.table(gold_np)
    take = rng.permutation(n)[: n - 10]
    pred = gold.take(pa.array(take)).select([f"c{i}" for i in (5, 3, 1, 0, 2, 4)])
    pred = pa.concat_tables([pred, pred.slice(0, 5)])
    fast = compare_results(ResultSet.from_arrow(pred), ResultSet.from_arrow(gold))
    expected = reference_matched(ResultSet.from_arrow(pred), ResultSet.from_arrow(gold))
    assert fast.matched_rows == expected == n - 10


def test_large_plain_python_columns_match_the_reference() -> None:
    rnd = random.Random(9)
    n = 25_000
    gold_rows = [
        (
            rnd.randrange(1000),
            rnd.choice(["x", "y", None]),
            rnd.choice([0.5, 1.25, None]),
            rnd.choice([True, False]),
        )
        for _ in range(n)
    ]
    pred_rows = gold_rows[:]
    rnd.shuffle(pred_rows)
    pred_rows = [*pred_rows[:-7], (5000, "z", 0.5, True)]
    gold = ResultSet(["a", "b", "c", "d"], gold_rows)
    pred = ResultSet(["c", "d", "a", "b"], [(c, d, a, b) for a, b, c, d in pred_rows])
    for column in range(4):
        assert encode_exact([pred.column_data(column)], ValuePolicy()).vectorised
    result = compare_results(pred, gold)
    assert result.matched_rows == reference_matched(pred, gold)
    assert result.matched_rows == n - 7


@pytest.mark.parametrize("backed", ["arrow", "rows"])
def test_set_and_ordered_modes_on_both_paths(backed: str) -> None:
    gold_rows = [(1, "a"), (1, "b"), (2, "c"), (2, "c")]
    pred_rows = [(1, "b"), (1, "a"), (2, "c"), (2, "c")]

    def make(rows: list[tuple[int, str]]) -> ResultSet:
        table = pa.table({"k": [r[0] for r in rows], "v": [r[1] for r in rows]})
        return ResultSet.from_arrow(table) if backed == "arrow" else ResultSet(["k", "v"], rows)

    assert compare_results(make(pred_rows), make(gold_rows), order_keys=["k"]).exact
    assert not compare_results(make(pred_rows), make(gold_rows), order_keys=["v"]).exact
    as_set = compare_results(make(pred_rows[:3]), make(gold_rows), rows="set")
    assert as_set.exact and as_set.gold_rows == 3


def _same_partition(fast: list[np.ndarray], slow: list[np.ndarray]) -> bool:
    """Two encodings give equal codes to exactly the same cells (and 0 to the same)."""
    a, b = np.concatenate(fast).tolist(), np.concatenate(slow).tolist()
    pairs = set(zip(a, b, strict=True))
    return len(pairs) == len(set(a)) == len(set(b)) and all((x == 0) == (y == 0) for x, y in pairs)


@pytest.mark.parametrize("kind", ["int", "wide_int", "float", "string", "date", "bool"])
def test_vectorised_codes_partition_cells_like_the_python_path(kind: str) -> None:
    """Several chunks, sliced arrays and NULLs whose hidden slots hold other values: the
    vectorised codes (int32 where they fit) group the cells exactly as the dict path."""
    rng = np.random.default_rng(len(kind))
    n = 6000
    make = {
        "int": lambda: pa.array(rng.integers(-50, 50, n)),
        "wide_int": lambda: pa.array(rng.integers(-(2**62), 2**62, n) // rng.integers(1, 3, n)),
        "float": lambda: pa.array(np.round(rng.normal(0, 3, n), 1)),
        "string": lambda: pa.array([f"s{v}" for v in rng.integers(0, 300, n)]),
        "date": lambda: pa.array(rng.integers(0, 40_000, n).astype("datetime64[D]")),
        "bool": lambda: pa.array(rng.random(n) < 0.5),
    }[kind]

    def column() -> pa.ChunkedArray:
        values = make()
        hidden = pa.array(values.to_numpy(zero_copy_only=False), mask=rng.random(n) < 0.1)
        if kind == "string":  # NULLs by mask, the strings under them kept
            hidden = pa.array(values.to_pylist(), mask=rng.random(n) < 0.1)
        cut = int(rng.integers(1, n - 1))
        return pa.chunked_array([hidden.slice(0, cut), hidden.slice(cut + 1)])

    columns = [column(), column()]
    policy = ValuePolicy()
    fast = encode_exact(columns, policy)
    slow = encode_exact([c.to_pylist() for c in columns], policy)
    assert fast.vectorised and not slow.vectorised
    assert _same_partition(fast.codes, slow.codes)
    assert {c.dtype for c in fast.codes} == {np.dtype(np.int32)}
    assert all(int(c.max()) < fast.cardinality for c in fast.codes)


@pytest.mark.parametrize("rows", ["multiset", "set", "ordered"])
@pytest.mark.parametrize("null_equals_null", [True, False])
def test_values_hidden_under_nulls_never_count(rows: str, null_equals_null: bool) -> None:
    """Float columns under tolerance read Arrow's buffer in place: the values left under
    NULLs (different on each side, and row to row) must not decide anything, not even the
    tie groups of an ordering by that column (its NULLs are one group)."""
    rng = np.random.default_rng(4)
    n = 3000
    nulls = rng.random(n) < 0.2
    amount = np.where(nulls, np.nan, np.round(rng.normal(0, 5, n), 2))
    by_x = np.lexsort((amount, ~nulls))  # NULLs first, then by value: gold's order
    group, amount, nulls = rng.integers(0, 40, n)[by_x], amount[by_x], nulls[by_x]
    gold = pa.table({"g": group, "x": pa.array(np.where(nulls, rng.normal(0, 1e6, n), amount),
                                               mask=nulls)})  # fmt: skip
    if rows == "ordered":  # the NULL rows permuted among themselves
        order = np.concatenate([rng.permutation(int(nulls.sum())), np.flatnonzero(~nulls)])
    else:
        order = rng.permutation(n)
    hidden = np.where(nulls, rng.normal(0, 1e6, n), amount)[order]
    pred = pa.table({"x": pa.array(hidden, mask=nulls[order]), "g": group[order]})
    options: dict[str, Any] = {"rows": rows, "null_equals_null": null_equals_null}
    if rows == "ordered":
        options["order_keys"] = ["x"]
    fast, slow = both_ways(pred, gold, **options)
    assert (fast.matched_rows, fast.exact, fast.order_ok) == (
        slow.matched_rows,
        slow.exact,
        slow.order_ok,
    )
    assert fast.exact == null_equals_null


def test_values_buffers_longer_than_their_items_are_read_in_place() -> None:
    """Arrow asks only that a values buffer hold the array's items: it may be longer and
    end mid-item (arrays from `from_buffers` or the C data interface)."""
    validity = pa.py_buffer(bytes([0b101]))
    ints = pa.py_buffer(struct.pack("<3q", 1, 9, 2) + b"\0")  # 25 bytes, a NULL in the middle
    floats = pa.py_buffer(struct.pack("<3d", 1.5, 9.0, 2.5) + b"\0")
    int_column = pa.Array.from_buffers(pa.int64(), 3, [validity, ints])
    float_column = pa.Array.from_buffers(pa.float64(), 3, [validity, floats])
    gold = pa.table({"i": int_column, "f": float_column})
    pred = pa.table({"i": pa.array([2, None, 1]), "f": pa.array([2.5, None, 1.5])})
    for tolerance in (0.0, 1e-9):
        fast, slow = both_ways(pred, gold, rel_tol=tolerance)
        assert fast.exact and slow.exact and fast.matched_rows == 3


def test_negative_zero_is_zero_under_tolerance_in_sets_and_ties() -> None:
    gold = pa.table({"x": pa.array([0.0, 1.0])})
    pred = pa.table({"x": pa.array([0.0, -0.0, 1.0])})
    for tolerance in (0.0, 1e-9):
        fast, slow = both_ways(pred, gold, rows="set", rel_tol=tolerance)
        assert (fast.exact, fast.pred_rows) == (slow.exact, slow.pred_rows) == (True, 2)
    ordered_gold = pa.table({"x": pa.array([0.0, -0.0, 1.0]), "k": pa.array([1, 2, 3])})
    ordered_pred = pa.table({"x": pa.array([-0.0, 0.0, 1.0]), "k": pa.array([2, 1, 3])})
    fast, slow = both_ways(ordered_pred, ordered_gold, rows="ordered", order_keys=["x"])
    assert fast.exact and slow.exact  # -0.0 and 0.0 are one tie group
