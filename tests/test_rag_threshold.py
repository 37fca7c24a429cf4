"""Threshold calibration (seed 004 phase 2): the chosen threshold is optimal, checked by brute
force with scikit-learn's metrics as the reference; the seed's own loop is reproduced."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, f1_score

from queryeval.metrics import find_threshold
from queryeval.metrics.rag import PROXY_SIMILARITY, SEED_GRID, confusion_at


def _reference(sims: list[float], labels: list[int], t: float, metric: str) -> float:
    pred = [1 if s >= t else 0 for s in sims]
    if metric == "accuracy":
        return float(accuracy_score(labels, pred))
    return float(f1_score(labels, pred, zero_division=0))


def _brute_force_best(sims: list[float], labels: list[int], metric: str) -> float:
    """Every split a threshold can make: at each observed value, and above the largest."""
    cuts = [*sorted(set(sims)), math.inf]
    return max(_reference(sims, labels, t, metric) for t in cuts)


def _seed_find_optimal_threshold(sims: list[float], labels: list[int] | None) -> float:
    """The seed's loop, verbatim in behaviour (strict `>` keeps the first best)."""
    best_threshold, best_accuracy = 0.75, 0.0
    for threshold in [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9]:
        predictions = [1 if s >= threshold else 0 for s in sims]
        truth = labels if labels else [1 if s > 0.9 else 0 for s in sims]
        accuracy = sum(p == h for p, h in zip(predictions, truth, strict=True)) / len(predictions)
        if accuracy > best_accuracy:
            best_accuracy, best_threshold = accuracy, threshold
    return best_threshold


similarity_lists = st.lists(
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False).map(lambda x: round(x, 3)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(similarity_lists, st.data(), st.sampled_from(["accuracy", "f1"]))
def test_fine_search_is_optimal_by_brute_force(sims: list[float], data, metric: str) -> None:
    labels = data.draw(st.lists(st.integers(0, 1), min_size=len(sims), max_size=len(sims)))
    result = find_threshold(sims, labels, metric=metric)
    best = _brute_force_best(sims, labels, metric)
    assert result.score == pytest.approx(best, abs=1e-12)
    # the reported threshold really achieves that score, per the reference metric
    assert _reference(sims, labels, result.threshold, metric) == pytest.approx(best, abs=1e-12)
    assert (result.tp, result.fp, result.fn, result.tn) == confusion_at(
        sims, labels, threshold=result.threshold
    )
    assert result.tp + result.fp + result.fn + result.tn == len(sims)


@settings(max_examples=150, deadline=None)
@given(similarity_lists, st.data())
def test_coarse_grid_reproduces_the_seed(sims: list[float], data) -> None:
    labels = data.draw(st.lists(st.integers(0, 1), min_size=len(sims), max_size=len(sims)))
    result = find_threshold(sims, labels, fine=False)
    seed = _seed_find_optimal_threshold(sims, labels)
    if result.score > 0:  # the seed keeps its 0.75 default only when every accuracy is 0
        assert result.threshold == seed
    assert result.coarse_threshold == result.threshold


def test_fine_search_beats_the_grid_when_the_gap_is_between_grid_points() -> None:
    sims = [0.61, 0.62, 0.63, 0.66, 0.67, 0.68]
    labels = [0, 0, 0, 1, 1, 1]
    result = find_threshold(sims, labels)
    assert result.score == 1.0 and 0.63 < result.threshold <= 0.66
    assert result.coarse_threshold == 0.65 and result.coarse_score == 1.0
    # ties go to the seed's grid: 0.65 splits perfectly too
    assert result.threshold == 0.65
    sims = [0.61, 0.62, 0.63, 0.64, 0.66, 0.67]
    labels = [0, 0, 0, 1, 1, 1]
    result = find_threshold(sims, labels)
    assert result.threshold == pytest.approx(0.635) and result.score == 1.0
    assert result.coarse_score == pytest.approx(5 / 6)


def test_without_labels_the_proxy_is_used_and_flagged() -> None:
    sims = [0.2, 0.5, 0.88, 0.91, 0.95]
    result = find_threshold(sims)
    assert result.proxy
    proxy = [1 if s > PROXY_SIMILARITY else 0 for s in sims]
    assert _reference(sims, proxy, result.threshold, "accuracy") == 1.0
    assert result.threshold == _seed_find_optimal_threshold(sims, None) == 0.9


def test_f1_refuses_the_proxy() -> None:
    with pytest.raises(ValueError, match="F1 needs human 0/1 labels"):
        find_threshold([0.5, 0.9], None, metric="f1")


def test_f1_uses_real_labels_not_all_correct() -> None:
    # The seed assumed every answer correct: then predicting all 1 (lowest threshold) is
    # "perfect". With real labels the best F1 threshold separates the two groups.
    sims = [0.55, 0.6, 0.8, 0.85]
    labels = [0, 0, 1, 1]
    assert find_threshold(sims, labels, metric="f1").score == 1.0
    assert find_threshold(sims, labels, metric="f1").threshold > 0.6
    assert _reference(sims, [1, 1, 1, 1], 0.5, "f1") == 1.0  # the seed's y_true: meaningless


@pytest.mark.parametrize(
    ("sims", "labels", "message"),
    [
        ([], [], "non-empty"),
        ([0.5, float("nan")], [0, 1], "finite"),
        ([0.5], [0, 1], "2 labels for 1"),
        ([0.5], [2], "0 or 1"),
    ],
)
def test_bad_input_is_refused(sims: list[float], labels: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        find_threshold(sims, labels)


def test_seed_grid_is_050_to_090() -> None:
    assert tuple(np.round(np.arange(0.50, 0.901, 0.05), 2)) == SEED_GRID
