"""Agreement between a judge and human labels: accuracy and Cohen's kappa after binarising."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Agreement", "agreement"]


def _check_agreement(prediction: Sequence[Any], reference: Sequence[Any]) -> None:
    """A ValueError unless there is one human label per judge score."""
    if len(prediction) != len(reference):
        raise ValueError("judge_scores and human_labels must have the same length")


@dataclass(frozen=True)
class Agreement:
    """Judge-vs-human agreement over the `n` pairs where both are present.

    Positive = "correct" (value >= threshold). `kappa` is None when chance agreement is 1
    (both raters gave one and the same class to every pair): kappa is undefined there.
    `mean_abs_error` compares the raw values (meaningful when both are on a 0-1 scale).
    """

    n: int
    skipped: int
    threshold: float
    accuracy: float | None
    kappa: float | None
    mean_abs_error: float | None
    both_positive: int
    judge_only_positive: int
    human_only_positive: int
    both_negative: int


def _present(x: float | int | bool | None) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def agreement(
    prediction: Sequence[float | None],
    reference: Sequence[float | int | bool | None],
    *,
    threshold: float = 0.5,
    human_threshold: float | None = None,
) -> Agreement:
    """Agreement of the judge's scores (`prediction`) with the human labels (`reference`):
    binarise both sides (value >= threshold is positive; `human_threshold` defaults to
    `threshold`; booleans and 0/1 labels binarise as themselves) and compare.

    accuracy = (a + d) / n, where a = both positive, d = both negative;
    kappa = (p_o - p_e) / (1 - p_e), p_o = accuracy,
    p_e = ((a + b)(a + c) + (c + d)(b + d)) / n², b = judge only positive, c = human only positive.

    >>> r = agreement([0.9, 0.2, 0.8, None], [1, 0, 0, 1])
    >>> r.n, r.skipped, r.accuracy, round(r.kappa, 4)
    (3, 1, 0.6666666666666666, 0.4)
    """
    _check_agreement(prediction, reference)
    h_thr = threshold if human_threshold is None else human_threshold
    a = b = c = d = 0
    abs_errors: list[float] = []
    skipped = 0
    for j, h in zip(prediction, reference, strict=True):
        if not (_present(j) and _present(h)):
            skipped += 1
            continue
        assert j is not None and h is not None
        jp = float(j) >= threshold
        hp = float(h) >= h_thr
        abs_errors.append(abs(float(j) - float(h)))
        if jp and hp:
            a += 1
        elif jp:
            b += 1
        elif hp:
            c += 1
        else:
            d += 1
    n = a + b + c + d
    if n == 0:
        return Agreement(0, skipped, threshold, None, None, None, 0, 0, 0, 0)
    p_o = (a + d) / n
    p_e = ((a + b) * (a + c) + (c + d) * (b + d)) / (n * n)
    kappa = (p_o - p_e) / (1 - p_e) if p_e < 1 else None
    return Agreement(
        n=n,
        skipped=skipped,
        threshold=threshold,
        accuracy=p_o,
        kappa=kappa,
        mean_abs_error=math.fsum(abs_errors) / n,
        both_positive=a,
        judge_only_positive=b,
        human_only_positive=c,
        both_negative=d,
    )
