"""Plain aggregates that skip missing values instead of counting them as zero."""

from __future__ import annotations

import math
from collections.abc import Iterable


def mean_or_none(values: Iterable[float | None]) -> float | None:
    """Mean of the values that are present (not None, not NaN); None when there are none."""
    kept = [v for v in values if v is not None and v == v]  # v == v is False only for NaN
    return math.fsum(kept) / len(kept) if kept else None
