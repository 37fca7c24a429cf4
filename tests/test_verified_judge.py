"""verified_match's optional judge tier: EX = 0 cases whose results differ only by extra
columns, row order or rounding go to the judge (the local fake OpenAI server), which may
restore them in `with_judge`; the headline (value, verified) never moves, a judge that is
down leaves the tier unscored, and results that differ otherwise are never sent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.openai_server import FakeOpenAI, Reply
from queryeval.cases import Score
from queryeval.scorers import ScoringContext
from verified_support import context, make_suite, score

EXTRA = ("SELECT name FROM emp WHERE age > 40", "SELECT name, age FROM emp WHERE age > 40")
ORDER = ("SELECT name FROM emp ORDER BY age", "SELECT name FROM emp ORDER BY name")
ROUNDING = ("SELECT avg(salary) FROM emp", "SELECT round(avg(salary), 2) + 0.001 FROM emp")
WRONG = ("SELECT name FROM emp WHERE age > 40", "SELECT name FROM emp WHERE age > 30")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(Reply.verdict(1.0, "the question asks for no order")) as s:
        yield s


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory, server: FakeOpenAI) -> Iterator[ScoringContext]:
    folder = tmp_path_factory.mktemp("verified_judge")
    suite = make_suite(folder)
    suite.write_text(suite.read_text() + f"judge: {{model: judge, base_url: '{server.base_url}', "
                     "api_key_env: null, cache: false, max_attempts: 1}\n")  # fmt: skip
    context_ = context(suite, folder / "cache")
    yield context_
    context_.close()


def judged(ctx: ScoringContext, pair: tuple[str, str]) -> Score:
    return score(ctx, "shop_duckdb", pair[0], pair[1], judge=True)


@pytest.mark.parametrize(("pair", "kind"), [(EXTRA, "extra columns"), (ORDER, "row order"),
                                            (ROUNDING, "rounding")])  # fmt: skip
def test_the_judge_restores_in_with_judge_only(
    ctx: ScoringContext, server: FakeOpenAI, pair: tuple[str, str], kind: str
) -> None:
    server.reset()
    s = judged(ctx, pair)
    assert s.details["metrics"] == {"ex": 0.0, "verified": 0.0, "with_judge": 1.0}
    assert s.value == 0.0 and s.details["tier"] == "judge"
    assert s.details["judge_tier"]["differences"] == [kind]
    assert server.chat_calls == 1
    prompt = str(server.chat_requests[0].body["messages"])
    assert pair[0] in prompt and pair[1] in prompt and kind in prompt and "Eve" in prompt


def test_a_judge_that_says_no_keeps_the_case(ctx: ScoringContext, server: FakeOpenAI) -> None:
    server.reset()
    server.script(Reply.verdict(0.0, "the question asks for names only"))
    s = judged(ctx, EXTRA)
    assert s.details["metrics"] == {"ex": 0.0, "verified": 0.0, "with_judge": 0.0}
    assert s.details["tier"] == "ex" and s.details["judge_tier"]["status"] == "ok"


def test_a_judge_that_is_down_leaves_the_tier_unscored(
    ctx: ScoringContext, server: FakeOpenAI
) -> None:
    server.reset()
    server.script(Reply.server_error(500))
    s = judged(ctx, ORDER)
    assert s.details["judge_tier"]["status"] == "unscored"
    assert s.details["metrics"] == {"ex": 0.0, "verified": 0.0, "with_judge": 0.0}
    assert s.value == 0.0 and s.details["tier"] == "ex"


def test_other_differences_and_the_tier_off_never_ask(
    ctx: ScoringContext, server: FakeOpenAI
) -> None:
    server.reset()
    wrong = judged(ctx, WRONG)
    off = score(ctx, "shop_duckdb", *EXTRA)  # judge: false (the default)
    assert server.chat_calls == 0
    for s in (wrong, off):
        assert s.details["metrics"] == {"ex": 0.0, "verified": 0.0, "with_judge": 0.0}
        assert "judge_tier" not in s.details


def test_no_judge_configured_is_unscored(tmp_path: Path) -> None:
    ctx = context(make_suite(tmp_path), tmp_path / "cache")
    try:
        s = score(ctx, "shop_sqlite", *EXTRA, judge=True)
    finally:
        ctx.close()
    assert s.details["judge_tier"]["status"] == "unscored"
    assert "judge" in s.details["judge_tier"]["reason"]
    assert s.details["metrics"]["with_judge"] == 0.0
