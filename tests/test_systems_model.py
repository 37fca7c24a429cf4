"""Model systems end to end against the local fake OpenAI-compatible server: a SQL suite run
through a model, the output cache across runs, samples and pass@k, the refinement loop,
rate limits, and what stops a run (missing key, refused key, spend cap)."""

from __future__ import annotations

import json
import time
from fractions import Fraction
from math import comb
from pathlib import Path

import pytest

from fakes.openai_server import ChatRequest, FakeOpenAI, Reply
from queryeval.config import SuiteConfig
from queryeval.errors import InputError
from queryeval.runner import load_suite, run_suite
from systems_support import (
    CASES,
    IDS,
    answering,
    asked_question,
    feedback_messages,
    fenced,
    model_system,
    records,
    write_suite,
)

Q_ORDERS, Q_DELIVERED, Q_COUNTRY, Q_PRODUCTS = list(CASES)


def run(path: Path, out: Path, **kw: object) -> dict:
    result = run_suite(load_suite(path), out, progress=False, overwrite=True, **kw)  # type: ignore[arg-type]
    return result.summary


def mean(summary: dict, scorer: str, system: str = "gpt") -> float:
    return summary["systems"][system]["scorers"][scorer]["mean"]


def test_a_sql_suite_runs_end_to_end_through_a_model(tmp_path: Path) -> None:
    handler = answering(
        {
            Q_ORDERS: fenced(CASES[Q_ORDERS]),
            Q_DELIVERED: Reply.text(CASES[Q_DELIVERED]),  # bare SQL, no fence: still read
            Q_COUNTRY: fenced("SELECT country FROM customers"),  # runs, wrong result
            # Q_PRODUCTS: prose without a query -> the system's failure
        }
    )
    with FakeOpenAI(handler) as server:
        path = write_suite(tmp_path, model_system(server.base_url))
        summary = run(path, tmp_path / "run")
        requests = list(server.chat_requests)
    assert mean(summary, "execution_match") == pytest.approx(0.5)
    by_id = records(tmp_path / "run")
    assert by_id[IDS[Q_ORDERS]]["passed"] and by_id[IDS[Q_DELIVERED]]["passed"]
    assert not by_id[IDS[Q_COUNTRY]]["passed"]
    failed = by_id[IDS[Q_PRODUCTS]]
    assert failed["passed"] is False
    assert failed["scores"]["execution_match"]["value"] == 0
    attempt = failed["output"]["attempts"][0]
    assert "query" not in attempt and "no query in the reply" in attempt["read_problem"]
    assert attempt["reply"] == "I am not sure how to answer that."
    # the prompt holds the schema rendered from the DuckDB engine and the question
    first = requests[0]
    assert first.body["model"] == "fake-sql" and first.body["temperature"] == 0
    user = first.content("user")
    assert "CREATE TABLE orders(order_id INTEGER PRIMARY KEY" in user
    assert "duckdb" in first.content("system")
    assert {asked_question(r) for r in requests} == set(CASES)
    # tokens and cost accounting on the attempts; run.json has the calls
    ok = by_id[IDS[Q_ORDERS]]["output"]["attempts"][0]
    assert ok["tokens_in"] > 0 and ok["tokens_out"] > 0 and ok["query"] == CASES[Q_ORDERS]
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["system_calls"]["gpt"]["calls"] == 4
    assert info["systems"][0]["kind"] == "model" and info["systems"][0]["model"] == "fake-sql"
    # the stored configuration reads back (reports and `grid` re-create the suite from it)
    assert SuiteConfig.model_validate(info["config"]).systems[0].model is not None


