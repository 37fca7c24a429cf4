"""Endpoint systems against a small local HTTP service: the body template, the output path,
retries on 5xx and 429 (Retry-After), timeouts, and what counts as the system's failure."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from fakes.json_service import JsonService
from queryeval.errors import InputError
from queryeval.runner import load_suite, run_suite
from queryeval.systems import read_path, render_body
from systems_support import CASES, IDS, records, write_suite

Q_ORDERS, Q_DELIVERED, Q_COUNTRY, Q_PRODUCTS = list(CASES)
FAST = {"backoff_base_s": 0.01, "backoff_max_s": 0.05}


def endpoint(url: str, **keys: Any) -> dict[str, Any]:
    return {"name": "svc", "endpoint": {"url": url, **FAST, **keys}}


def run(path: Path, out: Path) -> dict:
    return run_suite(load_suite(path), out, progress=False, overwrite=True).summary


def test_a_service_is_asked_with_the_body_template_and_read_at_the_path(tmp_path: Path) -> None:
    def answer(body: Any, path: str) -> tuple[Any, ...]:
        question = body["input"]["text"]
        if question == Q_PRODUCTS:
            return 200, {"result": {"message": "cannot help"}}  # no sql: the system's failure
        sql = CASES[question] if question != Q_COUNTRY else "SELECT 1"
        return 200, {"result": {"sql": sql, "trace": [1, 2]}}

    body = {
        "input": {"text": "{{ question }}", "history": "{{ conversation }}"},
        "meta": {"case": "case {{ case_id }}", "k": 5},
    }
    with JsonService(answer) as svc:
        system = endpoint(
            f"{svc.url}/ask", body=body, output="result.sql", headers={"X-Team": "eval"}
        )
        path = write_suite(tmp_path, system)
        summary = run(path, tmp_path / "run")
        sent = list(svc.requests)
    assert summary["systems"]["svc"]["scorers"]["execution_match"]["mean"] == 0.5
    route, first, headers = sent[0]
    assert route == "/ask" and headers["X-Team"] == "eval"
    assert first["meta"]["k"] == 5 and first["meta"]["case"].startswith("case q")
    assert first["input"]["history"] == [{"role": "user", "content": first["input"]["text"]}]
    by_id = records(tmp_path / "run")
    assert by_id[IDS[Q_ORDERS]]["output"]["attempts"][0]["query"] == CASES[Q_ORDERS]
    failed = by_id[IDS[Q_PRODUCTS]]
    assert failed["passed"] is False and "has no 'result.sql'" in failed["error"]
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["systems"][0]["kind"] == "endpoint"
    assert info["system_calls"]["svc"]["calls"] == 4


def test_5xx_and_429_are_retried_and_retry_after_honoured(tmp_path: Path) -> None:
    tries: dict[str, int] = {}

    def flaky(body: Any, path: str) -> tuple[Any, ...]:
        n = tries[body["question"]] = tries.get(body["question"], 0) + 1
        if body["question"] == Q_ORDERS and n == 1:
            return 429, {"error": "slow down"}, {"Retry-After": "0.3"}
        if body["question"] == Q_DELIVERED and n < 3:
            return 503, {"error": "busy"}
        return 200, {"sql": CASES[body["question"]]}

    with JsonService(flaky) as svc:
        path = write_suite(tmp_path, endpoint(svc.url, output="sql", concurrency=2))
        start = time.perf_counter()
        summary = run(path, tmp_path / "run")
        took = time.perf_counter() - start
    assert summary["systems"]["svc"]["scorers"]["execution_match"]["mean"] == 1.0
    assert tries[Q_ORDERS] == 2 and tries[Q_DELIVERED] == 3 and took >= 0.3
    stats = json.loads((tmp_path / "run" / "run.json").read_text())["system_calls"]["svc"]
    assert stats == {"calls": 7, "retries": 3, "rate_limited": 1}


def test_timeouts_and_broken_replies_fail_the_case(tmp_path: Path) -> None:
    def service(body: Any, path: str) -> tuple[Any, ...]:
        question = body["question"]
        if question == Q_ORDERS:
            return 200, {"sql": CASES[question]}, {}, 1.5  # slower than the timeout
        if question == Q_DELIVERED:
            return 200, "not json at all"
        if question == Q_COUNTRY:
            return 200, {"sql": ["SELECT 1"]}  # not text
        return 500, {"error": "down"}

    with JsonService(service) as svc:
        system = endpoint(svc.url, output="sql", timeout_s=0.3, max_attempts=2)
        path = write_suite(tmp_path, system)
        summary = run(path, tmp_path / "run")
    by_id = records(tmp_path / "run")
    assert summary["systems"]["svc"]["scorers"]["execution_match"]["mean"] == 0.0
    assert "timed out" in by_id[IDS[Q_ORDERS]]["error"]
    assert "not JSON" in by_id[IDS[Q_DELIVERED]]["error"]
    assert "expected text" in by_id[IDS[Q_COUNTRY]]["error"]
    assert "HTTP 500" in by_id[IDS[Q_PRODUCTS]]["error"]
    assert all(r["passed"] is False for r in by_id.values())


def test_a_wrong_url_stops_the_run(tmp_path: Path) -> None:
    with JsonService(lambda body, path: (404, {"error": "no route"})) as svc:
        path = write_suite(tmp_path, endpoint(f"{svc.url}/nope", output="sql"))
        with pytest.raises(InputError, match="no such URL") as err:
            run(path, tmp_path / "run")
    assert err.value.where == "systems[0].endpoint"


def test_a_reply_in_text_or_as_an_output_record(tmp_path: Path) -> None:
    def service(body: Any, path: str) -> tuple[Any, ...]:
        question = body["question"]
        if question == Q_ORDERS:  # a chat-like text reply: the fence is read
            return 200, {"text": f"```sql\n{CASES[question]}\n```"}
        if question == Q_DELIVERED:  # an output record with the loop's attempts
            return 200, {"text": {"attempts": [{"query": "SELECT 0"}, {"query": CASES[question]}]}}
        return 200, {"text": "no idea"}

    with JsonService(service) as svc:
        path = write_suite(tmp_path, endpoint(svc.url, output="text"))
        run(path, tmp_path / "run")
    by_id = records(tmp_path / "run")
    assert by_id[IDS[Q_ORDERS]]["passed"] is True
    assert len(by_id[IDS[Q_DELIVERED]]["output"]["attempts"]) == 2
    assert by_id[IDS[Q_DELIVERED]]["passed"] is True
    assert by_id[IDS[Q_COUNTRY]]["output"]["attempts"][0]["read_problem"].startswith("no query")


def test_body_templates_and_paths() -> None:
    variables = {"question": "Q", "conversation": [{"role": "user", "content": "Q"}], "n": 2}
    template = {"a": "{{question}}", "b": " {{ conversation }} ", "c": "x{{ n }}"}
    expected = {"a": "Q", "b": variables["conversation"], "c": "x2"}
    assert render_body(template, variables) == expected
    data = {"choices": [{"message": {"content": "SELECT 1"}}], "a.b": 1}
    assert read_path(data, "$.choices[0].message.content") == "SELECT 1"
    assert read_path(data, "") == data
    for missing in ("choices[1]", "choices[0].text", "x"):
        with pytest.raises(KeyError):
            read_path(data, missing)
