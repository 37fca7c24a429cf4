"""The Ray executor on two nodes (`ray.cluster_utils.Cluster`, one CPU each): the cap on a
database's concurrent queries and the judge's concurrency limit and cache hold for the
whole cluster, because each is one actor that every worker on every node goes through
(one judged run of the SQL example: each Ray run costs its workers and actors)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from queryeval.log import iter_records
from queryeval.runner import load_suite, run_suite, with_executor
from ray_support import OBJECT_STORE, ROOT, Overlap

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.timeout(600)  # a loaded machine: a ceiling, not a cost


@pytest.fixture(scope="module", autouse=True)
def two_nodes(ray_env: Path) -> Iterator[Any]:
    """A head node and a second node, one CPU each; the driver joins them."""
    import logging

    from ray.cluster_utils import Cluster

    node = {"num_cpus": 1, "object_store_memory": OBJECT_STORE}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    try:
        cluster.add_node(**node)
        ray.init(address=cluster.address, logging_level=logging.WARNING, log_to_driver=False)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def _cluster_stats(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "run.json").read_text())["cluster"])


def test_a_database_cap_and_the_judge_limit_and_cache_hold_across_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ray_env: Path
) -> None:
    """The SQL example's scorers and a judged scorer on its saved predictions, tasks on
    both nodes: every query runs in its database's engine actor, at most the database's
    cap at once; the fake judge never sees more requests at once than the judge's
    `concurrency`, and each distinct judgment is asked once. A local run afterwards gives
    the same summary (but for what the judge spent) and asks the judge nothing: the one
    cache, written by the judge actor. Each node's workers keep their gold results on that
    node: `cache_dir` on the driver's, the node's temporary folder on the other."""
    from fakes.openai_server import FakeOpenAI, Reply

    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    slow_verdict = Overlap(lambda request: Reply.verdict(0.8))
    monkeypatch.setenv("FAKE_JUDGE_KEY", "k")
    with FakeOpenAI(slow_verdict, api_key="k") as server:
        sql = ROOT / "examples" / "sql"
        fixture = sql / "fixtures" / "sales"
        suite_path = tmp_path / "suite.yaml"
        suite_path.write_text(  # DuckDB's queries given time to spare: a loaded machine
            f"name: judged\ncases: {sql / 'cases'}/*.yaml\n"  # changes no verdict
            f"databases:\n  sales: {{engine: duckdb, fixture: {fixture}, "
            "options: {timeout_s: 30.0, max_rows: 5000}}\n"  # SQLite's runaway CTE: 2 s
            f"  sales_sqlite: {{engine: sqlite, fixture: {fixture}, options: {{timeout_s: 2.0}}}}\n"
            f"systems: [{{name: b, predictions: {sql / 'predictions/baseline.jsonl'}}}]\n"
            "scorers: [executes, execution_match, results_f1, results_match_legacy, "
            "llm_query_similarity]\nreports: [json]\n"
            f"judge: {{model: fake, base_url: '{server.base_url}', "
            "api_key_env: FAKE_JUDGE_KEY, concurrency: 2}\n"
        )
        suite = load_suite(suite_path)
        on_ray = with_executor(suite, "ray")
        on_ray.settings.ray.batch_size = 1
        on_ray.settings.ray.connections = 2
        on_ray.settings.ray.connections_per_database = {"sales": 1}
        run_suite(on_ray, tmp_path / "ray", progress=False)
        asked = server.chat_calls
        records = list(iter_records(tmp_path / "ray"))
        scores = [r["scores"]["llm_query_similarity"] for r in records]
        verdicts = [s for s in scores if s.get("explanation") == "scripted"]  # the judge's
        assert len(verdicts) > 10 and asked > 10
        assert slow_verdict.peak <= 2
        assert asked <= len(records)  # identical requests asked once
        stats = _cluster_stats(tmp_path / "ray")
        assert len(stats["batches_per_node"]) == 2  # both nodes scored
        assert stats["judge"]["calls"] == asked  # HTTP calls, as a model system's
        node_local = ray_env / "queryeval-cache"  # the second node's TMPDIR (one machine)
        assert list(node_local.glob("gold-v*.sqlite"))
        assert list((tmp_path / ".queryeval-cache").glob("gold-v*.sqlite"))
        engines = stats["engines"]
        assert engines["sales"]["calls"] > 10 and engines["sales"]["peak"] == 1
        assert 1 <= engines["sales_sqlite"]["peak"] <= 2
        run_suite(suite, tmp_path / "local", progress=False)
        assert server.chat_calls == asked  # every verdict from the judge actor's cache
    local = json.loads((tmp_path / "local" / "summary.json").read_text())
    first = json.loads((tmp_path / "ray" / "summary.json").read_text())
    assert _scores_only(local) == _scores_only(first)
    assert '"cached": 15' in json.dumps(local) and '"cached": 0' in json.dumps(first)


_SPENDING = {"cached", "prompt_tokens", "completion_tokens", "cost_usd"}


def _scores_only(data: Any) -> Any:
    """A summary without what the judge spent (a cached verdict costs nothing)."""
    if isinstance(data, dict):
        return {k: _scores_only(v) for k, v in data.items() if k not in _SPENDING}
    if isinstance(data, list):
        return [_scores_only(v) for v in data]
    return data
