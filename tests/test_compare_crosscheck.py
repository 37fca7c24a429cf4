"""The fast path of compare_results against the general path on random typed results with
wrong rows: one row a side (`_small._one_row`), a few rows (the gold's decimals read as
floats) and more than `_small._FEW_DECIMALS` rows (the gold's decimals sorted as decimals),
each answer field by field the general path's, and both the answer and the decline seen."""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal
from typing import Any

import pytest

from compare_support import as_dict, general, shuffled_columns
from queryeval.metrics import ResultSet, compare_results
from queryeval.metrics.results import ValuePolicy, _small
from queryeval.metrics.results._rows import Options

KINDS = ["int", "float", "decimal", "date", "str"]
# moves of a cell relative to a gold value: equal, inside, at or past the tolerance's bound
# (relative and absolute), one unit in the last place, far
STEPS = [0.0, 0.4e-9, 1e-9, 2e-9, 2.1e-9, 3e-9, 1e-6, 0.5]


def _cell(rng: random.Random, kind: str) -> Any:
    roll = rng.random()
    if roll < 0.08:
        return None
    if kind == "int":
        return rng.choice([0, 7, 2**53, -(2**53) - 1]) if roll < 0.12 else rng.randrange(-99, 99)
    if kind == "float":
        if roll < 0.14:
            return rng.choice([math.nan, math.inf, -0.0, 1e-300, 2.0**53])
        return round(rng.uniform(-100, 100), rng.choice([0, 2, 6]))
    if kind == "decimal":
        if roll < 0.12:
            return rng.choice([Decimal("NaN"), Decimal("Infinity"), Decimal("1e30"),
                               Decimal("0.1"), Decimal("0.30000000000000000001")])  # fmt: skip
        return Decimal(rng.randrange(-(10**4), 10**4)).scaleb(-2)
    if kind == "date":
        return dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(9))
    return rng.choice(["a", "b", "c", "7"])


def _numbers(rows: list[tuple[Any, ...]]) -> list[float]:
    """The finite numbers of the rows, as floats (the targets a wrong cell is moved near)."""
    found = []
    for row in rows:
        for value in row:
            if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
                number = float(value)
                if math.isfinite(number):
                    found.append(number)
    return found


def _moved(rng: random.Random, value: Any, kind: str, numbers: list[float]) -> Any:
    """A wrong cell: near a gold number of any row and column (the isolation proof's
    concern), its decimal or float twin, or another value."""
    roll = rng.random()
    if numbers and roll < 0.45:
        target = rng.choice(numbers)
        step = rng.choice(STEPS) * rng.choice([1, -1])
        moved = rng.choice([target * (1 + step), target + step, math.nextafter(target, 0)])
        if kind == "decimal" and rng.random() < 0.5:
            return Decimal(moved) if rng.random() < 0.5 else Decimal(repr(moved))
        return moved
    if isinstance(value, Decimal) and value.is_finite() and roll < 0.6:
        return float(value)
    if isinstance(value, float) and math.isfinite(value) and roll < 0.6:
        return Decimal(repr(value))
    return _cell(rng, kind)


def _pair(rng: random.Random, n: int) -> tuple[ResultSet, ResultSet]:
    k = rng.randint(1, 4)
    kinds = [rng.choice(KINDS) for _ in range(k)]
    rows = [tuple(_cell(rng, kind) for kind in kinds) for _ in range(n)]
    if n > 1 and rng.random() < 0.2:  # a repeated row
        rows[rng.randrange(n)] = rows[rng.randrange(n)]
    numbers = _numbers(rows)
    pred = rows[:]
    rng.shuffle(pred)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        i, j = rng.randrange(n), rng.randrange(k)
        cell = _moved(rng, pred[i][j], kinds[j], numbers)
        pred[i] = (*pred[i][:j], cell, *pred[i][j + 1 :])
    return shuffled_columns(rng, pred, rows, 0.1)


