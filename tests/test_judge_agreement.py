"""Judge-vs-human agreement: accuracy and Cohen's kappa, cross-checked with scikit-learn."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, cohen_kappa_score

from queryeval.metrics import agreement


def test_worked_example() -> None:
    # Wikipedia's Cohen's kappa example: 20 yes/yes, 5 judge-yes/human-no, 10 judge-no/human-yes,
    # 15 no/no: p_o = 0.7, p_e = 0.5, kappa = 0.4
    judge = [1.0] * 20 + [1.0] * 5 + [0.0] * 10 + [0.0] * 15
    human = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    a = agreement(judge, human)
    assert a.n == 50 and a.accuracy == pytest.approx(0.7) and a.kappa == pytest.approx(0.4)
    assert (a.both_positive, a.judge_only_positive, a.human_only_positive, a.both_negative) == (
        20,
        5,
        10,
        15,
    )


def test_threshold_binarises_scores_and_missing_pairs_are_skipped() -> None:
    a = agreement([0.8, 0.6, None, 0.2], [1, 0.9, 1, None], threshold=0.7)
    # pairs kept: (0.8, 1) agree; (0.6 -> 0, 0.9 -> 1) disagree
    assert (a.n, a.skipped) == (2, 2)
    assert a.accuracy == 0.5
    assert a.mean_abs_error == pytest.approx((0.2 + 0.3) / 2)


def test_separate_human_threshold() -> None:
    a = agreement([0.9, 0.1], [4, 1], threshold=0.5, human_threshold=3)
    assert a.accuracy == 1.0


def test_kappa_undefined_when_chance_agreement_is_total() -> None:
    a = agreement([1.0, 1.0], [True, True])
    assert a.accuracy == 1.0 and a.kappa is None


def test_empty() -> None:
    a = agreement([None], [1])
    assert (a.n, a.accuracy, a.kappa) == (0, None, None)


def test_lengths_must_match() -> None:
    with pytest.raises(ValueError):
        agreement([1.0], [1, 0])


@given(
    st.lists(st.tuples(st.floats(0, 1), st.integers(0, 1)), min_size=1, max_size=60),
    st.floats(0.05, 0.95),
)
def test_matches_scikit_learn(pairs: list[tuple[float, int]], threshold: float) -> None:
    judge = [p[0] for p in pairs]
    human = [p[1] for p in pairs]
    a = agreement(judge, human, threshold=threshold)
    jb = [int(j >= threshold) for j in judge]
    assert a.accuracy == pytest.approx(accuracy_score(human, jb))
    if a.kappa is not None:
        assert a.kappa == pytest.approx(cohen_kappa_score(human, jb), abs=1e-9)
    else:
        assert len(set(jb) | set(human)) == 1
