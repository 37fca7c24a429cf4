"""McNemar's test: the closed forms against scipy.stats and a worked textbook example."""

from __future__ import annotations

import pytest
from scipy import stats as sps

from queryeval.stats import mcnemar_test


@pytest.mark.parametrize(("b", "c"), [(0, 1), (1, 6), (3, 3), (5, 12), (0, 24), (11, 2)])
def test_exact_matches_scipy_binomial_test(b: int, c: int) -> None:
    result = mcnemar_test(b, c)
    assert result.method == "exact binomial"
    reference = sps.binomtest(min(b, c), b + c, 0.5, alternative="two-sided").pvalue
    assert result.p_value == pytest.approx(reference, rel=1e-12)


def test_exact_worked_example() -> None:
    # b=1, c=6: P(X <= 1 | n=7, 1/2) = (1 + 7) / 128, doubled
    assert mcnemar_test(1, 6).p_value == pytest.approx(16 / 128)


@pytest.mark.parametrize(("b", "c"), [(121, 59), (20, 20), (30, 10), (13, 40)])
def test_chi_square_matches_scipy(b: int, c: int) -> None:
    result = mcnemar_test(b, c)
    assert result.method == "chi-square, corrected"
    stat = (abs(b - c) - 1) ** 2 / (b + c)
    assert result.statistic == pytest.approx(stat)
    assert result.p_value == pytest.approx(sps.chi2.sf(stat, df=1), rel=1e-9)


def test_wikipedia_example_statistic() -> None:
    # Wikipedia's McNemar example (b=121, c=59): corrected chi-square 61^2/180
    result = mcnemar_test(121, 59)
    assert result.statistic == pytest.approx(61**2 / 180)
    assert result.p_value < 0.001


def test_no_discordant_pairs_is_no_evidence() -> None:
    result = mcnemar_test(0, 0)
    assert result.p_value == 1.0


def test_threshold_between_exact_and_chi_square_is_configurable() -> None:
    assert mcnemar_test(10, 20, exact_below=100).method == "exact binomial"
    assert mcnemar_test(10, 20, exact_below=10).method.startswith("chi-square")


def test_negative_counts_are_rejected() -> None:
    with pytest.raises(ValueError):
        mcnemar_test(-1, 3)
