"""The `examples/kql` suite with preset `kql_batch`, run for real (duckdb-kql engine) with a
local judge: seed 002's rule decides each case, and the judge's part is visible."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fakes.openai_server import ChatRequest, FakeOpenAI, Reply
from queryeval.runner import load_suite, run_suite


def first_table(query: str) -> str:
    return query.split("|")[0].strip()


def similar_if_same_table(req: ChatRequest) -> Reply:
    """A stand-in judge: 0.95 when the generated query reads the gold's first table, else 0.3."""
    nonce = re.search(r'nonce="([0-9a-f]{16})"', req.content("system"))
    assert nonce is not None
    fence = rf'<data name="(\w+)" nonce="{nonce.group(1)}">\n(.*?)\n</data'
    fields = dict(re.findall(fence, req.content("user"), re.S))
    assert "Logs" in fields["schema"]  # the engine's schema reaches the judge
    same = first_table(fields["gold_query"]) == first_table(fields["generated_query"])
    return Reply.verdict(0.95 if same else 0.3)


def test_kql_example_with_a_judge(root: Path, tmp_path: Path) -> None:
    suite = load_suite(root / "examples" / "kql" / "suite_seed002.yaml")
    assert suite.preset == "kql_batch" and suite.scorers[0].label == "kql_batch"
    with FakeOpenAI(similar_if_same_table) as server:
        suite.judge = {"model": "judge", "base_url": server.base_url, "api_key_env": None}
        suite.settings.cache_dir = str(tmp_path / "cache")
        result = run_suite(suite, tmp_path / "run", progress=False, write_reports=False)
        assert server.chat_calls > 0
    kql = result.summary["systems"]["baseline"]["scorers"]["kql_batch"]
    assert kql["passed"] > 0 and kql["failed"] > 0
    assert kql["aggregate"]["gate_failures"]["executes"] >= 1
    for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines():
        s = json.loads(line)["scores"]["kql_batch"]
        parts = s["details"]["components"]
        if parts["executes"]["status"] == "ok" and not parts["executes"]["passed"]:
            assert s.get("passed") is False  # fails to execute: fails whatever its score
        elif s["status"] == "ok":
            judge = parts["llm_query_similarity"]["value"]
            results = parts["results_match_legacy"]["value"]
            assert s["value"] == pytest.approx(0.5 * judge + 0.5 * results)
            assert s.get("passed") is (s["value"] >= 0.9)
