"""The summary's intervals computed together (`MeanCIs`) are exactly the ones `mean_ci`
computed one at a time before, and `_linear_quantiles` is `np.quantile`, value for value."""

from __future__ import annotations

import numpy as np
import pytest

from queryeval.stats._bootstrap import MeanCIs, _linear_quantiles, mean_ci


def _one_at_a_time(values: np.ndarray, seed: int, resamples: int = 2000) -> tuple[float, float]:
    """The bootstrap as it was written before the batch (one array, its own draws)."""
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    block = max(1, 2_000_000 // n)
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = x[idx].mean(axis=1)
    alpha = (1 - 0.95) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


@pytest.mark.parametrize("seed", [0, 7])
def test_batch_equals_one_at_a_time(seed: int) -> None:
    rng = np.random.default_rng(3)
    # 1500 and 1200 values: resampled in two blocks of indices each (at most 2,000,000)
    arrays = [
        (rng.random(1500) > 0.4).astype(np.float64),
        rng.random(1500),
        rng.random(1500),
        np.round(rng.random(1200), 3),
        rng.normal(size=7),
        np.array([1.0, 1.0]),  # degenerate
        np.empty(0),  # none
        rng.random(6000),  # normal interval
    ]
    arrays.append(arrays[1].copy())  # equal values, computed once
    batch = MeanCIs(seed=seed)
    pending = [batch.add(a) for a in arrays]
    held = [p.as_dict() if p is not None else None for p in pending]  # before resolving
    batch.resolve()
    for values, p, d in zip(arrays, pending, held, strict=True):
        alone = mean_ci(values, seed=seed)
        if alone is None:
            assert p is None and d is None
            continue
        assert p is not None and p.interval == alone and d == alone.as_dict()
        if alone.method.startswith("bootstrap"):
            assert (alone.low, alone.high) == _one_at_a_time(values, seed)


def test_linear_quantiles_is_numpy() -> None:
    rng = np.random.default_rng(11)
    for i in range(2000):
        n = int(rng.integers(1, 2500))
        values = rng.normal(size=n) * 10.0 ** rng.integers(-6, 6) if i % 2 else rng.random(n)
        qs = (0.025000000000000022, 0.975) if i % 3 else (*rng.random(3), 0.0, 1.0)
        ours = _linear_quantiles(values, tuple(qs))
        assert [q.hex() for q in ours] == [float(q).hex() for q in np.quantile(values, qs)]
    for values in ([1.0, np.nan, 2.0], [1.0, np.inf, 2.0], [-np.inf, 1.0, np.inf, 2.0]):
        qs = (0.0, 0.1, 0.5, 0.9, 1.0)
        with np.errstate(invalid="ignore"):
            expected = np.quantile(np.array(values), qs)
        assert np.array_equal(_linear_quantiles(np.array(values), qs), expected, equal_nan=True)
