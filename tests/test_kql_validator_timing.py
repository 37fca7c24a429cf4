"""The Kusto.Language validator's time limits blame a query only for its own cost: a check is
bounded by the helper's CPU time for it, not the wall clock; the start (and each schema) has
a deadline of its own, never counted against a query; a validator that gives no verdict is
unscored, never `invalid`, and a slow helper is not killed (no restart loop).

A fake helper (a Python script speaking the helper's JSON lines) stands for Node here, so
that slowness without CPU (`SLEEP s`) and real CPU cost (`BURN s`) are exact; the real
helper under a synthetic load is in `test_load_verdicts.py`."""

from __future__ import annotations

import stat
import sys
import time
from pathlib import Path

import pytest

from queryeval.cases import Attempt, Case, Output
from queryeval.engines import (
    KqlValidator,
    KqlValidatorError,
    KqlValidatorTimeout,
    independent_verdict,
)
from queryeval.engines import _kusto_language as kusto_language

FAKE_HELPER = """\
import json, sys, time

def answer(request):
    op = request.get("op")
    if op == "hello":
        time.sleep(HELLO_SLEEP)  # a slow start that costs no CPU (a loaded machine)
        return {"version": "fake"}
    if op == "schema":
        return {"ok": True}
    query = request.get("query", "")
    word, _, amount = query.partition(" ")
    if word == "SLEEP":  # slow, but not busy: the machine's fault
        time.sleep(float(amount))
    elif word == "BURN":  # busy: the query's own cost
        end = time.process_time() + float(amount)
        while time.process_time() < end:
            pass
    syntax = [] if word != "BAD" else [
        {"code": "KS007", "severity": "Error", "message": "bad", "start": 0, "length": 3}]
    return {"syntax": syntax, "all": syntax}

for line in sys.stdin:
    if line.strip():
        request = json.loads(line)
        print(json.dumps({"id": request["id"], **answer(request)}), flush=True)
"""


def fake_validator(tmp_path: Path, *, hello_sleep: float = 0.0, **options: float) -> KqlValidator:
    """A validator whose helper is the fake above (hello_sleep: seconds before it answers
    `hello`, sleeping, not computing)."""
    script = tmp_path / "fake_node"
    script.write_text(f"#!{sys.executable}\nHELLO_SLEEP = {hello_sleep}\n" + FAKE_HELPER)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    package = tmp_path / "package"
    package.mkdir(exist_ok=True)
    return KqlValidator(node=str(script), package=package, **options)


def test_a_slow_check_that_costs_little_cpu_gets_its_verdict(tmp_path: Path) -> None:
    validator = fake_validator(tmp_path, timeout_s=0.3)
    try:
        validity = validator.check("SLEEP 1.0")  # 1 s of wall clock, ~0 s of CPU
        assert validity.syntax_ok  # its verdict, not a timeout
        assert validator.check("BAD query").syntax_ok is False
        assert validator.starts == 1  # never replaced
    finally:
        validator.close()


def test_a_check_that_burns_cpu_past_its_limit_is_the_querys(tmp_path: Path) -> None:
    validator = fake_validator(tmp_path, timeout_s=0.3)
    try:
        with pytest.raises(KqlValidatorTimeout, match="CPU time"):
            validator.check("BURN 3")
        assert independent_verdict("BURN 4", None, validator)[:2] == ("invalid", "syntax")
        assert validator.check("print 1").syntax_ok  # a fresh helper answers
    finally:
        validator.close()


def test_past_the_wall_cap_with_little_cpu_there_is_no_verdict_and_no_kill(
    tmp_path: Path,
) -> None:
    validator = fake_validator(tmp_path, timeout_s=0.2, max_wall_s=0.6)
    try:
        with pytest.raises(KqlValidatorError) as raised:
            validator.check("SLEEP 1.5")
        assert not isinstance(raised.value, KqlValidatorTimeout)
        assert "not the query's fault" in str(raised.value)
        verdict = independent_verdict("SLEEP 1.6", None, validator)
        assert verdict[0] == "unknown"  # no verdict: never `invalid`
        time.sleep(2.6)  # both slow requests answered meanwhile (1.5 s, then 1.6 s)
        # the late answers are dropped; the same helper answers the next check
        assert validator.check("BAD one").syntax_ok is False
        assert validator.starts == 1
    finally:
        validator.close()