@pytest.mark.parametrize(("sizes", "seed"), [((1,), 1), ((2, 3, 5, 12), 2), ((41, 48, 60), 3)])
def test_the_fast_path_is_the_general_path_on_wrong_typed_rows(
    sizes: tuple[int, ...], seed: int
) -> None:
    rng = random.Random(seed)
    answered = declined = 0
    for i in range(40):
        pred, gold = _pair(rng, rng.choice(sizes))
        options: dict[str, Any] = (
            {}  # the defaults, most often
            if i % 3
            else {"rel_tol": rng.choice([0.0, 1e-6]), "abs_tol": rng.choice([0.0, 1e-9, 0.5]),
                  "columns": rng.choice(["permutation", "by_name"])}
        )  # fmt: skip
        fast = compare_results(pred, gold, **options)
        assert as_dict(fast) == as_dict(general(pred, gold, **options)), (pred, gold, options)
        opts = Options(options.get("abs_tol", 0.0), options.get("rel_tol", 1e-9), True,
                       ValuePolicy())  # fmt: skip
        columns = options.get("columns", "permutation")
        small = _small.small_comparison(pred, gold, "multiset", columns, opts, 10_000)
        answered, declined = answered + (small is not None), declined + (small is None)
    assert answered >= 15 and declined >= 2, (answered, declined)  # both sides exercised


@pytest.mark.parametrize(
    ("pred", "gold", "isolated"),
    [
        # more than _FEW_DECIMALS rows: the gold's decimals stay decimals
        (1.5, Decimal("9.25"), True),  # far from every number
        (9.25 + 1e-12, Decimal("9.25"), False),  # close to a decimal
        (0.3, Decimal("9.25"), True),  # another row's decimal 0.3: its float is 0.3, equal
        (0.3, Decimal("0.30000000000000001"), True),  # two decimals whose float is 0.3
        (0.3, Decimal("0.3000000001"), False),  # past the run of 0.3's: a close decimal
        (Decimal("0.3000000001"), Decimal("0.3"), False),  # close to the run of 0.3's
        (Decimal("9.2500000001"), Decimal("9.25"), False),
        (Decimal("-7.5"), Decimal("NaN"), True),  # a NaN among them: read as floats
        (-7.5, Decimal("Infinity"), False),  # an infinity among them: declined
        (44.0 + 1e-13, Decimal("9.25"), False),  # close to an id (another column)
    ],
)
def test_the_decimals_of_a_larger_gold(pred: Any, gold: Any, isolated: bool) -> None:
    many = _small._FEW_DECIMALS + 5
    base = [(i, Decimal(i * 3).scaleb(-1)) for i in range(many)]
    g = ResultSet(["id", "price"], [*base, (many, gold)])
    p = ResultSet(["price", "id"], [*((d, i) for i, d in base), (pred, many)])
    opts = Options(0.0, 1e-9, True, ValuePolicy())
    _, bags = _small._cell_types(p.rows, g.rows)
    wrong = _small._converted((many, pred), opts.policy)
    assert _small._isolated([wrong], bags, opts) is isolated
    assert as_dict(compare_results(p, g)) == as_dict(general(p, g))


@pytest.mark.parametrize(
    ("pred", "gold", "far"),
    [
        ((782.57, Decimal("287.23"), 7), (782.07, Decimal("287.23"), 7), True),  # one far
        ((1.0 + 1e-12, 2.5, 7), (1.0, 2.5, 8), True),  # near, but 7 is far from every number
        ((1.0 + 1e-12, 2.5), (1.0, 2.5), False),  # within the tolerance: the general path
        ((2.5, 1.0 + 1e-12), (1.0, 2.5), False),  # near a cell of another column
        ((math.nan, 1.0), (2.0, 1.0), True),  # a NaN equal to no cell
        ((math.inf, 1.0), (2.0, 1.0), True),  # an infinity equal to no cell
        ((math.inf, 2.0), (math.inf, 2.0 + 1e-12), False),  # the infinity is in the gold
        ((2.0**53 + 2, 1.0 + 1e-12), (2.0**53, 1.0), False),  # too large to tell; near
        ((5.0, 1.0), (Decimal("1e400"), 1.0), False),  # a gold decimal past a float
    ],
)
def test_one_far_cell_settles_one_row(pred: Any, gold: Any, far: bool) -> None:
    names = ["a", "b", "c"][: len(gold)]
    p, g = ResultSet(names, [pred]), ResultSet(names, [gold])
    opts = Options(0.0, 1e-9, True, ValuePolicy())
    try:
        converted = _small._converted(pred, opts.policy), _small._converted(gold, opts.policy)
    except OverflowError:  # a decimal past a float's range: the fast path declines first
        assert not far
    else:
        assert _small._far_cell(*converted, opts) is far
    assert as_dict(compare_results(p, g)) == as_dict(general(p, g))
