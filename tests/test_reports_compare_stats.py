"""Paired run comparison: planted improvements are found, noise is not, pairing is by id."""

from __future__ import annotations

import numpy as np
import pytest

from queryeval.errors import InputError
from queryeval.stats import BETTER, NO_DIFFERENCE, WORSE, compare_records, mcnemar_test


def _record(system: str, case_id: str, passed: bool | None, value: float | None) -> dict:
    score = (
        {"value": value, "status": "ok", "passed": passed, "details": {"metrics": {"f1": value}}}
        if value is not None
        else {"status": "unscored", "explanation": "no judge"}
    )
    return {
        "system": system,
        "case_id": case_id,
        "scores": {"match": score},
        "passed": passed,
    }


def _baseline(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    passed = rng.random(n) < 0.6
    values = np.where(passed, 1.0, rng.uniform(0.0, 0.8, n))
    return passed, values


def _records(system: str, passed: np.ndarray, values: np.ndarray) -> list[dict]:
    return [
        _record(system, f"case-{i}", bool(p), float(v))
        for i, (p, v) in enumerate(zip(passed, values, strict=True))
    ]


def test_planted_improvement_on_15_percent_of_cases_is_better() -> None:
    n = 400
    passed, values = _baseline(n, seed=1)
    rng = np.random.default_rng(2)
    failing = np.flatnonzero(~passed)
    fixed = rng.choice(failing, size=int(0.15 * n), replace=False)
    better_passed, better_values = passed.copy(), values.copy()
    better_passed[fixed] = True
    better_values[fixed] = 1.0
    result = compare_records(
        _records("sys", passed, values), _records("sys", better_passed, better_values), seed=7
    )
    (pair,) = result.systems
    assert result.verdict == BETTER
    assert pair.verdict == BETTER and pair.primary == "pass"
    pass_cmp = pair.metric("pass")
    assert pass_cmp is not None and pass_cmp.ci is not None
    assert pass_cmp.ci.low > 0  # the CI of the pass-rate difference excludes 0
    assert pass_cmp.diff == pytest.approx(0.15)
    assert pass_cmp.p_value is not None and pass_cmp.p_value < 1e-6
    assert set(pair.fixed) == {f"case-{i}" for i in fixed} and pair.broken == ()
    match = pair.metric("match")
    assert match is not None and match.verdict == BETTER and match.ci is not None
    assert match.ci.low > 0
    assert match.diff == pytest.approx(float(better_values.mean() - values.mean()))


def test_two_runs_differing_only_by_noise_show_no_significant_difference() -> None:
    n = 400
    passed, values = _baseline(n, seed=3)
    rng = np.random.default_rng(4)
    flip = rng.random(n) < 0.08  # re-run noise: 8% of verdicts flip, in both directions
    noisy_passed = np.where(flip, ~passed, passed)
    noisy_values = values + rng.normal(0, 0.05, n)  # mean-zero noise (no clipping bias)
    result = compare_records(
        _records("sys", passed, values), _records("sys", noisy_passed, noisy_values), seed=7
    )
    (pair,) = result.systems
    assert pair.verdict == NO_DIFFERENCE
    pass_cmp = pair.metric("pass")
    assert pass_cmp is not None and pass_cmp.ci is not None
    assert pass_cmp.ci.low < 0 < pass_cmp.ci.high
    assert len(pair.fixed) + len(pair.broken) == int(flip.sum())
    match = pair.metric("match")
    assert match is not None and match.verdict == NO_DIFFERENCE


def test_regression_is_worse_and_mcnemar_uses_the_flip_counts() -> None:
    passed = np.array([True] * 60 + [False] * 40)
    worse = passed.copy()
    worse[:20] = False  # 20 broken
    worse[60:62] = True  # 2 fixed
    values = passed.astype(float)
    result = compare_records(
        _records("s", passed, values), _records("s", worse, worse.astype(float)), seed=0
    )
    (pair,) = result.systems
    assert pair.verdict == WORSE and result.verdict == WORSE
    assert pair.mcnemar is not None
    assert (pair.mcnemar.b, pair.mcnemar.c) == (20, 2)
    assert pair.mcnemar.p_value == pytest.approx(mcnemar_test(20, 2).p_value)
    assert len(pair.broken) == 20 and len(pair.fixed) == 2


def test_pairing_is_by_case_id_and_skips_unscored_and_unmatched_cases() -> None:
    a = [
        _record("s", "x", True, 1.0),
        _record("s", "y", False, 0.2),
        _record("s", "only-a", True, 1.0),
        _record("s", "z", None, None),
    ]
    b = [
        _record("s", "y", True, 0.6),  # different order
        _record("s", "x", True, 0.8),
        _record("s", "z", True, 0.9),  # unscored in A: not paired for 'match'
        _record("s", "only-b", False, 0.0),
    ]
    (pair,) = compare_records(a, b).systems
    assert pair.n_paired == 3
    assert pair.only_a == ("only-a",) and pair.only_b == ("only-b",)
    match = pair.metric("match")
    assert match is not None and match.n == 2
    assert match.mean_a == pytest.approx(0.6) and match.mean_b == pytest.approx(0.7)
    assert match.diff == pytest.approx(0.1)
    assert pair.fixed == ("y",)
    sub = pair.metric("match.f1")
    assert sub is not None and sub.n == 2


def test_systems_pair_by_name_or_explicitly() -> None:
    a = [_record("base", "c1", True, 1.0), _record("new", "c1", False, 0.0)]
    b = [_record("base", "c1", True, 1.0), _record("new", "c1", True, 1.0)]
    assert [(s.system_a, s.system_b) for s in compare_records(a, b).systems] == [
        ("base", "base"),
        ("new", "new"),
    ]
    same_run = compare_records(a, a, systems=["base=new"])
    assert [(s.system_a, s.system_b) for s in same_run.systems] == [("base", "new")]
    with pytest.raises(InputError, match="no system 'missing'"):
        compare_records(a, b, systems=["missing"])


def test_unknown_metric_and_bad_alpha_are_input_errors() -> None:
    a = [_record("s", "c1", True, 1.0)]
    with pytest.raises(InputError, match="available: pass, match"):
        compare_records(a, a, metrics=["nope"])
    with pytest.raises(InputError, match="alpha"):
        compare_records(a, a, alpha=1.5)


def test_chosen_metric_decides_the_verdict() -> None:
    passed = np.array([True] * 50 + [False] * 50)
    values = np.linspace(0, 1, 100)
    b_values = values + 0.05  # scores up everywhere, verdicts unchanged
    result = compare_records(
        _records("s", passed, values), _records("s", passed, b_values), metrics=["match"]
    )
    (pair,) = result.systems
    assert pair.primary == "match" and pair.verdict == BETTER
    assert [m.metric for m in pair.metrics] == ["match"]


def test_comparison_is_reproducible_with_its_seed() -> None:
    passed, values = _baseline(200, seed=5)
    rng = np.random.default_rng(6)
    other = np.clip(values + rng.normal(0, 0.1, 200), 0, 1)
    a, b = _records("s", passed, values), _records("s", passed, other)
    one = compare_records(a, b, seed=11).as_dict()
    two = compare_records(a, b, seed=11).as_dict()
    assert one == two
