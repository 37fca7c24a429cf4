"""BIRD's valid efficiency score: the reward rule, the outlier rule, and a slow gold that is
never charged to the model."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from benchmark_files import concert_context
from queryeval.cases import Attempt, Case, Output
from queryeval.config import ScorerConfig
from queryeval.scorers import ScoringContext, build_scorer
from queryeval.scorers.benchmarks import clean_ratios, reward

SLOW_GOLD = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 400000) "
    "SELECT count(*) FROM c"
)


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScoringContext]:
    context = concert_context(tmp_path_factory.mktemp("ves"))
    yield context
    context.close()


def ves(ctx: ScoringContext, gold: str, pred: str, **options: Any) -> Any:
    scorer = build_scorer(ScorerConfig(name="bird_ves", options={"repeats": 3, **options}))
    case = Case.model_validate(
        {"id": "c", "conversation": [{"content": "q", "target": {"query": gold}}]}
    )
    return scorer.score(case, Output(attempts=[Attempt(query=pred)]), ctx)


@pytest.mark.parametrize(
    ("ratio", "r_ves", "ves_value"),
    [
        (0.0, 0.0, 0.0),
        (0.1, 0.5, math.sqrt(0.1)),
        (0.25, math.sqrt(0.5), 0.5),
        (0.6, math.sqrt(0.75), math.sqrt(0.6)),
        (1.0, 1.0, 1.0),
        (1.9, 1.0, math.sqrt(1.9)),
        (2.0, math.sqrt(1.25), math.sqrt(2.0)),
        (9.0, math.sqrt(1.25), 3.0),
    ],
)
def test_reward_rules(ratio: float, r_ves: float, ves_value: float) -> None:
    assert reward(ratio, "r_ves") == pytest.approx(r_ves)
    assert reward(ratio, "ves") == pytest.approx(ves_value)


def test_outliers_beyond_three_standard_deviations_are_dropped() -> None:
    ratios = [1.0] * 20 + [50.0]
    assert clean_ratios(ratios) == [1.0] * 20
    assert clean_ratios([1.0, 2.0]) == [1.0, 2.0]
    assert clean_ratios([1.0, 1.0]) == []  # std 0: the strict bounds keep nothing


def test_a_wrong_result_scores_zero_without_timing(ctx: ScoringContext) -> None:
    score = ves(
        ctx, "SELECT count(*) FROM singer", "SELECT count(*) FROM concert WHERE year = 2020"
    )
    assert score.status == "ok" and score.value == 0.0


def test_a_faster_right_prediction_earns_the_top_reward(ctx: ScoringContext) -> None:
    score = ves(ctx, SLOW_GOLD, "SELECT 400000")
    assert score.status == "ok"
    assert score.value == pytest.approx(math.sqrt(1.25))
    assert score.details["metrics"]["time_ratio"] > 2
    plain = ves(ctx, SLOW_GOLD, "SELECT 400000", reward="ves")
    assert plain.value > math.sqrt(2)


def test_a_slow_gold_is_never_charged_to_the_model(ctx: ScoringContext) -> None:
    score = ves(ctx, SLOW_GOLD, "SELECT 400000", gold_timeout_s=0.001)
    assert score.status == "unscored" and "gold" in score.explanation
    slow_pred = ves(ctx, "SELECT 400000", SLOW_GOLD, timeout_s=0.001)
    assert slow_pred.status == "ok" and slow_pred.value == 0.0