def test_a_rerun_makes_no_calls_and_no_cache_asks_again(tmp_path: Path) -> None:
    handler = answering({q: fenced(sql) for q, sql in CASES.items()})
    with FakeOpenAI(handler) as server:
        path = write_suite(tmp_path, model_system(server.base_url))
        first = run(path, tmp_path / "run1")
        assert server.chat_calls == 4
        second = run(path, tmp_path / "run2")
        assert server.chat_calls == 4  # every reply came from the output cache
        info = json.loads((tmp_path / "run2" / "run.json").read_text())
        stats = info["system_calls"]["gpt"]
        assert (stats["calls"], stats["cache_hits"], stats["requests"]) == (0, 4, 4)
        assert stats["cache"]["hits"] == 4 and stats["cache"]["stored"] == 0
        assert mean(first, "execution_match") == mean(second, "execution_match") == 1.0
        # latency and cost of a cached output are those of the call that made it
        a1 = records(tmp_path / "run1")[IDS[Q_ORDERS]]["output"]["attempts"][0]
        a2 = records(tmp_path / "run2")[IDS[Q_ORDERS]]["output"]["attempts"][0]
        assert a2["cached"] is True and a2["latency_s"] == a1["latency_s"]
        run(path, tmp_path / "run3", use_cache=False)
        assert server.chat_calls == 8
        # a changed prompt parameter is another request
        path = write_suite(tmp_path, model_system(server.base_url, model={"max_tokens": 99}))
        run(path, tmp_path / "run4")
        assert server.chat_calls == 12


# per question, which samples (by index) the scripted model gets right
RIGHT = {Q_ORDERS: {0, 1, 2, 3, 4}, Q_DELIVERED: {1, 3}, Q_COUNTRY: {4}, Q_PRODUCTS: set()}


def test_samples_give_the_pass_at_k_the_scripted_replies_imply(tmp_path: Path) -> None:
    def handler(request: ChatRequest) -> Reply:
        question = asked_question(request)
        sample = request.body["seed"] - 7  # the seed moves with the sample index
        if sample in RIGHT[question]:
            return fenced(CASES[question])
        return fenced("SELECT 42 AS wrong")

    n, ks = 5, [1, 2, 3, 5]
    with FakeOpenAI(handler) as server:
        system = model_system(server.base_url, model={"seed": 7}, temperature=0.8, samples=n)
        scorers = [{"name": "agentic", "options": {"ks": ks, "breakdown": []}}]
        path = write_suite(tmp_path, system, scorers=scorers)
        summary = run(path, tmp_path / "run")
        seeds = sorted(r.body["seed"] for r in server.chat_requests)
        temps = {r.body["temperature"] for r in server.chat_requests}
    assert seeds == sorted([7, 8, 9, 10, 11] * 4) and temps == {0.8}
    report = summary["systems"]["gpt"]["scorers"]["agentic"]["aggregate"]["agentic_report"]
    for k in ks:  # the unbiased estimator, computed here from the script with exact integers
        expected = sum(
            Fraction(1) - Fraction(comb(n - len(c), k), comb(n, k)) for c in RIGHT.values()
        ) / len(RIGHT)
        assert report["pass_at_k"][str(k)] == pytest.approx(float(expected), abs=1e-12)
    # the case value is c/n, so the mean is pass@1
    assert mean(summary, "agentic") == pytest.approx((5 + 2 + 1 + 0) / 20)


WRONG_COLUMN = "SELECT count(*) AS delivered FROM orders WHERE state = 'delivered'"


