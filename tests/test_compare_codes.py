"""Lazy code columns: folding them into row keys block by block equals folding the
written-out codes, across block boundaries, with NULLs and anything under them."""

from __future__ import annotations

import numpy as np
import pytest

from queryeval.metrics.results._codes import BLOCK, LazyCodes, fold, materialize, nonzero


@pytest.mark.parametrize("n", [0, 1, BLOCK - 1, BLOCK, 3 * BLOCK + 17])
def test_folding_lazy_codes_equals_folding_their_arrays(n: int) -> None:
    rng = np.random.default_rng(n)
    base = int(rng.integers(-1000, 1000))
    valid = rng.random(n) < 0.8
    values = np.where(valid, base + rng.integers(1, 50, n), rng.integers(-(2**40), 2**40, n))
    lazy = LazyCodes(values, base, valid)
    written = materialize(lazy, np.int32)
    assert written.dtype == np.int32
    assert ((written == 0) == ~valid).all()
    assert (written[valid] == values[valid] - base).all()
    assert (nonzero(lazy) == nonzero(written)).all()
    start = rng.integers(0, 1000, n)
    for first in (True, False):
        by_blocks, whole = start.copy(), start.copy()
        fold(by_blocks, lazy, 50, first)
        fold(whole, written, 50, first)
        expected = written if first else start * 50 + written
        assert (by_blocks == whole).all() and (whole == expected).all()


def test_codes_without_nulls_are_values_less_base() -> None:
    lazy = LazyCodes(np.array([5, 7, 5], dtype=np.int32), -1)
    assert materialize(lazy).tolist() == [6, 8, 6]
    assert nonzero(lazy).all()
