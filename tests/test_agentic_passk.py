"""pass@k against the exact combinatorial formula; success@k semantics."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from queryeval.metrics import mean_pass_at_k, pass_at_k, success_at_k
from queryeval.metrics.agentic import first_success


def _exact(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def test_pass_at_k_equals_exact_formula_for_all_small_n() -> None:
    ns, cs, ks, expected = [], [], [], []
    for n in range(1, 51):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = _exact(n, c, k)
                assert pass_at_k(n, c, k) == float(exact)  # correctly rounded
                ns.append(n)
                cs.append(c)
                ks.append(k)
                expected.append(float(exact))
    vectorised = pass_at_k(np.array(ns), np.array(cs), np.array(ks))
    assert isinstance(vectorised, np.ndarray)
    assert np.max(np.abs(vectorised - np.array(expected))) <= 1e-12


def test_pass_at_k_large_n_is_stable() -> None:
    # Beyond the exact range the product form is used; C(n, k) itself overflows a float.
    n, c, k = 200_000, 7, 150
    assert math.comb(n, k) > 1e308
    expected = float(_exact(n, c, k))
    assert pass_at_k(n, c, k) == pytest.approx(expected, rel=1e-12)
    assert pass_at_k(np.array([n]), np.array([c]), k)[0] == pytest.approx(expected, rel=1e-12)


def test_pass_at_k_equals_humaneval_numpy_estimator() -> None:
    """The estimator as printed in Chen et al. (2021), written out here as the reference."""

    def humaneval(n: int, c: int, k: int) -> float:
        if n - c < k:
            return 1.0
        return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))

    rng = np.random.default_rng(0)
    n = rng.integers(1, 400, size=500)
    c = rng.integers(0, n + 1)
    k = rng.integers(1, n + 1)
    ours = pass_at_k(n, c, k)
    theirs = np.array([humaneval(int(a), int(b), int(d)) for a, b, d in zip(n, c, k, strict=True)])
    assert np.max(np.abs(ours - theirs)) <= 1e-12


def test_pass_at_k_broadcasts_and_checks_its_arguments() -> None:
    out = pass_at_k(np.array([[10, 10], [5, 5]]), np.array([[0, 10], [1, 2]]), 2)
    assert out.shape == (2, 2)
    assert out.ravel().tolist() == pytest.approx([0.0, 1.0, 0.4, 0.7])  # 1 - C(4,2)/C(5,2) = 0.4
    assert pass_at_k(10, 0, 1) == 0.0
    assert pass_at_k(10, 10, 10) == 1.0
    with pytest.raises(ValueError, match="c <= n"):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError, match="k <= n"):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError, match="k <= n"):
        pass_at_k(np.array([3, 3]), np.array([1, 1]), np.array([1, 0]))


def test_mean_pass_at_k() -> None:
    samples = [[True, False, False, False], [False] * 4, [True, True, True, True]]
    expected = (float(_exact(4, 1, 2)) + 0.0 + 1.0) / 3
    assert mean_pass_at_k(samples, 2) == pytest.approx(expected)
    assert mean_pass_at_k([[True, False]], 1) == pytest.approx(0.5)
    assert mean_pass_at_k([], 1) is None
    with pytest.raises(ValueError, match="fewer than k=3"):
        mean_pass_at_k([[True, False]], 3)


def test_success_at_k_is_within_the_first_k_iterations() -> None:
    loop = [False, False, True]
    assert success_at_k(loop, 1) is False
    assert success_at_k(loop, 2) is False
    assert success_at_k(loop, 3) is True
    assert success_at_k(loop) is True
    assert success_at_k(loop, 10) is True
    assert success_at_k([None, True], 2) is True
    assert success_at_k([False, None], 2) is None  # unknown, not a failure
    assert success_at_k([], 1) is False
    assert first_success(loop) == 3
    assert first_success([False, None]) is None
    with pytest.raises(ValueError, match="k >= 1"):
        success_at_k(loop, 0)
