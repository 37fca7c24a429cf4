"""The seed-003 scorers on recorded traces (no engine): text similarity, agentic, options."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import sacrebleu
from pydantic import ValidationError

from queryeval.cases import Attempt, Case, ExecutionOutcome, Finding, Output
from queryeval.config import ScorerConfig
from queryeval.config._presets import PRESETS
from queryeval.scorers import ScoringContext, build_scorer, known_scorers, score_case

GOLD = "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN m.title AS title"
PRED = "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN m.title"


def _case(*golds: str, **extra: Any) -> Case:
    targets = [{"query": g} for g in golds]
    return Case.model_validate(
        {"id": "c1", "conversation": [{"content": "q", "target": targets}], **extra}
    )


def _scorer(name: str, **options: Any) -> Any:
    return build_scorer(ScorerConfig(name=name, options=options))


def _valid(correct: bool | None) -> Attempt:
    findings = [Finding(kind=k, score=1.0) for k in ("syntax", "schema", "properties")]
    return Attempt(query=PRED, findings=findings, correct=correct)


def _invalid(kind: str) -> Attempt:
    return Attempt(query=PRED, findings=[Finding(kind=kind, score=0.0, message="bad")],
                   correct=False)  # fmt: skip


CTX = ScoringContext()
RECORDED = {"correctness": "recorded", "kg_validity": "recorded"}


def test_every_scorer_of_the_preset_is_registered() -> None:
    names = {s["name"] for s in PRESETS["text2cypher"]["scorers"]}
    assert names <= known_scorers()
    for name in ("bleu", "rouge_l", "jaro_winkler", "jaccard", "exact_match", "kg_valid"):
        assert name in known_scorers()


def test_text_scorers_compare_the_final_query_with_the_gold() -> None:
    output = Output(attempts=[Attempt(query="RETURN 1"), Attempt(query=PRED)])
    score = _scorer("bleu").score(_case(GOLD), output, CTX)
    assert score.value == pytest.approx(sacrebleu.sentence_bleu(PRED, [GOLD]).score / 100)
    assert score.details["metrics"]["bleu"] == score.value
    first = _scorer("bleu", attempt="first").score(_case(GOLD), output, CTX)
    assert first.value == pytest.approx(sacrebleu.sentence_bleu("RETURN 1", [GOLD]).score / 100)
    exact = _scorer("exact_match")
    assert exact.finish(exact.score(_case(GOLD), output, CTX)).passed is False
    same = Output(attempts=[Attempt(query=GOLD)])
    assert exact.finish(exact.score(_case(GOLD), same, CTX)).passed is True
    assert _scorer("rouge_l").score(_case(GOLD), same, CTX).value == 1.0
    assert _scorer("jaro_winkler").score(_case(GOLD), same, CTX).value == 1.0
    assert _scorer("jaccard").score(_case(GOLD), same, CTX).value == 1.0


def test_text_scorers_take_the_best_of_several_golds() -> None:
    case = _case("RETURN 2", PRED)
    score = _scorer("jaro_winkler").score(case, Output(attempts=[Attempt(query=PRED)]), CTX)
    assert score.value == 1.0 and score.details["matched_gold"] == 1
    multi = _scorer("bleu", multi_reference=True).score(
        case, Output(attempts=[Attempt(query=PRED)]), CTX
    )
    expected = sacrebleu.sentence_bleu(PRED, ["RETURN 2", PRED]).score / 100
    assert multi.value == pytest.approx(expected)


def test_text_scorers_without_gold_or_query() -> None:
    no_gold = Case.model_validate({"id": "c", "conversation": [{"content": "q"}]})
    output = Output(attempts=[Attempt(query=PRED)])
    assert score_case(_scorer("bleu"), no_gold, output, CTX).status == "unscored"
    empty = score_case(_scorer("rouge_l"), _case(GOLD), Output(attempts=[Attempt(query="  ")]), CTX)
    assert (empty.value, empty.status, empty.failure_reason) == (0.0, "ok", "empty")
    assert empty.details["metrics"] == {"rouge_l": 0.0}
    crashed = score_case(_scorer("jaccard"), _case(GOLD), Output(error="boom"), CTX)
    assert (crashed.value, crashed.passed, crashed.failure_reason) == (0.0, False, "crashed")


def test_text_scorers_give_a_write_query_nothing_even_without_a_database() -> None:
    """A write is the system's failure before any text is compared: its words (which may
    overlap the gold's) earn nothing."""
    write = Output(attempts=[Attempt(query=f"{GOLD} DETACH DELETE n", language="cypher")])
    for name in ("bleu", "rouge_l", "jaro_winkler", "jaccard"):
        s = score_case(_scorer(name), _case(GOLD), write, CTX)
        assert (s.value, s.failure_reason) == (0.0, "refused"), name


def test_agentic_scores_a_recorded_refinement_loop() -> None:
    scorer = _scorer("agentic", ks=[1, 2], **RECORDED)
    loop = Output(attempts=[_invalid("syntax"), _valid(False), _valid(True)])
    score = scorer.score(_case(GOLD), loop, CTX)
    assert (score.value, score.passed) == (1.0, True)
    m = score.details["metrics"]
    assert (m["pass_at_1"], m["success_at_1"], m["success_at_2"], m["success"]) == (0, 0, 0, 1)
    assert (m["kg_valid_at_1"], m["kg_valid_at_k"], m["iterations"]) == (0.0, 1.0, 3.0)
    assert score.details["iterations_to_success"] == 3
    assert [a["error_type"] for a in score.details["attempts"]] == [
        "syntax", "wrong_result", None
    ]  # fmt: skip
    never = scorer.score(_case(GOLD), Output(attempts=[_valid(False)] * 2), CTX)
    assert never.value == 0.0 and "wrong_result, wrong_result" in never.explanation


