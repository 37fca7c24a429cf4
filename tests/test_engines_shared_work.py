"""Work done once per case however many scorers ask: each distinct SQL text is parsed once
(the sandbox's read-only check and the gold's ordering)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from queryeval.cases import Attempt, Case, Output
from queryeval.config import ScorerConfig, load_suite
from queryeval.languages import sql
from queryeval.scorers import ScoringContext, build_scorer

SQL_SUITE = Path(__file__).resolve().parents[1] / "examples" / "sql" / "suite.yaml"
GOLD = "SELECT country, count(*) AS n FROM customers GROUP BY country ORDER BY n DESC, 1"


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[ScoringContext]:
    context = ScoringContext(load_suite(SQL_SUITE), cache_dir=tmp_path)
    yield context
    context.close()


def case() -> Case:
    target = {"query": {"text": GOLD, "database": "sales"}}
    return Case.model_validate({"id": "c", "conversation": [{"content": "q", "target": target}]})


def out(query: str) -> Output:
    return Output(attempts=[Attempt(query=query)])


def scorer(name: str, **options: Any) -> Any:
    return build_scorer(ScorerConfig(name=name, options=options))


def test_each_distinct_query_is_parsed_once(ctx: ScoringContext) -> None:
    sql.parsed.cache_clear()
    pred = "SELECT country, count(customer_id) FROM customers GROUP BY 1 ORDER BY 2 DESC, 1"
    for name in ("executes", "execution_match", "results_f1"):
        scorer(name).score(case(), out(pred), ctx)
    info = sql.parsed.cache_info()
    assert info.misses == 2  # the prediction and the gold
    assert info.hits >= 1  # the gold's ordering, read from the sandbox's parse


def test_a_parse_error_is_kept_as_its_message() -> None:
    first = sql.parsed("SELECT (", "duckdb")
    assert isinstance(first, str) and first == sql.parsed("SELECT (", "duckdb")
    with pytest.raises(ValueError, match="cannot parse SQL"):
        sql.top_level_order("SELECT (", "duckdb")
