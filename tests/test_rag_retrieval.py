"""Retrieval metrics equal trec_eval's (through pytrec_eval) on random rankings and graded
relevance; repeats, short rankings and bad input follow the module's stated rules."""

from __future__ import annotations

import random

import pytest

from queryeval.metrics.rag import (
    hit_rate_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)

pytrec_eval = pytest.importorskip("pytrec_eval")

KS = (1, 3, 5, 10)


def _random_case(rng: random.Random) -> tuple[list[str], dict[str, int]]:
    """A ranking of distinct ids (any length, possibly empty) and graded judgements with at
    least one relevant id; some judged ids have grade 0 and some relevant ids are never
    retrieved."""
    pool = [f"d{i}" for i in range(rng.randint(2, 30))]
    ranking = rng.sample(pool, rng.randint(0, len(pool)))
    judged = rng.sample(pool, rng.randint(1, len(pool)))
    grades = {d: rng.choice((0, 1, 1, 2, 3)) for d in judged}
    grades[rng.choice(judged)] = rng.randint(1, 3)
    return ranking, grades


def _trec(ranking: list[str], grades: dict[str, int]) -> dict[str, float]:
    measures = {"recip_rank"} | {
        f"{m}.{k}" for m in ("recall", "P", "success", "ndcg_cut") for k in KS
    }
    evaluator = pytrec_eval.RelevanceEvaluator({"q": grades}, measures)
    # strictly decreasing scores: trec_eval ranks by score, so the order is the ranking's
    run = {d: float(len(ranking) - r) for r, d in enumerate(ranking)}
    return evaluator.evaluate({"q": run})["q"]


def test_equal_to_trec_eval_on_random_rankings() -> None:
    rng = random.Random(20)
    checked = 0
    for _ in range(400):
        ranking, grades = _random_case(rng)
        if not ranking:  # trec_eval needs a retrieved document to evaluate a query
            continue
        ref = _trec(ranking, grades)
        relevant = [d for d, g in grades.items() if g > 0]
        for k in KS:
            assert recall_at_k(ranking, grades, k=k) == pytest.approx(ref[f"recall_{k}"])
            assert recall_at_k(ranking, relevant, k=k) == pytest.approx(ref[f"recall_{k}"])
            assert precision_at_k(ranking, grades, k=k) == pytest.approx(ref[f"P_{k}"])
            assert hit_rate_at_k(ranking, relevant, k=k) == pytest.approx(ref[f"success_{k}"])
            assert ndcg_at_k(ranking, grades, k=k) == pytest.approx(ref[f"ndcg_cut_{k}"])
        assert reciprocal_rank(ranking, grades) == pytest.approx(ref["recip_rank"])
        checked += 1
    assert checked > 350


def test_ndcg_equals_scikit_learn() -> None:
    """A second reference for nDCG: scikit-learn's ndcg_score over the judged and retrieved
    ids, unretrieved ones scored below every retrieved one (so only k <= the ranking's
    length, where scikit-learn would count the unretrieved ids as ranked)."""
    from sklearn.metrics import ndcg_score

    rng = random.Random(7)
    for _ in range(100):
        ranking, grades = _random_case(rng)
        ids = sorted(set(ranking) | set(grades))
        score = {d: len(ranking) - r for r, d in enumerate(ranking)}
        y_true = [[grades.get(d, 0) for d in ids]]
        y_score = [[score.get(d, -1 - i / len(ids)) for i, d in enumerate(ids)]]
        for k in (k for k in KS if k <= len(ranking)):
            expected = ndcg_score(y_true, y_score, k=k)
            assert ndcg_at_k(ranking, grades, k=k) == pytest.approx(expected)


def test_repeats_count_once_at_their_first_rank() -> None:
    # two chunks of p1, then p2: p2 is at rank 2 once the repeat is dropped
    assert reciprocal_rank(["p1", "p1", "p2"], ["p2"]) == 0.5
    assert recall_at_k(["p1", "p1", "p2"], ["p2"], k=2) == 1.0
    assert precision_at_k(["p2", "p2", "p2"], ["p2"], k=3) == pytest.approx(1 / 3)
    deduped = ["p3", "p1", "p2"]
    for k in (1, 2, 3):
        repeated = ["p3", "p3", "p1", "p3", "p2", "p1"]
        assert ndcg_at_k(repeated, {"p1": 2, "p2": 1}, k=k) == ndcg_at_k(
            deduped, {"p1": 2, "p2": 1}, k=k
        )


