"""Seeded confidence intervals for means and proportions.

Small samples get a percentile bootstrap (seeded, so a run's report is reproducible). Past
`max_bootstrap_n` values the bootstrap distribution of a mean is normal to well within its
own Monte-Carlo error, so the normal interval is used instead and the method is recorded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

DEFAULT_RESAMPLES = 2000
MAX_BOOTSTRAP_N = 5000


@dataclass(frozen=True, slots=True)
class Interval:
    """A point estimate with its confidence interval."""

    estimate: float
    low: float
    high: float
    n: int
    method: str

    def as_dict(self) -> dict[str, float | int | str]:
        """JSON-friendly form."""
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "method": self.method,
        }


def mean_ci(
    values: Sequence[float] | np.ndarray,
    *,
    level: float = 0.95,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    max_bootstrap_n: int = MAX_BOOTSTRAP_N,
) -> Interval | None:
    """Mean and its two-sided `level` CI; None for no values."""
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    if n == 0:
        return None
    est = float(x.mean())
    if n == 1 or float(x.min()) == float(x.max()):
        return Interval(est, est, est, n, "degenerate")
    alpha = (1 - level) / 2
    if n > max_bootstrap_n:
        z = NormalDist().inv_cdf(1 - alpha)
        half = z * float(x.std(ddof=1)) / math.sqrt(n)
        return Interval(est, est - half, est + half, n, "normal")
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    # resample in blocks to bound memory at resamples x n indices
    block = max(1, 2_000_000 // n)
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = x[idx].mean(axis=1)
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Interval(est, float(low), float(high), n, f"bootstrap-{resamples}")
