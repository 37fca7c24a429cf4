"""The fast "not equal" answer of compare_results (`_small._unequal`: rows of plain types
not the same multiset, where the tolerance provably changes nothing) gives exactly the
general path's ComparisonResult, or declines. Random typed results with one or two rows
wrong: cells moved to a value inside, at or past the tolerance's bound, or far; NULL, NaN,
-0.0, infinities, decimals, dates, integers near 2**53; rows repeated; columns reordered
or renamed; every row and column policy."""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal
from typing import Any

import pytest

from compare_support import as_dict, general, shuffled_columns
from queryeval.metrics import ResultSet, compare_results
from queryeval.metrics.results import _small

NEAR = [0.0, 0.4e-9, 0.9e-9, 1e-9, 1.1e-9, 2e-9, 2.1e-9, 3e-9, 1e-6, 0.5]
SPECIAL = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e-300, 5e-324, 2.0**53, None]
DECIMALS = [Decimal("2.5"), Decimal("2.50"), Decimal("0.1"), Decimal("-0"), Decimal("NaN"),
            Decimal(2**53 + 1), Decimal("1e30"), Decimal("Infinity"), Decimal("0.30")]  # fmt: skip
INTS = [0, 1, -1, 2**53 - 1, 2**53, 2**53 + 1, 10**9, 10**9 + 1]


def _cell(rng: random.Random, kind: str) -> Any:
    roll = rng.random()
    if roll < 0.08:
        return None
    if kind == "int":
        return rng.choice(INTS) if roll < 0.2 else rng.randrange(-50, 50)
    if kind == "float":
        if roll < 0.2:
            return rng.choice(SPECIAL)
        return rng.choice([0.3, 0.1 + 0.2, 1.0, 2.5, 1e6, -7.25]) * (1 + rng.choice(NEAR))
    if kind == "decimal":
        return rng.choice(DECIMALS) if roll < 0.3 else Decimal(rng.randrange(10**4)).scaleb(-2)
    if kind == "date":
        return dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(5))
    return rng.choice(["a", "b", "c", "1"])


def _changed(rng: random.Random, value: Any, kind: str) -> Any:
    """A cell moved: nearby (inside, at or past the tolerance), to another value, or to
    a value of another type that may equal it canonically."""
    if isinstance(value, float) and math.isfinite(value) and rng.random() < 0.6:
        step = rng.choice([*NEAR, -1e-9, -2e-9, -3e-9])
        return rng.choice([value * (1 + step), value + step, math.nextafter(value, math.inf)])
    if isinstance(value, Decimal) and value.is_finite() and rng.random() < 0.3:
        return float(value)
    if isinstance(value, int) and rng.random() < 0.2:
        return float(value)
    return _cell(rng, kind)


def _pair(rng: random.Random) -> tuple[ResultSet, ResultSet]:
    k = rng.randint(1, 4)
    kinds = [rng.choice(["int", "float", "decimal", "date", "str"]) for _ in range(k)]
    n = rng.randint(1, 12)
    rows = [tuple(_cell(rng, kind) for kind in kinds) for _ in range(n)]
    if rng.random() < 0.3:  # repeated rows
        rows[rng.randrange(n)] = rows[rng.randrange(n)]
    pred = rows[:]
    rng.shuffle(pred)
    for _ in range(rng.choice([1, 1, 1, 2])):
        i = rng.randrange(n)
        if rng.random() < 0.15 and k > 1:  # the row's cells recombined: same cells
            cells = list(pred[i])
            rng.shuffle(cells)
            pred[i] = tuple(cells)
        else:
            j = rng.randrange(k)
            pred[i] = (*pred[i][:j], _changed(rng, pred[i][j], kinds[j]), *pred[i][j + 1 :])
    return shuffled_columns(rng, pred, rows, 0.15)


def test_the_unequal_answer_is_the_general_paths(monkeypatch: Any) -> None:
    rng = random.Random(0)
    answered = declined = 0
    original = _small._unequal

    def counted(*args: Any) -> Any:
        nonlocal answered, declined
        out = original(*args)
        answered, declined = answered + (out is not None), declined + (out is None)
        return out

    monkeypatch.setattr(_small, "_unequal", counted)
    for _ in range(120):
        pred, gold = _pair(rng)
        options: dict[str, Any] = {
            "rows": rng.choice(["auto", "multiset", "multiset", "ordered", "set"]),
            "columns": rng.choice(["permutation"] * 3 + ["by_name", "by_position", "gold_subset"]),
            "rel_tol": rng.choice([1e-9, 1e-9, 0.0, 1e-6]),
            "abs_tol": rng.choice([0.0, 0.0, 1e-9, 0.5]),
            "max_permutations": rng.choice([10_000, 10_000, 2]),
        }
        fast = compare_results(pred, gold, **options)
        assert as_dict(fast) == as_dict(general(pred, gold, **options)), (pred, gold, options)
    assert answered >= 12 and declined >= 6, (answered, declined)  # both sides exercised


