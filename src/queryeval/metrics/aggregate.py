"""Plain aggregates that skip missing values instead of counting them as zero (scorers'
dataset figures and the summaries share them)."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence


def mean_or_none(values: Iterable[float | None] | array[float]) -> float | None:
    """Mean of the values that are present (not None, not NaN); None when there are none.
    `math.fsum` is exact, so the mean does not depend on the values' order.

    >>> mean_or_none([1.0, None, 0.0, float("nan")]), mean_or_none([None])
    (0.5, None)
    """
    if isinstance(values, array):  # floats only: just the NaNs to drop
        nan = any(map(math.isnan, values))
        kept: Sequence[float] = [v for v in values if v == v] if nan else values
    else:
        kept = [v for v in values if v is not None and v == v]  # v == v is False only for NaN
    return math.fsum(kept) / len(kept) if kept else None