def test_a_slow_start_gives_no_verdict_and_is_not_killed_in_a_loop(tmp_path: Path) -> None:
    validator = fake_validator(tmp_path, hello_sleep=1.5, start_wall_s=0.3)
    try:
        started = time.monotonic()
        with pytest.raises(KqlValidatorError) as raised:
            validator.check("print 1")
        assert not isinstance(raised.value, KqlValidatorTimeout)
        assert time.monotonic() - started < 1.4  # gave up at the start's cap
        # the next check waits for the same helper's start and gets its verdict
        assert validator.check("BAD query").syntax_ok is False
        assert validator.check("print 2").syntax_ok
        assert validator.starts == 1
        assert validator.version == "fake"
    finally:
        validator.close()


def test_the_start_is_not_counted_against_the_first_check(tmp_path: Path) -> None:
    """A start that takes longer (wall clock) than a check's limit: warmed in the
    background, the first check still gets its verdict."""
    validator = fake_validator(tmp_path, hello_sleep=0.8, timeout_s=0.2, max_wall_s=0.4)
    try:
        validator.warm()
        time.sleep(0.1)
        assert validator.starts == 1  # started before any check
        assert validator.check("print 1").syntax_ok
        assert validator.starts == 1
    finally:
        validator.close()


def test_the_scorers_give_no_verdict_as_unscored_and_cpu_cost_as_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from queryeval.scorers import ScoringContext
    from queryeval.scorers.kql_validity import KqlSyntaxScorer

    validator = fake_validator(tmp_path, timeout_s=0.2, max_wall_s=0.5)
    monkeypatch.setattr(kusto_language, "_SHARED", validator)
    scorer = KqlSyntaxScorer(KqlSyntaxScorer.Options())
    ctx = ScoringContext()
    case = Case(id="c", conversation=[{"role": "user", "content": "?"}])

    def output(query: str) -> Output:
        return Output(attempts=[Attempt(query=query, language="kql")])

    # the CPU-cost check on a helper with a distant wall-clock cap: at load 25 on 2 cores
    # the helper gets ~8 % of a core, 0.04 s of CPU in 0.5 s of wall clock, and BURN's
    # verdict would be the slow machine's instead of the query's
    patient = fake_validator(tmp_path, timeout_s=0.2, max_wall_s=60.0)
    try:
        scorer.prepare([case], ctx)
        slow = scorer.score(case, output("SLEEP 1.2"), ctx)
        assert slow.status == "unscored" and slow.failure_reason is None, slow
        monkeypatch.setattr(kusto_language, "_SHARED", patient)
        busy = scorer.score(case, output("BURN 2"), ctx)
        assert busy.failure_reason == "timeout" and busy.value == 0.0, busy
        assert scorer.score(case, output("print 3"), ctx).value == 1.0
    finally:
        validator.close()
        patient.close()


def test_process_cpu_counts_cpu_not_sleep() -> None:
    import os

    from queryeval.engines._kusto_language import process_cpu_s

    before = process_cpu_s(os.getpid())
    if before is None:
        pytest.skip("no /proc on this system")
    time.sleep(0.3)
    slept = process_cpu_s(os.getpid())
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    burnt = process_cpu_s(os.getpid())
    assert slept is not None and burnt is not None
    assert slept - before < 0.1 and burnt - slept >= 0.25


def test_a_replaced_helper_is_not_started_after_close(tmp_path: Path) -> None:
    validator = fake_validator(tmp_path, hello_sleep=0.3, timeout_s=0.2)
    with pytest.raises(KqlValidatorTimeout):
        validator.check("BURN 2")  # the busy helper is stopped, a new one starts at once
    validator.close()
    time.sleep(1.0)
    assert validator._proc is None  # no helper left running after close