def test_agentic_unknown_correctness_is_unscored_not_failed() -> None:
    scorer = _scorer("agentic", **RECORDED)
    unknown = scorer.score(_case(GOLD), Output(attempts=[_valid(None)]), CTX)
    assert unknown.status == "unscored"
    crashed = score_case(scorer, _case(GOLD), Output(error="timeout"), CTX)
    assert (crashed.passed, crashed.failure_reason) == (False, "crashed")
    assert set(crashed.details["metrics"].values()) == {0.0}  # every sub-metric counts 0
    right = scorer.score(_case(GOLD), Output(attempts=[_valid(True)]), CTX)
    report = scorer.aggregate([_case(GOLD)] * 3, [unknown, crashed, right])["agentic_report"]
    assert report["cases"] == 3
    assert report["pass_at_1"] == 0.5  # the crash fails; the unknown is left out


def test_agentic_samples_and_unbiased_pass_at_k() -> None:
    scorer = _scorer("agentic", ks=[1, 2], samples=True, **RECORDED)
    cases = [_case(GOLD), _case(GOLD)]
    outputs = [
        Output(attempts=[_valid(True), _valid(False), _valid(False), _valid(False)]),
        Output(attempts=[_valid(False)] * 4),
    ]
    scores = [scorer.score(c, o, CTX) for c, o in zip(cases, outputs, strict=True)]
    assert [s.value for s in scores] == [0.25, 0.0]
    report = scorer.aggregate(cases, scores)["agentic_report"]
    assert report["pass_at_k"]["1"] == pytest.approx(0.125)
    assert report["pass_at_k"]["2"] == pytest.approx((1 - 3 / 6) / 2)  # 1 - C(3,2)/C(4,2)


def test_agentic_breakdown_by_metadata_and_tags() -> None:
    scorer = _scorer("agentic", breakdown=["complexity", "level"], **RECORDED)
    cases = [
        _case(GOLD, metadata={"complexity": "simple"}),
        _case(GOLD, metadata={"complexity": "complex"}, tags=["level:2"]),
        _case(GOLD, tags=["complexity=complex", "level:2"]),
    ]
    outputs = [
        Output(attempts=[_valid(True)]),
        Output(attempts=[_valid(False), _valid(True)]),
        Output(attempts=[_valid(False)]),
    ]
    scores = [scorer.score(c, o, CTX) for c, o in zip(cases, outputs, strict=True)]
    aggregate = scorer.aggregate(cases, scores)
    orjson.dumps(aggregate)  # summary.json takes it as it is (string keys)
    breakdown = aggregate["breakdown"]
    assert breakdown["complexity"]["simple"]["pass_at_1"] == 1.0
    assert breakdown["complexity"]["complex"]["cases"] == 2
    assert breakdown["complexity"]["complex"]["success"] == 0.5
    assert breakdown["level"]["2"]["refinement_gain"] == 0.5


def test_recorded_execution_errors_are_not_kg_errors() -> None:
    scorer = _scorer("agentic", **RECORDED)
    runtime = _valid(False).model_copy(update={"execution": ExecutionOutcome(kind="timeout")})
    score = scorer.score(_case(GOLD), Output(attempts=[runtime]), CTX)
    attempt = score.details["attempts"][0]
    assert (attempt["kg_valid"], attempt["error_type"]) == (True, "execution")


def test_llmetric_q_needs_a_database() -> None:
    score = _scorer("llmetric_q", **RECORDED).score(
        _case(GOLD), Output(attempts=[_valid(True)]), CTX
    )
    assert score.status == "unscored" and "database" in score.explanation


def test_options_are_checked() -> None:
    with pytest.raises(ValidationError):
        _scorer("agentic", ks=[0])
    with pytest.raises(ValidationError):
        _scorer("llmetric_q", weights=[0.5, 0.5, 0.5, 0.5])
    with pytest.raises(ValidationError):
        _scorer("bleu", smooth_method="nope")
    with pytest.raises(ValidationError):
        _scorer("agentic", correctness="guess")


def test_report_rows_label_every_figure() -> None:
    from queryeval.scorers.agentic import breakdown_rows, report_rows

    scorer = _scorer("agentic", ks=[1, 2], **RECORDED)
    cases = [_case(GOLD, tags=["level:1"]), _case(GOLD, tags=["level:2"])]
    outputs = [Output(attempts=[_valid(True)]), Output(attempts=[_invalid("schema"), _valid(True)])]
    scores = [scorer.score(c, o, CTX) for c, o in zip(cases, outputs, strict=True)]
    aggregate = scorer.aggregate(cases, scores)
    rows = dict(report_rows(aggregate))
    assert rows["Pass@1"] == 0.5
    assert rows["success@2 (within 2 iterations)"] == 1.0
    assert rows["recovery rate (1 of 1 first failures)"] == 1.0
    assert rows["first-attempt errors"] == "schema: 1"
    assert rows["iterations to success"] == "1: 1, 2: 1"
    table = breakdown_rows(aggregate)
    assert table[0][:3] == ["group", "cases", "Pass@1"]
    assert [row[0] for row in table[1:]] == ["level=1", "level=2"]
