"""The small-result path's answer where no column mapping makes the rows equal and the names
do not pair the columns up: the mapping keeping the most values in common, as the general
path's assignment picks it (field by field the general path's answer)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from compare_support import as_dict, general, shuffled_columns
from queryeval.metrics import ResultSet, compare_results
from queryeval.metrics.results import _compare, _small
from queryeval.metrics.results._columns import _best_mapping, best_by_overlap


def _rows(rng: random.Random, n: int, k: int, floats: bool) -> list[tuple[Any, ...]]:
    def cell(c: int) -> Any:
        kind = c % 3
        if kind == 0:
            return rng.randrange(6)  # small ints: columns overlap, ties between mappings
        if kind == 1:
            return rng.choice(["x", "y", "z", None])
        return rng.choice([0.5, 2.25, 7.0, None]) if floats else rng.randrange(4)

    return [tuple(cell(c) for c in range(k)) for _ in range(n)]


@pytest.mark.parametrize(("k", "draws"), [(2, 80), (3, 20), (4, 10)])
def test_the_best_mapping_is_the_general_paths(
    k: int, draws: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(31 + k)
    picked = []

    def counted(overlap: list[list[int]]) -> Any:
        picked.append(overlap)
        return best_by_overlap(overlap)

    monkeypatch.setattr(_small, "best_by_overlap", counted)
    for _ in range(draws):
        n_gold, n_pred = rng.randrange(1, 7), rng.randrange(1, 7)
        floats = rng.random() < 0.5
        gold = _rows(rng, n_gold, k, floats)
        pred = [*rng.sample(gold, min(n_pred, n_gold) // 2), *_rows(rng, n_pred, k, floats)]
        pred = pred[:n_pred] or _rows(rng, 1, k, floats)
        p, g = shuffled_columns(rng, pred, gold, renamed=1.0)  # only values pair them up
        fast = compare_results(p, g)
        assert as_dict(fast) == as_dict(general(p, g)), (p, g)
    assert len(picked) > draws // 4  # the branch answers often


def test_it_is_answered_without_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    gold = ResultSet(["product", "units"], [("p1", 3), ("p2", 5), ("p3", 1)])
    pred = ResultSet(["sum(qty)", "product"], [(3, "p1"), (4, "p2")])
    expected = as_dict(general(pred, gold))
    monkeypatch.setattr(_compare, "_permutation", None)  # the general path would fail
    got = compare_results(pred, gold)
    assert as_dict(got) == expected
    assert got.column_mapping == (("product", "product"), ("units", "sum(qty)"))
    assert got.matched_rows == 1 and got.notes == (_compare.BEST_NOTE,)


def test_the_assignment_is_scipys() -> None:
    from scipy.optimize import linear_sum_assignment

    rng = random.Random(5)
    for _ in range(200):
        k = rng.randrange(1, 5)
        overlap = [[rng.randrange(3) for _ in range(k)] for _ in range(k)]
        rows, cols = linear_sum_assignment(overlap, maximize=True)
        assert best_by_overlap(overlap) == tuple(zip(rows.tolist(), cols.tolist(), strict=True))
    assert _best_mapping([], []) is None
