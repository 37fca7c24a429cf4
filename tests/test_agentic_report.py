"""The seed-003 agentic metrics and LLMetric-Q on hand-built attempt sets."""

from __future__ import annotations

import pytest

from queryeval.cases import Attempt, ExecutionOutcome, Finding, Output
from queryeval.metrics import agentic_report, jaccard_output, llmetric_q, pass_at_1_output
from queryeval.metrics.agentic import (
    AttemptSummary,
    kg_valid,
    primary_error,
    recovery_rate,
    summarize_attempt,
)


def _attempt(kind: str) -> Attempt:
    """An attempt that is correct ("ok"), or fails the way `kind` says."""
    scores = {"syntax": 1.0, "schema": 1.0, "properties": 1.0}
    if kind in scores:
        scores[kind] = 0.0
    findings = [
        Finding(kind=k, score=v, message="" if v else f"{k} error") for k, v in scores.items()
    ]
    if kind in ("syntax", "schema", "properties"):
        return Attempt(query="q", findings=findings, correct=False)
    if kind == "execution":
        return Attempt(
            query="q", findings=findings, execution=ExecutionOutcome(kind="runtime"), correct=False
        )
    outcome = ExecutionOutcome(kind="ok", row_count=1)
    return Attempt(query="q", findings=findings, execution=outcome, correct=kind == "ok")


# Ten refinement loops (at most three iterations each), named by what each attempt did.
LOOPS = [
    ["ok"],
    ["ok"],
    ["syntax", "ok"],
    ["schema", "properties", "ok"],
    ["syntax", "syntax", "syntax"],
    ["wrong", "wrong", "wrong"],  # KG-valid but wrong, never fixed
    ["execution", "ok"],
    ["properties", "wrong", "wrong"],
    ["ok"],
    ["wrong", "ok"],
]
OUTPUTS = [Output(attempts=[_attempt(k) for k in loop]) for loop in LOOPS]


def test_agentic_report_on_hand_built_loops() -> None:
    r = agentic_report(OUTPUTS, ks=(1, 2, 3))
    assert r.cases == 10
    assert r.pass_at_1 == pytest.approx(3 / 10)
    assert r.success_at_k == pytest.approx({1: 0.3, 2: 0.6, 3: 0.7})
    assert r.success == pytest.approx(0.7)
    assert r.execution_accuracy == pytest.approx(0.7)
    assert r.refinement_gain == pytest.approx(0.4)
    # Seed formula (Pass@k - Pass@1) / (1 - Pass@1) = 0.4 / 0.7; counts: 4 of 7 recovered.
    assert r.recovery_rate == pytest.approx(0.4 / 0.7)
    assert (r.recovered, r.initially_failed) == (4, 7)
    assert r.recovery_rate_counts == pytest.approx(4 / 7)
    assert r.kg_valid_at_1 == pytest.approx(6 / 10)
    assert r.kg_valid_at_k == pytest.approx(9 / 10)
    assert r.kg_refinement_gain == pytest.approx(0.3)
    assert r.kg_recovery_rate == pytest.approx(3 / 4)
    assert r.mean_iterations == pytest.approx(2.1)
    assert r.max_iterations == 3
    assert r.iterations_to_success == {1: 3, 2: 3, 3: 1}
    assert r.success_curve == pytest.approx([0.3, 0.6, 0.7])
    assert r.error_types == {
        "syntax": 4,
        "schema": 1,
        "properties": 2,
        "execution": 1,
        "wrong_result": 6,
    }
    assert list(r.error_types) == ["syntax", "schema", "properties", "execution", "wrong_result"]
    assert r.first_error_types == {
        "syntax": 2,
        "schema": 1,
        "properties": 1,
        "execution": 1,
        "wrong_result": 2,
    }
    assert r.recovery_by_error_type == pytest.approx(
        {"syntax": 0.5, "schema": 1.0, "properties": 0.0, "execution": 1.0, "wrong_result": 0.5}
    )
    assert r.pass_at_k == {}
    assert r.as_dict()["pass_at_1"] == r.pass_at_1
    assert r.as_dict()["iterations_to_success"] == {"1": 3, "2": 3, "3": 1}  # JSON keys


def test_agentic_report_on_plain_flags_matches_outputs() -> None:
    flags = [[k == "ok" for k in loop] for loop in LOOPS]
    r = agentic_report(flags, ks=(1, 2, 3))
    assert r.pass_at_1 == pytest.approx(0.3)
    assert r.success_at_k == pytest.approx({1: 0.3, 2: 0.6, 3: 0.7})
    assert r.recovery_rate == pytest.approx(r.recovery_rate_counts)
    assert r.kg_valid_at_1 is None  # plain flags carry no validity
    assert r.error_types == {}


