"""Test-only scorers and systems, imported by test suites through `plugins:`."""

from __future__ import annotations

import asyncio
import os
import threading
import time

from pydantic import BaseModel, ConfigDict

from queryeval.cases import Case, Output, Score
from queryeval.scorers import Scorer, ScoringContext, register_scorer


class SlowOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sleep_s: float = 0.0


@register_scorer("test_slow_echo")
class SlowEcho(Scorer):
    """Scores 1 when the answer equals the case's expected answer; sleeps first."""

    Options = SlowOptions
    default_threshold = 1.0
    options: SlowOptions

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        time.sleep(self.options.sleep_s)
        target = case.target
        expected = (
            target.answer.text
            if target and target.answer and not isinstance(target.answer, str)
            else None
        )
        got = output.final.answer if output.final else None
        value = 1.0 if got == expected else 0.0
        return Score(
            value=value, details={"metrics": {"exact": value, "len": float(len(got or ""))}}
        )


@register_scorer("test_half_unscored")
class HalfUnscored(Scorer):
    """Even-numbered cases are unscored; odd ones score 1."""

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        if int(case.id.split("-")[-1]) % 2 == 0:
            return Score.unscored("no opinion")
        return Score(value=1.0)


@register_scorer("test_explodes")
class Explodes(Scorer):
    """Raises on case 3: the run must record an error and go on."""

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        if case.id.endswith("-3"):
            raise RuntimeError("scorer bug")
        return Score(value=0.5)


_active = 0
_peak = 0
_lock = threading.Lock()


def peak_concurrency() -> int:
    return _peak


def reset() -> None:
    global _active, _peak
    _active = _peak = 0


def sync_system(case: Case, *, suffix: str = "") -> dict:
    """Echo the expected answer, except for case 5 (wrong) and case 7 (crash)."""
    global _active, _peak
    with _lock:
        _active += 1
        _peak = max(_peak, _active)
    try:
        time.sleep(0.01)
        if case.id.endswith("-7"):
            raise ValueError("model exploded")
        target = case.target
        answer = (
            target.answer.text
            if target and target.answer and not isinstance(target.answer, str)
            else ""
        )
        return {"answer": ("wrong" if case.id.endswith("-5") else answer) + suffix}
    finally:
        with _lock:
            _active -= 1


async def async_system(case: Case) -> Output:
    """Async flavour: sleeps forever on case 9 (the runner's timeout must end it)."""
    await asyncio.sleep(1000 if case.id.endswith("-9") else 0.001)
    return Output.model_validate({"attempts": [{"answer": f"pid {os.getpid()}"}]})


RELEASE = threading.Event()  # set by a test to let the hung calls go at last


def hanging_system(case: Case) -> dict:
    """A synchronous system that never returns on odd cases (until RELEASE is set)."""
    if int(case.id.split("-")[-1]) % 2:
        while not RELEASE.wait(3600):
            pass
    return {"answer": f"a{case.id.split('-')[-1]}"}


class Flaky:
    """Switches for the `test_flaky_judge` scorer and `counting_system` (a test sets them)."""

    down = False
    calls = 0


@register_scorer("test_flaky_judge")
class FlakyJudge(Scorer):
    """An evaluator that may be down: unscored while `Flaky.down`, else 1 when the answer is
    right (0 otherwise)."""

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        if Flaky.down:
            return Score.unscored("judge unreachable (503)")
        final = output.final
        got = final.answer if final is not None else None
        return Score(value=1.0 if got == f"a{case.id.split('-')[-1]}" else 0.0)


def counting_system(case: Case) -> dict:
    """Answers right except on case 2, counting its calls."""
    Flaky.calls += 1
    return {"answer": "wrong" if case.id.endswith("-2") else f"a{case.id.split('-')[-1]}"}
