"""Judged scorers end to end against the local server: inputs, missing outputs, human-label
agreement, judge cost apart from the system's, and the estimate before spending."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from fakes.openai_server import ChatRequest, FakeOpenAI, Reply
from queryeval.cases import Attempt, Case, Output, Score
from queryeval.cli._estimate import estimate_command
from queryeval.config import SuiteConfig
from queryeval.scorers import ScoringContext, ascore_case, build_scorer, estimate
from queryeval.scorers.judged import AnswerCorrectnessScorer, QuerySimilarityScorer
from queryeval.systems import PredictionsFile

PRICES = {"judge": {"input_per_1k": 0.01, "output_per_1k": 0.03}}


def grade(req: ChatRequest) -> Reply:
    """1.0 when the generated answer contains the expected one, else 0.2."""
    user = req.content("user")
    nonce = re.search(r'nonce="([0-9a-f]{16})"', req.content("system"))
    assert nonce is not None
    field = {
        m.group(1): m.group(2)
        for m in re.finditer(
            rf'<data name="(\w+)" nonce="{nonce.group(1)}">\n(.*?)\n</data', user, re.DOTALL
        )
    }
    ok = field["expected_answer"].lower() in field["generated_answer"].lower()
    return Reply.verdict(1.0 if ok else 0.2, prompt_tokens=500, completion_tokens=50)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(grade) as s:
        yield s


def qa_case(cid: str, expected: str, **labels: Any) -> Case:
    return Case.model_validate(
        {
            "id": cid,
            "labels": labels,
            "conversation": [
                {"role": "user", "content": f"question {cid}?", "target": {"answer": expected}}
            ],
        }
    )


def suite_for(
    tmp_path: Path, server: FakeOpenAI | None, scorer: str = "llm_answer_correctness"
) -> SuiteConfig:
    data: dict[str, Any] = {
        "name": "t",
        "cases": "cases.yaml",
        "systems": [{"name": "sys", "predictions": "pred.jsonl"}],
        "scorers": [scorer],
    }
    if server is not None:
        data["judge"] = {
            "model": "judge",
            "base_url": server.base_url,
            "api_key_env": None,
            "prices": PRICES,
        }
    suite = SuiteConfig.model_validate(data)
    suite.base_dir = tmp_path
    suite.source = tmp_path / "suite.yaml"
    return suite


def run_scorer(
    suite: SuiteConfig, cases: list[Case], outputs: list[Output], cache: Path
) -> tuple[Any, list[Score]]:
    scorer = build_scorer(suite.scorers[0])
    ctx = ScoringContext(suite, cache)

    async def go() -> list[Score]:
        scores = await asyncio.gather(
            *(ascore_case(scorer, c, o, ctx) for c, o in zip(cases, outputs, strict=True))
        )
        judge = ctx._resources.get("judge")
        if judge is not None:
            await judge.aclose()
        return list(scores)

    scores = asyncio.run(go())
    ctx.close()
    return scorer, scores


def answer(text: str | None, cost: float | None = None) -> Output:
    return Output(attempts=[Attempt(answer=text)], cost=cost)


def test_answer_correctness_end_to_end(server: FakeOpenAI, tmp_path: Path) -> None:
    cases = [qa_case("1", "Paris"), qa_case("2", "Paris")]
    scorer, scores = run_scorer(
        suite_for(tmp_path, server),
        cases,
        [answer("It is Paris."), answer("It is Lyon.")],
        tmp_path,
    )
    assert [s.value for s in scores] == [1.0, 0.2]
    assert isinstance(scorer, AnswerCorrectnessScorer)
    judge = scores[0].details["judge"]
    assert judge["rubric"] == "answer_correctness" and judge["usage"] == {
        "prompt_tokens": 500,
        "completion_tokens": 50,
    }
    assert judge["cost_usd"] == pytest.approx(0.5 * 0.01 + 0.05 * 0.03)


def test_no_answer_is_a_zero_without_asking_the_judge(server: FakeOpenAI, tmp_path: Path) -> None:
    _, (s,) = run_scorer(
        suite_for(tmp_path, server), [qa_case("1", "Paris")], [answer("  ")], tmp_path
    )
    assert s.value == 0.0 and s.passed is False and server.chat_calls == 0
    assert s.failure_reason == "empty"


def test_case_without_expected_answer_is_unscored(server: FakeOpenAI, tmp_path: Path) -> None:
    c = Case.model_validate({"id": "x", "conversation": [{"role": "user", "content": "hi"}]})
    _, (s,) = run_scorer(suite_for(tmp_path, server), [c], [answer("hello")], tmp_path)
    assert s.status == "unscored" and "expected answer" in s.explanation


def test_no_judge_configured_is_unscored_with_instructions(tmp_path: Path) -> None:
    _, (s,) = run_scorer(
        suite_for(tmp_path, None), [qa_case("1", "Paris")], [answer("Paris")], tmp_path
    )
    assert s.status == "unscored" and s.value is None
    assert "api_key_env" in s.explanation and "base_url" in s.explanation


def test_aggregate_reports_agreement_and_judge_cost_apart_from_system_cost(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    cases = [
        qa_case("1", "Paris", correct=1),
        qa_case("2", "Paris", correct=0),
        qa_case("3", "Rome", correct=1),
        qa_case("4", "Oslo"),
    ]
    outputs = [
        answer("Paris", cost=0.5),
        answer("Lyon", cost=0.5),
        answer("Milan", cost=0.5),
        answer("Oslo", cost=0.5),
    ]
    scorer, scores = run_scorer(suite_for(tmp_path, server), cases, outputs, tmp_path)
    agg = scorer.aggregate(cases, scores)
    # judge: 1, 0.2, 0.2 vs human 1, 0, 1 -> binarised agree, agree, disagree
    assert agg["agreement"]["n"] == 3 and agg["agreement"]["accuracy"] == pytest.approx(2 / 3)
    assert agg["agreement"]["kappa"] == pytest.approx(0.4)  # p_o 2/3, p_e 4/9
    assert agg["judge"]["judgments"] == 4 and agg["judge"]["cached"] == 0
    assert agg["judge"]["cost_usd"] == pytest.approx(4 * (0.5 * 0.01 + 0.05 * 0.03))
    assert (
        sum(o.cost or 0 for o in outputs) == 2.0
    )  # the system's cost lives in the outputs, not here


def test_human_label_key_option(server: FakeOpenAI, tmp_path: Path) -> None:
    suite = suite_for(tmp_path, server, scorer="x")
    suite.scorers[0].name = "llm_answer_correctness"
    suite.scorers[0].options = {"human_label": "grade", "agreement_threshold": 0.8}
    cases = [qa_case("1", "Paris", grade=0.9), qa_case("2", "Paris", grade=0.3)]
    scorer, scores = run_scorer(suite, cases, [answer("Paris"), answer("Lyon")], tmp_path)
    assert scorer.aggregate(cases, scores)["agreement"]["accuracy"] == 1.0


def kql_case(cid: str, **metadata: Any) -> Case:
    return Case.model_validate(
        {
            "id": cid,
            "metadata": metadata,
            "conversation": [
                {
                    "role": "user",
                    "content": "errors per level?",
                    "target": {"query": {"language": "kql", "text": "T | count"}},
                }
            ],
        }
    )


def test_query_similarity_sends_question_schema_gold_and_generated(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    server.chat_handler = lambda _req: Reply.verdict(0.7)
    suite = suite_for(tmp_path, server, scorer="llm_query_similarity")
    c = kql_case("1", schema={"T": {"level": "string"}})
    scorer, (s,) = run_scorer(
        suite, [c], [Output(attempts=[Attempt(query="T | summarize count() by level")])], tmp_path
    )
    assert isinstance(scorer, QuerySimilarityScorer) and s.value == 0.7
    user = server.chat_requests[0].content("user")
    for text in (
        "errors per level?",
        '"level": "string"',
        "T | count",
        "T | summarize count() by level",
    ):
        assert text in user


def test_query_similarity_without_a_query_is_zero(server: FakeOpenAI, tmp_path: Path) -> None:
    suite = suite_for(tmp_path, server, scorer="llm_query_similarity")
    _, (s,) = run_scorer(
        suite, [kql_case("1")], [Output(attempts=[Attempt(answer="no idea")])], tmp_path
    )
    assert s.value == 0.0 and server.chat_calls == 0 and s.failure_reason == "empty"


# --- estimate -------------------------------------------------------------------------------


def write_suite(tmp_path: Path, server: FakeOpenAI | None) -> Path:
    cases = [
        {
            "id": str(i),
            "conversation": [{"role": "user", "content": f"q{i}?", "target": {"answer": "Paris"}}],
        }
        for i in range(4)
    ]
    (tmp_path / "cases.yaml").write_text(json.dumps(cases))
    (tmp_path / "pred.jsonl").write_text(
        "".join(json.dumps({"case_id": str(i), "answer": f"answer {i}"}) + "\n" for i in range(3))
    )  # case 3 not generated yet
    suite: dict[str, Any] = {
        "name": "t",
        "cases": "cases.yaml",
        "scorers": ["llm_answer_correctness"],
        "systems": [{"name": "sys", "predictions": "pred.jsonl"}],
    }
    if server is not None:
        suite["judge"] = {
            "model": "judge",
            "base_url": server.base_url,
            "api_key_env": None,
            "prices": PRICES,
            "max_tokens": 200,
            "estimate_output_tokens": 100,
        }
    (tmp_path / "suite.yaml").write_text(json.dumps(suite))
    return tmp_path / "suite.yaml"


def test_estimate_counts_uncached_calls_and_cost_then_zero_after_a_run(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    from queryeval.cases import load_cases
    from queryeval.runner import load_suite

    suite = load_suite(write_suite(tmp_path, server))
    cases = load_cases(suite.cases, suite.base_dir)
    outputs = {"sys": PredictionsFile(tmp_path / "pred.jsonl").outputs}
    before = estimate(suite, cases, outputs, cache_dir=tmp_path / "cache")
    assert server.chat_calls == 0  # estimating calls nothing
    assert (before.judgments, before.cached, before.to_call, before.approximate) == (4, 0, 4, 1)
    assert before.completion_tokens == 400
    assert before.cost_usd == pytest.approx(before.prompt_tokens / 1000 * 0.01 + 0.4 * 0.03)
    assert before.worst_case_usd is not None and before.worst_case_usd > before.cost_usd
    assert "chars/4" in before.line() and "tiktoken" in before.line()
    run_scorer(suite, cases[:3], [outputs["sys"][c.id] for c in cases[:3]], tmp_path / "cache")
    after = estimate(suite, cases, outputs, cache_dir=tmp_path / "cache")
    assert (after.judgments, after.cached, after.to_call) == (4, 3, 1)  # only the ungenerated one


def test_estimate_command_prints_the_line(server: FakeOpenAI, tmp_path: Path) -> None:
    app = typer.Typer()
    app.command()(estimate_command)
    result = CliRunner().invoke(
        app, [str(write_suite(tmp_path, server)), "--cache-dir", str(tmp_path / "c")]
    )
    assert result.exit_code == 0, result.output
    assert "judge judge: 4 call(s) to make (0 of 4 judgment(s) cached)" in result.output
    assert "answer_correctness: 4" in result.output
    assert server.chat_calls == 0


def test_estimate_without_judge(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command()(estimate_command)
    result = CliRunner().invoke(app, [str(write_suite(tmp_path, None))])
    assert (
        result.exit_code == 0
        and "none configured" in result.output
        and "docs/judge.md" in result.output
    )


def test_estimate_command_bad_input_exits_2(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command()(estimate_command)
    (tmp_path / "suite.yaml").write_text("name: x\ncases: nope.yaml\nsystems: []\n")
    result = CliRunner().invoke(app, [str(tmp_path / "suite.yaml")])
    assert result.exit_code == 2 and "suite.yaml" in result.output
