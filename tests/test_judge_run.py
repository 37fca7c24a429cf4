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


def test_a_judge_outage_mid_run_then_retry_errors_scores_what_it_missed(tmp_path: Path) -> None:
    """Soak: the judge answers three calls, then is down (HTTP 503); the run completes with
    the rest unscored; once it is back, `--retry-errors` judges those again and only those
    (the cached judgments are not asked for again), to the figures of an undisturbed run."""
    answered = 0

    def flaky(req: object) -> Reply:
        nonlocal answered
        if answered >= 3:
            return Reply.server_error(503)
        answered += 1
        return Reply.verdict(1.0)

    with FakeOpenAI(flaky) as server:
        suite = load_suite(write_suite(tmp_path, server.base_url))
        first = run_suite(suite, tmp_path / "run", progress=False, write_reports=False)
        scorer = first.summary["systems"]["sys"]["scorers"]["llm_answer_correctness"]
        assert (scorer["ok"], scorer["unscored"], scorer["mean"]) == (3, 3, None)
        answered, outage_calls = -100, server.chat_calls  # back up
        again = run_suite(
            suite, tmp_path / "run", progress=False, write_reports=False, retry_errors=True
        )
        assert server.chat_calls - outage_calls == 3  # only the three it missed
    assert (again.new_records, again.skipped) == (3, 3)
    scorer = again.summary["systems"]["sys"]["scorers"]["llm_answer_correctness"]
    assert (scorer["ok"], scorer["unscored"], scorer["mean"]) == (6, 0, 1.0)
    ids = [json.loads(x)["case_id"] for x in (tmp_path / "run" / "results.jsonl").open()]
    assert sorted(ids) == [f"c{i}" for i in range(6)]