def test_the_refinement_loop_recovers_after_the_schema_error_is_fed_back(tmp_path: Path) -> None:
    def delivered(request: ChatRequest) -> Reply:
        feedback = " ".join(feedback_messages(request))
        # a model that fixes its query once told that `state` does not exist
        if "schema" in feedback and "state" in feedback:
            return fenced(CASES[Q_DELIVERED])
        return fenced(WRONG_COLUMN)

    handler = answering(
        {
            Q_ORDERS: fenced(CASES[Q_ORDERS]),
            Q_DELIVERED: delivered,
            Q_COUNTRY: fenced("SELECT nation, count(*) FROM customers GROUP BY nation"),
            Q_PRODUCTS: fenced(CASES[Q_PRODUCTS]),
        }
    )
    with FakeOpenAI(handler) as server:
        system = model_system(server.base_url, refine={"max_iterations": 3})
        scorers = [{"name": "agentic", "options": {"ks": [1, 2, 3], "breakdown": []}}]
        path = write_suite(
            tmp_path, system, scorers=scorers, extra={"reports": ["json", "console"]}
        )
        summary = run(path, tmp_path / "run")
        requests = list(server.chat_requests)
    by_id = records(tmp_path / "run")
    loop = by_id[IDS[Q_DELIVERED]]["output"]["attempts"]
    assert [a["query"] for a in loop] == [WRONG_COLUMN, CASES[Q_DELIVERED]]
    schema = {f["kind"]: f for f in loop[0]["findings"]}["schema"]
    assert schema["score"] == 0 and "state" in schema["message"]
    assert {f["kind"]: f["score"] for f in loop[1]["findings"]} == {"syntax": 1, "schema": 1}
    # the second request carried the engine's error (and never the gold)
    second = [r for r in requests if asked_question(r) == Q_DELIVERED][1]
    fed = feedback_messages(second)[0]
    assert "state" in fed and "schema" in fed
    assert second.messages[-2] == {"role": "assistant", "content": fenced(WRONG_COLUMN).content}
    assert all(CASES[Q_DELIVERED] not in r.content("user") for r in requests)
    # a case right at once is asked once; one never fixed uses every iteration
    assert len(by_id[IDS[Q_ORDERS]]["output"]["attempts"]) == 1
    assert len(by_id[IDS[Q_COUNTRY]]["output"]["attempts"]) == 3
    report = summary["systems"]["gpt"]["scorers"]["agentic"]["aggregate"]["agentic_report"]
    assert report["pass_at_1"] == pytest.approx(0.5)
    assert report["success"] == pytest.approx(0.75)
    assert report["refinement_gain"] == pytest.approx(0.25)
    assert report["recovery_rate"] == pytest.approx(0.5)  # 1 of the 2 first failures
    assert report["recovered"] == 1 and report["initially_failed"] == 2
    assert report["success_at_k"]["2"] == pytest.approx(0.75)
    assert report["first_error_types"] == {"schema": 2}


