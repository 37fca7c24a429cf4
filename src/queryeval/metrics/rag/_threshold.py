"""Similarity-threshold calibration (seed 004, phase 2): the threshold t for `similarity >= t
=> correct` that maximises accuracy or F1 against human 0/1 labels on a validation set."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

# The seed's grid: 0.50, 0.55, ..., 0.90.
SEED_GRID: tuple[float, ...] = tuple(round(0.50 + 0.05 * i, 2) for i in range(9))
# The seed's stand-in for labels when there are none: similarity > 0.9 counts as correct.
PROXY_SIMILARITY = 0.9

ThresholdMetric = Literal["accuracy", "f1"]


def _check_calibration(
    similarities: Sequence[float], labels: Sequence[int] | None, metric: str
) -> tuple[np.ndarray, np.ndarray]:
    """The similarities as a finite 1-D array and the labels as booleans (the proxy labels,
    similarity > 0.9, when there are none), else a ValueError."""
    if metric not in ("accuracy", "f1"):
        raise ValueError(f"metric must be 'accuracy' or 'f1', not {metric!r}")
    s = np.asarray(similarities, dtype=float)
    if s.ndim != 1 or s.size == 0:
        raise ValueError("find_threshold needs a non-empty list of similarities")
    if not np.all(np.isfinite(s)):
        raise ValueError("similarities must be finite numbers")
    if labels is None:
        if metric == "f1":
            raise ValueError(
                "F1 needs human 0/1 labels (labels['correct'] in the cases); without labels "
                "only the proxy accuracy is available"
            )
        return s, s > PROXY_SIMILARITY
    if len(labels) != s.size:
        raise ValueError(f"{len(labels)} labels for {s.size} similarities")
    if any(v not in (0, 1) for v in labels):
        raise ValueError("labels must be 0 or 1")
    return s, np.asarray(labels, dtype=bool)


@dataclass(frozen=True)
class ThresholdResult:
    """The chosen threshold, its metric value and confusion counts (positive = correct)."""

    threshold: float
    metric: ThresholdMetric
    score: float
    n: int
    proxy: bool
    tp: int
    fp: int
    fn: int
    tn: int
    coarse_threshold: float | None
    coarse_score: float | None
    candidates: int

    @property
    def confusion(self) -> dict[str, int]:
        """{tp, fp, fn, tn} at the threshold."""
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn}


def confusion_at(
    similarities: npt.ArrayLike, labels: npt.ArrayLike, *, threshold: float
) -> tuple[int, int, int, int]:
    """(tp, fp, fn, tn) when `similarity >= threshold` predicts label 1.

    >>> confusion_at([0.95, 0.8, 0.6], [1, 0, 1], threshold=0.75)
    (1, 1, 1, 0)
    """
    s = np.asarray(similarities, dtype=float)
    y = np.asarray(labels, dtype=bool)
    pred = s >= threshold
    return (
        int(np.sum(pred & y)),
        int(np.sum(pred & ~y)),
        int(np.sum(~pred & y)),
        int(np.sum(~pred & ~y)),
    )


def metric_from_confusion(metric: ThresholdMetric, tp: int, fp: int, fn: int, tn: int) -> float:
    """accuracy = (tp + tn) / n; F1 = 2 tp / (2 tp + fp + fn), 0 when that is 0/0.

    >>> metric_from_confusion("f1", 1, 1, 1, 0)
    0.5
    """
    if metric == "accuracy":
        n = tp + fp + fn + tn
        return (tp + tn) / n if n else 0.0
    denominator = 2 * tp + fp + fn
    return 2 * tp / denominator if denominator else 0.0


def find_threshold(
    similarities: Sequence[float],
    labels: Sequence[int] | None = None,
    *,
    metric: ThresholdMetric = "accuracy",
    grid: Sequence[float] = SEED_GRID,
    fine: bool = True,
) -> ThresholdResult:
    """The threshold maximising `metric` over the seed's `grid` and, with `fine`, every
    midpoint between sorted unique similarities plus both ends (so every achievable split
    of the validation set is tried). Ties go to the grid (lowest first, as the seed's strict
    `>` did), then to the lowest fine threshold.

    Without `labels`, the seed's proxy labels (similarity > 0.9) are used and the result says
    `proxy=True`: the search then only rediscovers ~0.9. F1 needs real labels (the seed's F1
    assumed every answer correct, which makes it meaningless), so it refuses the proxy.

    >>> r = find_threshold([0.95, 0.9, 0.7, 0.6], [1, 1, 0, 0], fine=False)
    >>> r.threshold, r.score, r.confusion
    (0.75, 1.0, {'tp': 2, 'fp': 0, 'fn': 0, 'tn': 2})
    """
    s, y = _check_calibration(similarities, labels, metric)
    proxy = labels is None

    coarse = np.asarray(sorted(set(grid)), dtype=float)
    if fine:
        uniq = np.unique(s)
        ends = np.array([uniq[0], math.nextafter(uniq[-1], math.inf)])
        extra = np.concatenate([(uniq[:-1] + uniq[1:]) / 2, ends])
    else:
        extra = np.zeros(0)
    candidates = np.concatenate([coarse, extra])
    scores = _scores_at(s, y, candidates, metric)

    best = float(np.max(scores))
    # Ties: the first (lowest) grid value, else the lowest fine candidate.
    tied = np.flatnonzero(np.isclose(scores, best, rtol=0, atol=1e-12))
    in_grid = tied[tied < coarse.size]
    pick = int(in_grid[0]) if in_grid.size else int(tied[np.argmin(candidates[tied])])
    threshold = float(candidates[pick])
    tp, fp, fn, tn = confusion_at(s, y.astype(int), threshold=threshold)
    coarse_pick = int(np.argmax(scores[: coarse.size])) if coarse.size else None
    return ThresholdResult(
        threshold=threshold,
        metric=metric,
        score=metric_from_confusion(metric, tp, fp, fn, tn),
        n=int(s.size),
        proxy=proxy,
        tp=tp,
        fp=fp,
        fn=fn,
        tn=tn,
        coarse_threshold=float(coarse[coarse_pick]) if coarse_pick is not None else None,
        coarse_score=float(scores[coarse_pick]) if coarse_pick is not None else None,
        candidates=int(candidates.size),
    )


def _scores_at(
    s: np.ndarray, y: np.ndarray, thresholds: np.ndarray, metric: ThresholdMetric
) -> np.ndarray:
    """The metric at every threshold at once: sort once, count with cumulative sums."""
    order = np.argsort(s, kind="stable")
    s_sorted, y_sorted = s[order], y[order].astype(np.int64)
    below_pos = np.concatenate([[0], np.cumsum(y_sorted)])  # positives among the i lowest
    n, positives = s.size, int(y_sorted.sum())
    idx = np.searchsorted(s_sorted, thresholds, side="left")  # items at idx.. are >= t
    tp = positives - below_pos[idx]
    fp = (n - idx) - tp
    fn = positives - tp
    tn = idx - below_pos[idx]
    if metric == "accuracy":
        return (tp + tn) / n
    denominator = 2 * tp + fp + fn
    return np.where(denominator > 0, 2 * tp / np.maximum(denominator, 1), 0.0)
