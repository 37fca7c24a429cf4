"""Seeded confidence intervals for means and proportions.

Small samples get a percentile bootstrap (seeded, so a run's report is reproducible). Past
`max_bootstrap_n` values the bootstrap distribution of a mean is normal to well within its
own Monte-Carlo error, so the normal interval is used instead and the method is recorded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

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
    batch = MeanCIs(level=level, seed=seed, resamples=resamples, max_bootstrap_n=max_bootstrap_n)
    ci = batch.add(values)
    batch.resolve()
    return ci if ci is None else ci.interval


class PendingCI:
    """An interval asked of a `MeanCIs`: `interval` once resolved; `as_dict()` is filled in
    place then (a summary holds the dict before the batch is resolved)."""

    __slots__ = ("_dict", "interval")

    def __init__(self, interval: Interval | None = None) -> None:
        self.interval = interval
        self._dict: dict[str, float | int | str] | None = None

    def _set(self, interval: Interval) -> None:
        self.interval = interval
        if self._dict is not None:
            self._dict.update(interval.as_dict())

    def as_dict(self) -> dict[str, float | int | str]:
        """The interval's JSON form, the same dict object before and after resolving."""
        if self._dict is None:
            self._dict = {} if self.interval is None else self.interval.as_dict()
        return self._dict


class MeanCIs:
    """`mean_ci` of many value arrays with the same seed, computed together by `resolve()`:
    equal arrays once, and the resampled indices (the same for every array of one length,
    since the generator is seeded the same) drawn once per length and block rather than per
    array. Every interval is exactly `mean_ci`'s: same indices, same sums, same quantiles."""

    def __init__(self, *, level: float = 0.95, seed: int = 0,
                 resamples: int = DEFAULT_RESAMPLES,
                 max_bootstrap_n: int = MAX_BOOTSTRAP_N) -> None:  # fmt: skip
        self.level, self.seed, self.resamples = level, seed, resamples
        self.max_bootstrap_n = max_bootstrap_n
        # n -> {the values' bytes: (values, estimate, the pending intervals)}
        self._pending: dict[int, dict[bytes, tuple[np.ndarray, float, list[PendingCI]]]] = {}

    def add(self, values: Sequence[float] | np.ndarray) -> PendingCI | None:
        """The interval of `values` (None for no values), final at once when it needs no
        resampling, else once `resolve()` has run."""
        x = np.asarray(values, dtype=np.float64)
        n = int(x.size)
        if n == 0:
            return None
        est = float(x.mean())
        if n == 1 or float(x.min()) == float(x.max()):
            return PendingCI(Interval(est, est, est, n, "degenerate"))
        alpha = (1 - self.level) / 2
        if n > self.max_bootstrap_n:
            from statistics import NormalDist  # here: most runs never need it (issue 31)

            z = NormalDist().inv_cdf(1 - alpha)
            half = z * float(x.std(ddof=1)) / math.sqrt(n)
            return PendingCI(Interval(est, est - half, est + half, n, "normal"))
        pending = PendingCI()
        same = self._pending.setdefault(n, {})
        key = x.tobytes()
        if key not in same:
            same[key] = (np.ascontiguousarray(x), est, [])
        same[key][2].append(pending)
        return pending

    def resolve(self) -> None:
        """Compute every pending interval."""
        alpha = (1 - self.level) / 2
        resamples = self.resamples
        for n, same in self._pending.items():
            arrays = list(same.values())
            means = np.empty((len(arrays), resamples))
            rng = np.random.default_rng(self.seed)
            # resample in blocks to bound memory at resamples x n indices
            block = max(1, 2_000_000 // n)
            for start in range(0, resamples, block):
                stop = min(resamples, start + block)
                idx = rng.integers(0, n, size=(stop - start, n))
                for row, (x, _, _) in enumerate(arrays):
                    means[row, start:stop] = x[idx].mean(axis=1)
            for row, (_, est, waiting) in enumerate(arrays):
                low, high = _linear_quantiles(means[row], (alpha, 1 - alpha))
                interval = Interval(est, low, high, n, f"bootstrap-{resamples}")
                for pending in waiting:
                    pending._set(interval)
        self._pending.clear()


def _linear_quantiles(values: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """`np.quantile(values, qs)` (its default, linear method), value for value, without
    its `np.unique` (which imports `numpy.ma`, 13 ms a process): the same sorted
    neighbours and the same interpolation (`numpy.lib._function_base_impl._lerp`).

    >>> _linear_quantiles(np.array([3.0, 1.0, 2.0, 4.0]), (0.25, 0.5))
    [1.75, 2.5]
    """
    ordered = np.sort(values)
    n = len(ordered)
    if math.isnan(ordered[-1]):  # NaN sorts last; np.quantile answers NaN then
        return [math.nan for _ in qs]
    out = []
    for q in qs:
        virtual = (n - 1) * q
        if virtual >= n - 1:  # numpy takes index -1 there, and its t is virtual - (-1)
            below, above, t = n - 1, n - 1, virtual + 1
        elif virtual < 0:
            below, above, t = 0, 0, virtual
        else:
            below = math.floor(virtual)
            above, t = below + 1, virtual - below
        a, b = float(ordered[below]), float(ordered[above])
        diff = b - a
        out.append(b - diff * (1 - t) if t >= 0.5 else a + diff * t)
    return out