def test_recovery_rate_forms_agree_and_undefined_cases() -> None:
    for flags in ([[True], [False, True], [False, False]], [[False, False, True]] * 3):
        r = agentic_report(flags)
        assert r.recovery_rate == pytest.approx(r.recovery_rate_counts)
    every_first = agentic_report([[True], [True]])
    assert every_first.recovery_rate is None  # 0/0: the seed printed 0 here
    assert every_first.recovery_rate_counts is None
    assert recovery_rate(0.5, 0.75) == pytest.approx(0.5)
    assert recovery_rate(1.0, 1.0) is None


def test_unknown_correctness_is_left_out_not_failed() -> None:
    r = agentic_report([[None, True], [True], [False, False], [None]])
    assert r.pass_at_1 == pytest.approx(1 / 2)  # first attempts known in 2 cases
    assert r.success == pytest.approx(2 / 3)  # [None] alone is unknown
    assert r.execution_accuracy == pytest.approx(2 / 3)
    empty = agentic_report([[]])
    assert (empty.pass_at_1, empty.success) == (0.0, 0.0)  # no attempt: a failure


def test_unbiased_pass_at_k_over_samples() -> None:
    samples = [[True, False, False, False], [False] * 4, [True, True, False, True]]
    r = agentic_report(samples, ks=(1, 2), samples=True)
    # pass@1 = c/n per problem: (1/4 + 0 + 3/4) / 3; pass@2 = 1 - C(n-c,2)/C(n,2).
    assert r.pass_at_k[1] == pytest.approx((0.25 + 0 + 0.75) / 3)
    assert r.pass_at_k[2] == pytest.approx(((1 - 3 / 6) + 0 + 1.0) / 3)


def test_kg_validity_and_primary_error() -> None:
    valid = _attempt("wrong")
    assert kg_valid(valid) is True
    assert kg_valid(_attempt("properties")) is False
    assert kg_valid(_attempt("execution")) is True  # execution errors are not KG errors
    assert kg_valid(Attempt(query="q")) is None  # nothing checked
    not_applicable = Attempt(
        query="q",
        findings=[
            Finding(kind="syntax", score=1.0),
            Finding(kind="schema", score=1.0),
            Finding(kind="properties", score=1.0, message="not applicable: no properties"),
        ],
    )
    assert kg_valid(not_applicable) is True
    unscored = Attempt(query="q", findings=[Finding(kind="syntax", message="unexpected token")])
    assert kg_valid(unscored) is False
    assert primary_error(unscored) == "syntax"
    assert primary_error(_attempt("execution")) == "execution"
    engine_syntax = Attempt(query="q", execution=ExecutionOutcome(kind="syntax"), correct=False)
    assert primary_error(engine_syntax) == "syntax"
    assert primary_error(Attempt(query="q", execution=ExecutionOutcome(kind="timeout"))) == (
        "execution"
    )
    assert summarize_attempt(_attempt("ok")) == AttemptSummary(True, True, None)
    assert summarize_attempt(_attempt("wrong")) == AttemptSummary(False, True, "wrong_result")


def test_llmetric_q_follows_the_seed_formula() -> None:
    # 0.3 Pass@1 + 0.4 KG Valid + 0.2 Jaccard Output + 0.1 (Jaro-Winkler + ROUGE-L F1) / 2
    assert llmetric_q(False, True, 0.25, 0.9, 0.5) == pytest.approx(0.4 + 0.05 + 0.07)
    assert llmetric_q(True, True, 0.5, 0.8, 0.6) == pytest.approx(0.3 + 0.4 + 0.1 + 0.07)
    assert llmetric_q(True, True, 0.5, 0.8, 0.6, legacy_jump=True) == 1.0
    assert llmetric_q(True, False, 0.5, 0.8, 0.6, legacy_jump=True) == pytest.approx(
        0.3 + 0.1 + 0.07
    )
    assert llmetric_q(1, 0, 0.0, 0.0, 0.0, weights=(1, 0, 0, 0)) == 1.0
    with pytest.raises(ValueError, match="summing to 1"):
        llmetric_q(True, True, 1, 1, 1, weights=(0.5, 0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        llmetric_q(True, True, 1.5, 1, 1)


def test_output_metrics() -> None:
    gold = [["Tom Hanks", 1956], ["Meg Ryan", 1961]]
    assert pass_at_1_output([("Meg Ryan", 1961.0), ("Tom Hanks", 1956)], gold) == 1.0
    assert pass_at_1_output([("Meg Ryan", 1961), ("Tom Hanks", 1956)], gold, ordered=True) == 0.0
    assert pass_at_1_output(gold + gold[:1], gold) == 0.0  # multiplicities count
    assert jaccard_output(gold + gold[:1], gold) == 1.0  # sets of rows
    assert jaccard_output([["Tom Hanks", 1956], ["Kevin Bacon", 1958]], gold) == pytest.approx(
        1 / 3
    )
    assert jaccard_output([], []) == 1.0
    assert jaccard_output([[1]], []) == 0.0
    nested = [[{"name": "x", "tags": ["a", "b"]}, -0.0, float("nan")]]
    same = [[{"tags": ("a", "b"), "name": "x"}, 0.0, float("nan")]]
    assert pass_at_1_output(nested, same) == 1.0