def test_nothing_retrieved_scores_zero() -> None:
    for f in (recall_at_k, precision_at_k, hit_rate_at_k, ndcg_at_k):
        assert f([], ["p1"], k=3) == 0.0
    assert reciprocal_rank([], ["p1"]) == 0.0
    assert reciprocal_rank(["p2", "p1"], ["p1"], k=1) == 0.0


@pytest.mark.parametrize(
    ("prediction", "reference", "k", "error"),
    [
        ("p1 p2", ["p1"], 3, TypeError),  # a string is not a ranking
        (["p1", 2], ["p1"], 3, TypeError),
        (["p1"], "p1", 3, TypeError),
        (["p1"], {"p1": "high"}, 3, TypeError),
        (["p1"], {"p1": float("nan")}, 3, ValueError),
        (["p1"], [], 3, ValueError),  # nothing relevant: cannot be judged
        (["p1"], {"p1": 0}, 3, ValueError),
        (["p1"], ["p1"], 0, ValueError),
        (["p1"], ["p1"], True, ValueError),
    ],
)
def test_bad_input_raises(prediction: object, reference: object, k: object, error: type) -> None:
    for f in (recall_at_k, precision_at_k, hit_rate_at_k, ndcg_at_k, reciprocal_rank):
        with pytest.raises(error):
            f(prediction, reference, k=k)  # type: ignore[operator]


# --- the `retrieval` scorer -------------------------------------------------------------


def _scored(retrieved: object, relevant: object = ("p2", "p9"), **options: object):
    from queryeval.cases import Case, Output
    from queryeval.config import ScorerConfig
    from queryeval.scorers import ScoringContext, build_scorer, score_case

    scorer = build_scorer(ScorerConfig(name="retrieval", options=options))
    target: dict[str, object] = {"answer": "x"}
    if relevant is not None:
        target["relevant"] = relevant
    case = Case.model_validate({"id": "c", "conversation": [{"content": "q?", "target": target}]})
    attempt: dict[str, object] = {"answer": "a"}
    if retrieved is not None:
        attempt["retrieved"] = retrieved
    output = Output.model_validate({"attempts": [attempt]})
    return score_case(scorer, case, output, ScoringContext())


def test_scorer_reports_every_metric_and_picks_its_value() -> None:
    ranking = ["p1", "p2", "p3", "p9"]
    score = _scored(ranking, k=3, metric="ndcg")
    metrics = score.details["metrics"]
    assert metrics == {
        "recall": recall_at_k(ranking, ["p2", "p9"], k=3),
        "precision": precision_at_k(ranking, ["p2", "p9"], k=3),
        "hit_rate": 1.0,
        "mrr": 0.5,
        "ndcg": ndcg_at_k(ranking, ["p2", "p9"], k=3),
    }
    assert score.status == "ok" and score.value == metrics["ndcg"]
    graded = _scored(ranking, {"p9": 3, "p2": 1}, k=4, metric="ndcg")
    assert graded.value == ndcg_at_k(ranking, {"p9": 3, "p2": 1}, k=4)


def test_scorer_rule_labels_missing_and_garbage() -> None:
    unlabelled = _scored(["p2"], relevant=None)
    assert unlabelled.status == "unscored" and unlabelled.value is None
    missing = _scored(None)  # the system returned no ranking: its failure, 0 everywhere
    assert missing.status == "ok" and missing.value == 0.0 and missing.passed is False
    assert missing.details["failure"] == "empty"
    assert set(missing.details["metrics"].values()) == {0.0}
    garbage = _scored([{"id": "p2"}])
    assert garbage.details["failure"] == "invalid_output" and garbage.value == 0.0
    assert _scored([]).value == 0.0 and _scored([]).details.get("failure") is None
