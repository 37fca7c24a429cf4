"""A whole run with a judged scorer: scores stored, judge cost apart from the system's cost,
a judge outage recorded per case, and a second run answered from the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes.openai_server import FakeOpenAI, Reply
from queryeval.runner import load_suite, run_suite


def write_suite(tmp_path: Path, base_url: str) -> Path:
    cases = [
        {
            "id": f"c{i}",
            "labels": {"correct": i % 2},
            "conversation": [{"role": "user", "content": f"q{i}?", "target": {"answer": "Paris"}}],
        }
        for i in range(6)
    ]
    (tmp_path / "cases.yaml").write_text(json.dumps(cases))
    (tmp_path / "pred.jsonl").write_text(
        "".join(
            json.dumps({"case_id": f"c{i}", "answer": f"a{i}", "cost": 0.25}) + "\n"
            for i in range(6)
        )
    )
    suite = {
        "name": "judged",
        "cases": "cases.yaml",
        "scorers": ["llm_answer_correctness"],
        "systems": [{"name": "sys", "predictions": "pred.jsonl"}],
        "judge": {
            "model": "judge",
            "base_url": base_url,
            "api_key_env": None,
            "max_attempts": 2,
            "backoff_base_s": 0.01,
            "prices": {"judge": {"input_per_1k": 0.01, "output_per_1k": 0.02}},
        },
        "settings": {"cache_dir": "cache"},
    }
    (tmp_path / "suite.yaml").write_text(json.dumps(suite))
    return tmp_path / "suite.yaml"


def test_run_with_a_judge_then_rerun_from_cache(tmp_path: Path) -> None:
    with FakeOpenAI(Reply.verdict(1.0, prompt_tokens=100, completion_tokens=10)) as server:
        suite = load_suite(write_suite(tmp_path, server.base_url))
        first = run_suite(suite, tmp_path / "run1", progress=False, write_reports=False)
        calls = server.chat_calls
        second = run_suite(suite, tmp_path / "run2", progress=False, write_reports=False)
        assert server.chat_calls == calls == 6  # the second run made zero calls
    for result, fresh in ((first, 6), (second, 0)):
        entry = result.summary["systems"]["sys"]
        scorer = entry["scorers"]["llm_answer_correctness"]
        assert scorer["ok"] == 6 and scorer["mean"] == 1.0
        judge = scorer["aggregate"]["judge"]
        assert judge["judgments"] == 6 and judge["cached"] == 6 - fresh
        # 100 prompt and 10 completion tokens per call at $0.01 / $0.02 per 1k
        assert judge["cost_usd"] == pytest.approx(fresh * (0.1 * 0.01 + 0.01 * 0.02))
        assert entry["system_cost"] == 1.5  # the system's own cost, reported apart
        assert scorer["aggregate"]["agreement"]["n"] == 6
    records = [
        json.loads(line) for line in (tmp_path / "run1" / "results.jsonl").read_text().splitlines()
    ]
    assert records[0]["scores"]["llm_answer_correctness"]["details"]["judge"]["model"] == "judge"


def test_judge_outage_is_recorded_per_case_and_the_run_completes(tmp_path: Path) -> None:
    with FakeOpenAI() as server:
        url = server.base_url  # stopped at once: every call fails to connect
    suite = load_suite(write_suite(tmp_path, url))
    result = run_suite(suite, tmp_path / "run", progress=False, write_reports=False)
    scorer = result.summary["systems"]["sys"]["scorers"]["llm_answer_correctness"]
    # the judge's trouble is the evaluator's: unscored (not a scorer error), no mean, flagged
    assert scorer["n"] == 6 and scorer["unscored"] == 6 and scorer["error"] == 0
    assert scorer["mean"] is None and scorer["flagged"] is True
    assert any(
        "connection error" in reason or "marked down" in reason
        for reason in scorer["not_scored_reasons"]
    )
