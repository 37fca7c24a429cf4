"""The real openai client against a local OpenAI-compatible server with scripted replies."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.openai_server import FakeOpenAI, Reply
from queryeval.judges import Judge, JudgeConfig, Verdict

INPUTS = {
    "question": "What is the capital of France?",
    "expected_answer": "Paris",
    "generated_answer": "Paris",
}


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as s:
        yield s


def make_judge(server: FakeOpenAI, cache_dir: Path | None, **overrides: Any) -> Judge:
    settings: dict[str, Any] = {
        "model": "judge-model",
        "base_url": server.base_url,
        "api_key_env": None,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        "timeout_s": 5,
    }
    settings.update(overrides)
    return Judge(JudgeConfig.model_validate(settings), cache_dir=cache_dir)


def judge_once(
    judge: Judge, rubric: str = "answer_correctness", inputs: dict[str, Any] | None = None
) -> Verdict:
    async def go() -> Verdict:
        try:
            return await judge.judge(rubric, inputs or INPUTS)
        finally:
            await judge.aclose()

    return asyncio.run(go())


def judge_many(judge: Judge, inputs: list[dict[str, Any]]) -> list[Verdict]:
    async def go() -> list[Verdict]:
        try:
            return list(
                await asyncio.gather(*(judge.judge("answer_correctness", i) for i in inputs))
            )
        finally:
            await judge.aclose()

    return asyncio.run(go())


def test_valid_json_verdict(server: FakeOpenAI, tmp_path: Path) -> None:
    server.script(Reply.verdict(0.8, "mostly correct"))
    v = judge_once(make_judge(server, tmp_path))
    assert (v.status, v.score, v.reasoning) == ("ok", 0.8, "mostly correct")
    assert v.cached is False and v.attempts == 1


def test_request_uses_temperature_zero_seed_and_json_schema(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    judge_once(make_judge(server, tmp_path, seed=7))
    body = server.chat_requests[0].body
    assert body["temperature"] == 0
    assert body["seed"] == 7
    assert body["model"] == "judge-model"
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["reasoning", "score"]


def test_prose_with_a_labelled_score(server: FakeOpenAI, tmp_path: Path) -> None:
    server.script(Reply.text("The answer names Paris correctly.\nScore: 1.0"))
    v = judge_once(make_judge(server, tmp_path))
    assert v.status == "ok" and v.score == 1.0


def test_garbage_is_unscored_never_zero_and_keeps_the_raw_reply(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    server.script(Reply.text("As an AI, I would rather not grade this."))
    v = judge_once(make_judge(server, tmp_path))
    assert v.status == "unscored"
    assert v.score is None
    assert v.raw == "As an AI, I would rather not grade this."
    score = v.to_score()
    assert score.status == "unscored" and score.value is None
    assert score.details["judge"]["raw"] == v.raw


def test_score_outside_the_scale_is_unscored(server: FakeOpenAI, tmp_path: Path) -> None:
    server.script(Reply.verdict(8))  # a 0-10 habit on a 0-1 rubric: not silently clamped
    v = judge_once(make_judge(server, tmp_path))
    assert v.status == "unscored" and "outside" in v.reasoning


def test_truncated_reply_says_so(server: FakeOpenAI, tmp_path: Path) -> None:
    server.script(Reply.text('{"reasoning": "The generated answer', finish_reason="length"))
    v = judge_once(make_judge(server, tmp_path))
    assert v.status == "unscored" and "max_tokens" in v.reasoning


def test_429_with_retry_after_is_waited_for_then_retried(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    server.script(Reply.rate_limited(retry_after="0.3"), Reply.verdict(0.6))
    judge = make_judge(server, tmp_path)
    start = time.monotonic()
    v = judge_once(judge)
    elapsed = time.monotonic() - start
    assert v.status == "ok" and v.score == 0.6 and v.attempts == 2
    assert server.chat_calls == 2  # the SDK's own retries are off: one request per attempt
    assert elapsed >= 0.3
    assert judge.client.stats.rate_limited == 1 and judge.client.limiter.decreases == 1


def test_server_errors_are_retried(server: FakeOpenAI, tmp_path: Path) -> None:
    server.script(Reply.server_error(500), Reply.server_error(503), Reply.verdict(0.4))
    judge = make_judge(server, tmp_path)
    v = judge_once(judge)
    assert v.status == "ok" and v.score == 0.4 and v.attempts == 3
    assert server.chat_calls == 3 and judge.client.stats.retries == 2


def test_persistent_failure_is_an_error_verdict_after_bounded_attempts(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    server.chat_handler = lambda _req: Reply.server_error(500)
    v = judge_once(make_judge(server, tmp_path, max_attempts=3))
    assert v.status == "error" and v.score is None
    assert "gave up after 3 calls (3 failed, 0 rate-limited)" in v.reasoning
    assert server.chat_calls == 3


def test_429s_have_their_own_budget(server: FakeOpenAI, tmp_path: Path) -> None:
    # more 429s than max_attempts: a busy endpoint does not lose the judgment
    server.script(*[Reply.rate_limited(retry_after="0.01")] * 8, Reply.verdict(0.7))
    v = judge_once(make_judge(server, tmp_path, max_attempts=3))
    assert v.status == "ok" and v.score == 0.7 and v.attempts == 9
    server.chat_handler = lambda _req: Reply.rate_limited(retry_after="0.01")
    v = judge_once(make_judge(server, tmp_path, max_rate_limited=4, model="m2"))
    assert v.status == "error" and "4 rate-limited" in v.reasoning


def test_slow_reply_times_out_and_is_retried(server: FakeOpenAI, tmp_path: Path) -> None:
    server.script(Reply.verdict(0.9, delay_s=1.5), Reply.verdict(0.2))
    v = judge_once(make_judge(server, tmp_path, timeout_s=0.5))
    assert v.status == "ok" and v.score == 0.2 and v.attempts == 2


def test_client_errors_are_not_retried(server: FakeOpenAI, tmp_path: Path) -> None:
    server.chat_handler = lambda _req: Reply.error(404, "model not found")
    v = judge_once(make_judge(server, tmp_path))
    assert v.status == "error" and "404" in v.reasoning
    assert server.chat_calls == 1


def test_insufficient_quota_429_is_not_retried(server: FakeOpenAI, tmp_path: Path) -> None:
    server.chat_handler = lambda _req: Reply.error(429, "quota", code="insufficient_quota")
    v = judge_once(make_judge(server, tmp_path))
    assert v.status == "error" and "insufficient_quota" in v.reasoning
    assert server.chat_calls == 1


def test_too_long_retry_after_gives_up(server: FakeOpenAI, tmp_path: Path) -> None:
    server.chat_handler = lambda _req: Reply.rate_limited(retry_after="3600")
    v = judge_once(make_judge(server, tmp_path, max_retry_after_s=10))
    assert v.status == "error" and "3600" in v.reasoning
    assert server.chat_calls == 1


def test_rejected_response_format_falls_back_and_is_remembered(tmp_path: Path) -> None:
    with FakeOpenAI(
        Reply.text('Sure! {"reasoning": "fine", "score": 0.8}'), reject_response_format=True
    ) as s:
        judge = make_judge(s, tmp_path)
        verdicts = judge_many(judge, [{**INPUTS, "question": f"q{i}"} for i in range(3)])
        assert [v.score for v in verdicts] == [0.8, 0.8, 0.8]
        with_format = [r for r in s.chat_requests if "response_format" in r.body]
        # the judgments in flight together try response_format once each, then go without
        assert 1 <= len(with_format) <= 3
        assert "response_format" not in s.chat_requests[-1].body
        calls = s.chat_calls
        assert judge_once(judge).score == 0.8
        assert s.chat_calls == calls + 1  # remembered: no rejected attempt any more
        assert "response_format" not in s.chat_requests[-1].body


def test_json_schema_mode_never_drops_the_format(tmp_path: Path) -> None:
    with FakeOpenAI(reject_response_format=True) as s:
        v = judge_once(make_judge(s, tmp_path, structured_output="json_schema"))
    assert v.status == "error" and "400" in v.reasoning


def test_cache_makes_a_rerun_free(server: FakeOpenAI, tmp_path: Path) -> None:
    server.chat_handler = lambda _req: Reply.verdict(0.6, prompt_tokens=1000, completion_tokens=100)
    inputs = [{**INPUTS, "generated_answer": f"answer {i}"} for i in range(5)]
    first = judge_many(make_judge(server, tmp_path), inputs)
    assert server.chat_calls == 5
    second_judge = make_judge(server, tmp_path)
    second = judge_many(second_judge, inputs)
    assert server.chat_calls == 5  # zero new calls
    assert [v.score for v in second] == [v.score for v in first]
    assert all(v.cached for v in second) and not any(v.cached for v in first)
    assert second_judge.stats.cache_hits == 5 and second_judge.client.stats.calls == 0


def test_cache_key_covers_model_rubric_inputs_and_params(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    judge_once(make_judge(server, tmp_path))
    judge_once(make_judge(server, tmp_path))  # same: cached
    assert server.chat_calls == 1
    judge_once(make_judge(server, tmp_path, model="other-model"))
    judge_once(make_judge(server, tmp_path, seed=1))
    judge_once(make_judge(server, tmp_path), inputs={**INPUTS, "generated_answer": "Lyon"})
    assert server.chat_calls == 4


def test_failures_are_not_cached(server: FakeOpenAI, tmp_path: Path) -> None:
    server.chat_handler = lambda _req: Reply.server_error(500)
    assert judge_once(make_judge(server, tmp_path, max_attempts=1)).status == "error"
    server.chat_handler = lambda _req: Reply.verdict(0.9)
    v = judge_once(make_judge(server, tmp_path, max_attempts=1))
    assert v.status == "ok" and not v.cached


def test_identical_judgments_in_flight_are_asked_once(server: FakeOpenAI, tmp_path: Path) -> None:
    judge = make_judge(server, None, cache=False)
    verdicts = judge_many(judge, [INPUTS] * 4)
    assert server.chat_calls == 1
    assert [v.score for v in verdicts] == [1.0] * 4
    assert sum(v.cost or 0 for v in verdicts) == 0 or judge.config.price is None
    assert judge.stats.deduplicated == 3


def test_usage_and_cost_come_from_the_reply_and_the_price_table(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    server.script(Reply.verdict(1.0, prompt_tokens=2000, completion_tokens=500))
    judge = make_judge(
        server, tmp_path, prices={"judge-model": {"input_per_1k": 0.001, "output_per_1k": 0.002}}
    )
    v = judge_once(judge)
    assert v.usage == {"prompt_tokens": 2000, "completion_tokens": 500}
    assert v.cost == pytest.approx(2 * 0.001 + 0.5 * 0.002)
    assert judge.stats.cost_usd == pytest.approx(0.003)
    assert v.to_score().details["judge"]["cost_usd"] == pytest.approx(0.003)


def test_spend_cap_stops_issuing_calls(server: FakeOpenAI, tmp_path: Path) -> None:
    server.chat_handler = lambda _req: Reply.verdict(0.5, prompt_tokens=100, completion_tokens=10)
    price = {"input_per_1k": 1.0, "output_per_1k": 1.0}
    judge = make_judge(
        server,
        tmp_path,
        max_tokens=100,
        max_cost_usd=1.0,
        prices={"judge-model": price},
        concurrency=1,
    )
    verdicts = judge_many(judge, [{**INPUTS, "generated_answer": f"a{i}"} for i in range(20)])
    ok = [v for v in verdicts if v.status == "ok"]
    capped = [v for v in verdicts if v.status == "unscored"]
    assert ok and capped and len(ok) + len(capped) == 20
    assert all("spend cap reached" in v.reasoning for v in capped)
    assert server.chat_calls == len(ok)  # no call issued past the cap
    assert judge.spend.spent_usd <= 1.0
    assert all(v.score is None for v in capped)


def test_spend_cap_needs_a_price() -> None:
    with pytest.raises(ValueError, match="needs a price"):
        JudgeConfig(model="m", max_cost_usd=1.0)


def test_outage_gives_error_verdicts_and_the_run_goes_on(tmp_path: Path) -> None:
    with FakeOpenAI() as s:
        url = s.base_url
    config = JudgeConfig(
        model="m",
        base_url=url,
        api_key_env=None,
        max_attempts=2,
        backoff_base_s=0.01,
        outage_after=3,
    )
    judge = Judge(config, cache_dir=tmp_path)

    async def go() -> list[Verdict]:
        out = [
            await judge.judge("answer_correctness", {**INPUTS, "question": f"q{i}"})
            for i in range(6)
        ]
        await judge.aclose()
        return out

    verdicts = asyncio.run(go())
    assert [v.status for v in verdicts] == ["error"] * 6
    assert "connection error" in verdicts[0].reasoning
    assert "marked down" in verdicts[-1].reasoning  # later judgments fail fast
    assert judge.client.stats.calls == 3 * 2


def test_api_key_is_read_from_the_named_environment_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("QE_TEST_JUDGE_KEY", "sk-test-123")
    with FakeOpenAI(api_key="sk-test-123") as s:
        ok = judge_once(make_judge(s, tmp_path, api_key_env="QE_TEST_JUDGE_KEY"))
        monkeypatch.setenv("QE_TEST_JUDGE_KEY", "wrong")
        refused = judge_once(make_judge(s, tmp_path, api_key_env="QE_TEST_JUDGE_KEY", model="m2"))
    assert ok.status == "ok"
    assert refused.status == "error" and "401" in refused.reasoning


def test_missing_api_key_is_an_error_that_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, server: FakeOpenAI, tmp_path: Path
) -> None:
    monkeypatch.delenv("QE_UNSET_KEY", raising=False)
    v = judge_once(make_judge(server, tmp_path, api_key_env="QE_UNSET_KEY"))
    assert v.status == "error" and "QE_UNSET_KEY" in v.reasoning
    assert server.chat_calls == 0


def test_unknown_rubric_and_missing_input_are_errors(server: FakeOpenAI, tmp_path: Path) -> None:
    judge = make_judge(server, tmp_path)
    assert "unknown rubric" in judge_once(judge, rubric="nope").reasoning
    v = judge_once(make_judge(server, tmp_path), inputs={"question": "q", "expected_answer": "a"})
    assert v.status == "error" and "generated_answer" in v.reasoning
    assert server.chat_calls == 0


def test_a_judge_works_across_event_loops(server: FakeOpenAI, tmp_path: Path) -> None:
    judge = make_judge(server, None, cache=False)
    a = asyncio.run(judge.judge("answer_correctness", INPUTS))
    b = asyncio.run(judge.judge("answer_correctness", {**INPUTS, "question": "again"}))
    judge.close()
    assert a.status == b.status == "ok"
