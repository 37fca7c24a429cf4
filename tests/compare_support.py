"""Helpers of the tests that check the small-result shortcuts against `compare_results`'s
general path (test_compare_unequal.py, test_compare_crosscheck.py)."""

from __future__ import annotations

import math
import random
from typing import Any

from queryeval.metrics import ResultSet, compare_results
from queryeval.metrics.results import _compare


def shuffled_columns(
    rng: random.Random, pred: list[tuple[Any, ...]], gold: list[tuple[Any, ...]], renamed: float
) -> tuple[ResultSet, ResultSet]:
    """(prediction, gold) with the prediction's columns in a random order, each renamed with
    probability `renamed` (so only the values can pair it up)."""
    k = len(gold[0])
    order = list(range(k))
    rng.shuffle(order)
    names = ["a", "b", "c", "d"][:k]
    pred_names = [f"p{i}" if rng.random() < renamed else names[i] for i in order]
    return (ResultSet(pred_names, [tuple(r[i] for i in order) for r in pred]),
            ResultSet(names, gold))  # fmt: skip


def general(pred: ResultSet, gold: ResultSet, **options: Any) -> Any:
    """`compare_results` with the small-result shortcut switched off: the general path."""
    original = _compare.small_comparison
    _compare.small_comparison = lambda *a, **k: None
    try:
        return compare_results(pred, gold, **options)
    finally:
        _compare.small_comparison = original


def as_dict(result: Any) -> dict[str, Any]:
    """A comparison's fields, NaN written so that two NaNs compare equal."""
    data = result.to_dict()
    for key in ("precision", "recall", "f1"):
        if isinstance(data[key], float) and math.isnan(data[key]):
            data[key] = "nan"
    return data
