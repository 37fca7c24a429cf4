"""Soak: a whole `queryeval run` of the hostile query catalogue (tests/hostile_catalogue.py:
memory bombs, runaway joins and recursions, 3 MB and 60 MB generated query texts, a gold
that is a bomb) on DuckDB, SQLite and duckdb-kql, in a child process, loopback only. Every
bomb ends as its case's `resource_limit` or `timeout`, the gold bomb as a gold problem, the
ordinary cases still pass, the run completes, and the process stays far below a few GB.
(The Cypher bombs run in tests/test_engines_cypher.py, which has an ArcadeDB started.)"""

from __future__ import annotations

import time
from pathlib import Path

from hostile_catalogue import (
    BOMBS,
    GOLD_BOMB,
    ORDINARY,
    outcomes,
    run_measured,
    write_hostile_suite,
)

LIMITS = {"timeout_s": 2.0, "memory_limit": "256MiB"}


def test_a_run_of_the_hostile_catalogue_completes_with_every_bomb_bounded(tmp_path: Path) -> None:
    suite = write_hostile_suite(tmp_path / "suite", LIMITS)
    start = time.perf_counter()
    code, stderr, peak_mib, _ = run_measured(["run", str(suite), "--out", str(tmp_path / "run")])
    elapsed = time.perf_counter() - start
    assert code == 0, stderr[-3000:]
    found = outcomes(tmp_path / "run")
    for case_id in BOMBS:
        assert found[case_id][0] in ("resource_limit", "timeout"), (case_id, found[case_id])
    for case_id in ("duckdb-list-range", "duckdb-60mb-text", "kql-range-200m", "sqlite-zeroblob"):
        assert found[case_id][0] == "resource_limit", (case_id, found[case_id])
    kind, message = found[GOLD_BOMB]
    assert kind == "unscored" and "gold failed: resource_limit" in message
    assert all(found[case_id][0] == "passed" for case_id in ORDINARY), found
    assert elapsed < 120, elapsed
    assert peak_mib < 1536, f"peak RSS {peak_mib:.0f} MiB"  # the bombs ask for tens of GB


def test_a_huge_query_text_is_not_parsed_without_a_database_either() -> None:
    """Scorers that read the query text (exact match, text metrics) never hand a 60 MB
    query to a parser: it fails as `resource_limit` before any of them reads it."""
    from queryeval.cases import Case, Output
    from queryeval.config import ScorerConfig
    from queryeval.scorers import ScoringContext, build_scorer, score_case

    case = Case.model_validate(
        {"id": "q", "conversation": [{"content": "q", "target": {"query": "SELECT 1"}}]}
    )
    query = "SELECT 1 FROM t WHERE x = 1" + " OR x = 1" * 6_000_000  # 54 MB
    output = Output.model_validate({"attempts": [{"query": query}]})
    scorer = build_scorer(ScorerConfig(name="spider_exact_match"))
    start = time.perf_counter()
    score = score_case(scorer, case, output, ScoringContext())
    assert score.details.get("failure") == "resource_limit", score
    assert time.perf_counter() - start < 2