def test_the_agentic_report_shows_the_recovery(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def delivered(request: ChatRequest) -> Reply:
        fixed = any("state" in m for m in feedback_messages(request))
        return fenced(CASES[Q_DELIVERED] if fixed else WRONG_COLUMN)

    with FakeOpenAI(answering({Q_DELIVERED: delivered})) as server:
        refine = {"max_iterations": 2, "feedback": ["schema"]}
        system = model_system(server.base_url, refine=refine)
        scorers = [{"name": "agentic", "options": {"ks": [1, 2], "breakdown": []}}]
        one = {Q_DELIVERED: CASES[Q_DELIVERED]}
        extra = {"reports": ["console"]}
        path = write_suite(tmp_path, system, scorers=scorers, cases=one, extra=extra)
        run(path, tmp_path / "run")
    out = capsys.readouterr().out
    assert "agentic report" in out
    line = next(x for x in out.splitlines() if "recovery rate (1 of 1 first failures)" in x)
    assert "1" in line.split("failures)")[-1]


def test_429_with_retry_after_is_honoured(tmp_path: Path) -> None:
    handler = answering({q: fenced(sql) for q, sql in CASES.items()})
    with FakeOpenAI(handler) as server:
        server.script(Reply.rate_limited(retry_after="0.3"))
        system = model_system(server.base_url, model={"concurrency": 1})
        path = write_suite(tmp_path, system, cases={Q_ORDERS: CASES[Q_ORDERS]})
        start = time.perf_counter()
        summary = run(path, tmp_path / "run")
        took = time.perf_counter() - start
        assert server.replies_sent == [429, 200]
    assert took >= 0.3 and mean(summary, "execution_match") == 1.0
    stats = json.loads((tmp_path / "run" / "run.json").read_text())["system_calls"]["gpt"]
    assert (stats["rate_limited"], stats["retries"], stats["calls"]) == (1, 1, 2)


def test_a_failing_endpoint_fails_the_cases_not_the_run(tmp_path: Path) -> None:
    with FakeOpenAI(Reply.server_error(503)) as server:
        system = model_system(
            server.base_url, model={"max_attempts": 2, "outage_after": 2, "concurrency": 1}
        )
        path = write_suite(tmp_path, system)
        summary = run(path, tmp_path / "run")
    by_id = records(tmp_path / "run")
    assert mean(summary, "execution_match") == 0.0
    assert all(r["passed"] is False and "model call failed" in r["error"] for r in by_id.values())
    assert any("marked down" in r["error"] for r in by_id.values())  # later cases fail fast


def test_tool_calls_and_json_replies_are_read(tmp_path: Path) -> None:
    handler = answering(
        {
            Q_ORDERS: Reply.tool_call("run_sql", {"query": CASES[Q_ORDERS]}),
            Q_DELIVERED: Reply.text(json.dumps({"sql": CASES[Q_DELIVERED]})),
            Q_COUNTRY: Reply.text("```python\nprint('no')\n```"),  # a fence in another language
        }
    )
    tools = [
        {
            "type": "function",
            "function": {
                "name": "run_sql",
                "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
            },
        }
    ]
    with FakeOpenAI(handler) as server:
        path = write_suite(tmp_path, model_system(server.base_url, tools=tools))
        summary = run(path, tmp_path / "run")
        assert server.chat_requests[0].body["tools"] == tools
    by_id = records(tmp_path / "run")
    assert by_id[IDS[Q_ORDERS]]["passed"] and by_id[IDS[Q_DELIVERED]]["passed"]
    assert "query" not in by_id[IDS[Q_COUNTRY]]["output"]["attempts"][0]
    assert mean(summary, "execution_match") == 0.5


def test_a_missing_api_key_stops_the_run_before_anything_is_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("QE_TEST_KEY", raising=False)
    with FakeOpenAI() as server:
        system = model_system(server.base_url, model={"api_key_env": "QE_TEST_KEY"})
        path = write_suite(tmp_path, system)
        with pytest.raises(InputError, match="QE_TEST_KEY") as err:
            run(path, tmp_path / "run")
        assert server.chat_calls == 0
    assert err.value.where == "systems[0]"
    results = tmp_path / "run" / "results.jsonl"
    assert not results.exists() or results.read_text() == ""


def test_a_refused_key_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QE_TEST_KEY", "wrong")
    with FakeOpenAI(api_key="right") as server:
        system = model_system(server.base_url, model={"api_key_env": "QE_TEST_KEY"})
        path = write_suite(tmp_path, system)
        with pytest.raises(InputError, match="refused the API key") as err:
            run(path, tmp_path / "run")
    assert err.value.where == "systems[0].model"


def test_the_spend_cap_stops_the_run_and_resume_finishes_it(tmp_path: Path) -> None:
    handler = answering({q: fenced(sql) for q, sql in CASES.items()})
    price = {"fake-sql": {"input_per_1k": 1.0, "output_per_1k": 1.0}}
    with FakeOpenAI(handler) as server:
        limits = {"concurrency": 1, "prices": price, "max_cost_usd": 1.2, "max_tokens": 200}
        system = model_system(server.base_url, model=limits)
        path = write_suite(tmp_path, system)
        with pytest.raises(InputError, match="spend cap reached") as err:
            run(path, tmp_path / "run")
        assert err.value.where == "systems[0].model.max_cost_usd"
        done = records(tmp_path / "run")
        assert 0 < len(done) < 4 and all(r["passed"] for r in done.values())
        calls = server.chat_calls
        assert calls == len(done)  # no call was made past the cap
        # a larger cap and --resume: the rest is asked, nothing twice
        system["model"]["max_cost_usd"] = 100
        path = write_suite(tmp_path, system)
        suite = load_suite(path)
        with pytest.raises(InputError, match="configuration changed"):
            run_suite(suite, tmp_path / "run", progress=False, resume=True)
        result = run_suite(suite, tmp_path / "run2", progress=False)
    assert result.summary["systems"]["gpt"]["scorers"]["execution_match"]["mean"] == 1.0
    assert server.chat_calls == 4  # the capped run's replies came from the cache