@pytest.mark.parametrize(
    ("pred", "gold", "answers"),
    [
        ([(1.5, "a"), (2.0, "b")], [(1.0, "a"), (2.0, "b")], True),  # far: answered
        ([(1.0 + 3e-9, "a"), (2.0, "b")], [(1.0, "a"), (2.0, "b")], False),  # near the bound
        ([(1.0 + 1e-12, "b"), (2.0, "b")], [(1.0, "a"), (2.0, "b")], False),  # close elsewhere
        # close to a gold number, but "x" is in no gold cell: no row can match it
        ([(1.0 + 1e-12, "x"), (2.0, "b")], [(1.0, "a"), (2.0, "b")], True),
        ([(1.0 + 1e-12, None), (2.0, "b")], [(1.0, "a"), (2.0, "b")], True),  # NULL too
        ([(1.0 + 1e-12, None), (2.0, "b")], [(1.0, "a"), (2.0, None)], False),  # a gold NULL
        ([(2.0, "a"), (1.0, "b")], [(1.0, "a"), (2.0, "b")], False),  # the same cells
        ([(float("nan"), "a"), (2.0, "b")], [(1.0, "a"), (2.0, "b")], True),  # NaN: no number
        ([(-0.0, "b"), (2.0, "b")], [(0.0, "a"), (2.0, "b")], True),  # -0.0 is 0.0
        ([(2**53 + 1, "b"), (2.0, "b")], [(1.0, "a"), (2.0, "b")], False),  # floats round it
        ([(Decimal("0.1"), "b"), (2.0, "b")], [(0.1, "a"), (2.0, "b")], True),
    ],
)
def test_when_the_unequal_answer_is_given(
    pred: list[tuple[Any, ...]], gold: list[tuple[Any, ...]], answers: bool, monkeypatch: Any
) -> None:
    seen: list[Any] = []
    original = _small._unequal

    def recorded(*args: Any) -> Any:
        seen.append(original(*args))
        return seen[-1]

    monkeypatch.setattr(_small, "_unequal", recorded)
    p, g = ResultSet(["x", "y"], pred), ResultSet(["x", "y"], gold)
    result = compare_results(p, g)
    assert not result.exact
    assert len(seen) == 1 and (seen[0] is not None) is answers
    assert as_dict(result) == as_dict(general(p, g))


@pytest.mark.parametrize(
    ("pred", "gold", "options"),
    [  # a decimal past a float's range is read as an infinity by the general path
        ([(math.inf, "x"), (1.5, "y")], [(Decimal("1e400"), "x"), (1.5, "y")], {}),
        ([(Decimal("-1E+400"),)], [(-math.inf,)], {"rel_tol": 1e-6, "abs_tol": 0.5}),
        ([(Decimal("1e400"), "x"), (1.5, "y")], [(math.inf, "x"), (1.5, "y")], {}),
    ],
)
def test_a_decimal_past_a_floats_range_matches_an_infinity(
    pred: list[tuple[Any, ...]], gold: list[tuple[Any, ...]], options: dict[str, Any]
) -> None:
    names = ["a", "b"][: len(pred[0])]
    p, g = ResultSet(names, pred), ResultSet(names, gold)
    result = compare_results(p, g, **options)
    assert result.exact and result.matched_rows == len(gold)
    assert as_dict(result) == as_dict(general(p, g, **options))


def test_a_row_holding_a_value_no_gold_cell_holds_is_unequal_whatever_its_numbers(
    monkeypatch: Any,
) -> None:
    """`_apart`: a row left unmatched whose string, date or NULL no gold cell equals is
    answered at once, even where its numbers lie within the tolerance of gold numbers
    (nudged here); where such a value is found in the gold (a NULL, a string another row
    holds) the numbers decide. Field for field the general path's answer; one row a side
    (`_one_row`) and several (`_unequal`), every policy."""
    rng = random.Random(5)
    apart = [0, 0]  # (held, did not)
    original = _small._apart

    def counted(*args: Any) -> bool:
        out = original(*args)
        apart[not out] += 1
        return out

    monkeypatch.setattr(_small, "_apart", counted)
    for _ in range(70):
        kinds = ["float", rng.choice(["str", "date"]), *rng.sample(["int", "decimal", "str"], 1)]
        n = rng.choice([1, 1, 2, 4, 9])
        rows = [tuple(_cell(rng, kind) for kind in kinds) for _ in range(n)]
        pred = rows[:]
        rng.shuffle(pred)
        for i in rng.sample(range(n), min(n, rng.choice([1, 1, 2]))):
            row = list(pred[i])
            if isinstance(row[0], float) and math.isfinite(row[0]):
                row[0] *= 1 + rng.choice([0.0, 0.4e-9, 1e-6])  # within (or past) the tolerance
            row[1] = rng.choice(["zz", dt.date(1999, 1, 1), None, _cell(rng, kinds[1])])
            pred[i] = tuple(row)
        p, g = shuffled_columns(rng, pred, rows, 0.15)
        options: dict[str, Any] = {
            "rows": rng.choice(["multiset", "multiset", "auto", "ordered"]),
            "columns": rng.choice(["permutation", "permutation", "by_name", "by_position"]),
            "rel_tol": rng.choice([1e-9, 1e-6]),
        }
        fast = compare_results(p, g, **options)
        assert as_dict(fast) == as_dict(general(p, g, **options)), (p, g, options)
    assert apart[0] >= 15 and apart[1] >= 5, apart  # both sides exercised
