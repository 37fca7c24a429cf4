"""The Ray executor on a local cluster started once for this module (ray_support): the
example suites give the local run's summary.json, large saved-prediction runs are sharded
into retried tasks, a worker lost mid-run costs only its unfinished cases, and `--resume`
continues a Ray run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from queryeval.cli._app import app
from queryeval.config import RaySettings
from queryeval.errors import InputError
from queryeval.log import iter_records
from queryeval.runner import load_suite, run_suite, with_executor
from ray_support import ROOT, Overlap, init_local

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.timeout(300)


SOFT_LIMIT = "RAY_num_workers_soft_limit"  # Ray's config, overridden by RAY_<name>


@pytest.fixture(scope="module", autouse=True)
def cluster(ray_env: Path) -> Iterator[Any]:
    """One local cluster (2 CPUs) for the module; the runs join it. Its four task workers
    (`task_cpus` 0.5) stay up between runs (Ray keeps one per CPU by default and starts the
    others again for each run, each importing the package anew)."""
    os.environ[SOFT_LIMIT] = "4"  # read by the raylet as it starts
    try:
        init_local(ray, cpus=2)
    finally:
        del os.environ[SOFT_LIMIT]
    try:
        yield ray
    finally:
        ray.shutdown()


def read_records(run: Path) -> list[dict[str, Any]]:
    return [dict(r) for r in iter_records(run)]


def _summary(out: Path) -> bytes:
    return (out / "summary.json").read_bytes()


def _without_latency(data: Any) -> Any:
    """A summary or record without measured times (live systems' latencies, queries'
    elapsed times): they differ from run to run on any executor."""
    if isinstance(data, dict):
        return {
            k: _without_latency(v) for k, v in data.items() if k not in ("latency_s", "elapsed_s")
        }
    if isinstance(data, list):
        return [_without_latency(v) for v in data]
    return data


def _json_only(suite: Any) -> Any:
    suite.reports = [r for r in suite.reports if r.kind == "json"]
    return suite


@pytest.mark.parametrize("example", ["sdmx", "sql", "weaviate", "tasks"])
def test_example_suite_on_ray_gives_the_local_summary(tmp_path: Path, example: str) -> None:
    """The local run's records and summary; tasks (a disposable copy of the database per
    case) are scored in the workers, on engines of their own."""
    suite = _json_only(load_suite(ROOT / "examples" / example / "suite.yaml"))
    local = run_suite(suite, tmp_path / "local", progress=False)
    on_ray = run_suite(with_executor(suite, "ray"), tmp_path / "ray", progress=False)
    assert on_ray.new_records == local.new_records > 0
    local = json.loads(_summary(tmp_path / "local"))
    assert _without_latency(json.loads(_summary(tmp_path / "ray"))) == _without_latency(local)
    by_key = {(r["system"], r["case_id"]): r for r in read_records(tmp_path / "local")}
    for record in read_records(tmp_path / "ray"):
        expected = by_key[record["system"], record["case_id"]]
        assert _without_latency(record) == _without_latency(expected)
    cluster = json.loads((tmp_path / "ray" / "run.json").read_text())["cluster"]
    if example == "sql":  # every query ran in the databases' engine actors
        assert set(cluster["engines"]) == {"sales", "sales_sqlite"}
        assert sum(e["calls"] for e in cluster["engines"].values()) > 0
        assert all(e["peak"] <= 4 for e in cluster["engines"].values())
    if example == "tasks":
        assert "engines" not in cluster
        scored = json.loads(_summary(tmp_path / "ray"))["systems"]["baseline"]["scorers"]
        assert scored["task_tests"]["ok"] == 4  # not unscored


def test_rag_grid_on_ray_gives_the_local_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live callable (the RAG example's grid) called in the workers under its
    concurrency, answers embedded by the one embedder actor: the local summary, but for the
    measured latencies of the system."""
    monkeypatch.syspath_prepend(str(ROOT))  # examples.rag.system (the workers: PYTHONPATH)
    suite = _json_only(load_suite(ROOT / "examples" / "rag" / "suite.yaml"))
    suite.systems[0].params = {"top_k": [1, 3], "chunk_size": [20], "answer_sentences": [1, 2]}
    run_suite(suite, tmp_path / "local", progress=False)
    run_suite(with_executor(suite, "ray"), tmp_path / "ray", progress=False)
    local = json.loads(_summary(tmp_path / "local"))
    on_ray = json.loads(_summary(tmp_path / "ray"))
    assert len(on_ray["systems"]) == 4
    assert _without_latency(on_ray) == _without_latency(local)
    cluster = json.loads((tmp_path / "ray" / "run.json").read_text())["cluster"]
    assert cluster["systems"]["rag"]["peak"] <= 8  # the system's concurrency, cluster-wide
    assert cluster["embedder"]["model_id"].endswith("all-MiniLM-L6-v2")


def _sdmx_suite(folder: Path, n: int, extra: str = "") -> Path:
    sys.path.insert(0, str(ROOT / "bench"))
    from _sdmx_data import write_suite

    suite = write_suite(folder, n)
    suite.write_text(suite.read_text() + extra)
    return suite


def test_saved_predictions_are_sharded_on_ray_at_any_size(tmp_path: Path) -> None:
    from queryeval.runner._units import can_shard

    path = _sdmx_suite(tmp_path / "s", 300)
    suite = load_suite(path)
    on_ray = with_executor(suite, "ray", shards=5)
    assert not can_shard(suite) and can_shard(on_ray, any_size=True)
    run_suite(suite, tmp_path / "local", progress=False)
    result = run_suite(on_ray, tmp_path / "ray", progress=False)
    assert result.new_records == 300
    local = json.loads(_summary(tmp_path / "local"))
    assert _without_latency(json.loads(_summary(tmp_path / "ray"))) == _without_latency(local)
    local = sorted(read_records(tmp_path / "local"), key=lambda r: r["case_id"])
    assert sorted(read_records(tmp_path / "ray"), key=lambda r: r["case_id"]) == local


KILLER = '''
import os
import signal
from pathlib import Path

from queryeval.scorers import register_scorer, scorer_class

MARK = Path(__file__).with_name("killed")


def _in_ray_worker() -> bool:
    try:
        import ray
    except ImportError:
        return False
    return ray.is_initialized() and ray.get_runtime_context().worker.mode == ray.WORKER_MODE


@register_scorer("term_selection_once_killed")
class Killer(scorer_class("term_selection")):
    """term_selection, whose Ray worker is killed (SIGKILL) the first time it sees case-150."""

    def score(self, case, output, ctx):
        if case.id == "case-150" and _in_ray_worker() and not MARK.exists():
            MARK.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return super().score(case, output, ctx)
'''


def test_a_worker_killed_mid_run_is_retried_and_the_summary_is_the_same(tmp_path: Path) -> None:
    """Shards are pure: Ray runs the lost one again on another worker; nothing is written
    twice and the summary is the local run's."""
    folder = tmp_path / "s"
    path = _sdmx_suite(
        folder, 300, "plugins: [killer]\nscorers: [{name: term_selection_once_killed}]\n"
    )
    (folder / "killer.py").write_text(KILLER)
    suite = load_suite(path)
    run_suite(suite, tmp_path / "local", progress=False)
    assert not (folder / "killed").exists()
    result = run_suite(with_executor(suite, "ray", shards=6), tmp_path / "ray", progress=False)
    assert (folder / "killed").exists()  # a worker did die
    assert result.new_records == 300
    ids = [r["case_id"] for r in read_records(tmp_path / "ray")]
    assert len(ids) == len(set(ids)) == 300
    local = json.loads(_summary(tmp_path / "local"))
    assert _without_latency(json.loads(_summary(tmp_path / "ray"))) == _without_latency(local)


def test_a_ray_run_cut_short_then_resumed_gives_the_same_summary(tmp_path: Path) -> None:
    """As SIGKILL of the driver leaves it (a torn last line), then `--resume` on Ray; the
    executor is not part of the config hash, so a local run resumes on Ray too."""
    suite = load_suite(_sdmx_suite(tmp_path / "s", 300))
    run_suite(suite, tmp_path / "full", progress=False)
    on_ray = with_executor(suite, "ray", shards=4)
    run_suite(on_ray, tmp_path / "cut", progress=False)
    results = tmp_path / "cut" / "results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    results.write_bytes(b"".join(lines[:120]) + lines[120][:30])
    again = run_suite(on_ray, tmp_path / "cut", resume=True, progress=False)
    assert (again.new_records, again.skipped) == (180, 120)
    assert _summary(tmp_path / "cut") == _summary(tmp_path / "full")


LIVE = '''
import os
import signal
from pathlib import Path

MARK = Path(__file__).with_name("killed")


def answer(case):
    """Answers with the question; the Ray worker is killed the first time it asks q05."""
    import ray

    in_worker = ray.is_initialized() and (
        ray.get_runtime_context().worker.mode == ray.WORKER_MODE
    )
    if case.id == "q05" and in_worker and not MARK.exists():
        MARK.write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return "The answer to: " + case.question
'''


def test_a_lost_worker_calling_a_system_is_not_retried_then_resume_finishes(
    tmp_path: Path,
) -> None:
    """A batch that calls a live system is never run again by Ray (its calls would be
    made twice): the run stores the other batches, stops naming --resume, and the resumed
    run asks the system only for what is missing."""
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "live.py").write_text(LIVE)
    (folder / "suite.yaml").write_text(
        textwrap.dedent(
            f"""\
            name: live
            cases: {ROOT / "examples" / "rag" / "cases" / "questions.yaml"}
            systems: [{{name: echo, callable: "live:answer", concurrency: 2}}]
            scorers: [{{name: answer, options: {{evaluation_method: keyword}}}}]
            reports: [json]
            settings: {{ray: {{batch_size: 4}}}}
            """
        )
    )
    suite = load_suite(folder / "suite.yaml")
    run_suite(suite, tmp_path / "local", progress=False)
    on_ray = with_executor(suite, "ray")
    with pytest.raises(InputError, match=r"lost with their Ray workers.*--resume"):
        run_suite(on_ray, tmp_path / "ray", progress=False)
    stored = list(read_records(tmp_path / "ray"))
    assert 0 < len(stored) <= 50 - 4 and "q05" not in {r["case_id"] for r in stored}
    again = run_suite(on_ray, tmp_path / "ray", resume=True, progress=False)
    assert again.skipped == len(stored) and again.new_records == 50 - len(stored)
    local = json.loads(_summary(tmp_path / "local"))
    assert _without_latency(json.loads(_summary(tmp_path / "ray"))) == _without_latency(local)


def test_the_command_starts_its_own_cluster_and_shuts_it_down(tmp_path: Path) -> None:
    """`queryeval run --executor ray --shards N` in a fresh process (not connected to the
    module's cluster): it starts a local cluster, gives the local summary, and leaves no
    Ray process of its own behind."""
    path = _sdmx_suite(tmp_path / "s", 30)
    run_suite(load_suite(path), tmp_path / "local", progress=False)
    before = _ray_processes()
    command = ["run", str(path), "--out", str(tmp_path / "ray"), "--no-progress"]
    out = subprocess.run(
        [sys.executable, "-m", "queryeval", *command, "--executor", "ray", "--shards", "3"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "30 new record(s)" in out.stdout
    assert _summary(tmp_path / "ray") == _summary(tmp_path / "local")
    info = json.loads((tmp_path / "ray" / "run.json").read_text())
    assert info["config"]["settings"]["ray"]["shards"] == 3
    assert _ray_processes() <= before  # its raylet, GCS and workers are gone


def _ray_processes() -> set[int]:
    """Ray's own processes (raylet, GCS) on this machine."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"raylet" in cmd or b"gcs_server" in cmd:
                found.add(int(entry.name))
    return found


def test_cluster_options_are_checked_with_a_clear_message(tmp_path: Path) -> None:
    suite = load_suite(ROOT / "examples" / "sdmx" / "suite.yaml")
    with pytest.raises(InputError, match="not a Ray address: expected auto"):
        with_executor(suite, "ray", address="http://head:8265")
    with pytest.raises(InputError, match="--address and --shards apply to --executor ray"):
        with_executor(suite, shards=3)
    with pytest.raises(InputError, match="greater than or equal to 1"):
        with_executor(suite, "ray", shards=0)
    assert with_executor(suite, "ray", address="auto").settings.ray.address == "auto"
    bad = tmp_path / "suite.yaml"
    text = (ROOT / "examples" / "sdmx" / "suite.yaml").read_text()
    text = text.replace("cases: cases/*.yaml", f"cases: {ROOT / 'examples/sdmx/cases'}/*.yaml")
    text = text.replace("predictions/", f"{ROOT / 'examples/sdmx/predictions'}/")
    bad.write_text(text + "settings: {executor: rey, ray: {task_cpus: 0}}\n")
    out = CliRunner().invoke(app, ["validate", str(bad)])
    assert out.exit_code == 2
    assert "settings.executor" in out.stderr and "'local' or 'ray'" in out.stderr
    out = CliRunner().invoke(app, ["run", str(bad), "--address", "nowhere"])
    assert out.exit_code == 2, out.stderr


def test_a_task_no_node_can_run_is_refused_before_anything_runs(tmp_path: Path) -> None:
    suite = with_executor(load_suite(ROOT / "examples" / "sdmx" / "suite.yaml"), "ray")
    suite.settings.ray.task_cpus = 16  # the module's cluster has 2 CPUs
    with pytest.raises(InputError, match="task_cpus 16 is more than any node"):
        run_suite(suite, tmp_path / "run", progress=False)
    suite.settings.ray.task_cpus = 0.5
    suite.settings.ray.embedder_gpus = 1
    with pytest.raises(InputError, match="embedder_gpus 1 is more than any node"):
        run_suite(suite, tmp_path / "run2", progress=False)


def test_without_ray_the_message_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    suite = with_executor(load_suite(ROOT / "examples" / "sdmx" / "suite.yaml"), "ray")
    with pytest.raises(InputError, match=r"pip install 'queryeval\[ray\]'"):
        run_suite(suite, tmp_path / "run", progress=False)


def test_settings_are_typed_and_left_out_of_the_config_hash(tmp_path: Path) -> None:
    from queryeval.runner import plan_run

    suite = load_suite(ROOT / "examples" / "sdmx" / "suite.yaml")
    on_ray = with_executor(suite, "ray", shards=7)
    assert plan_run(suite).config_hash == plan_run(on_ray).config_hash
    settings = RaySettings(connections_per_database={"sales": 2}, task_cpus=0.25)
    assert settings.connections == 4 and settings.task_cpus == 0.25
    with pytest.raises(ValueError, match="at least 1"):
        RaySettings(connections_per_database={"sales": 0})


def test_a_model_system_on_ray_keeps_its_concurrency_and_counts_its_calls(
    tmp_path: Path,
) -> None:
    """A model system called from the workers: never more calls at once than its
    `concurrency` (one semaphore actor for the cluster), its calls, tokens and cache hits
    added up over the workers in run.json; its prompts (the schema described in the engine
    actor) are a local run's: a local run answers every request from the same output
    cache and gives the same summary (but for the system's measured latencies)."""

    from fakes.openai_server import FakeOpenAI
    from systems_support import CASES, answering, fenced, model_system, write_suite

    slow = Overlap(answering({q: fenced(sql) for q, sql in CASES.items()}))

    with FakeOpenAI(slow) as server:
        system = model_system(server.base_url, model={"concurrency": 2}, samples=3)
        system["model"]["temperature"] = 0.7
        path = write_suite(
            tmp_path, system, extra={"settings": {"cache_dir": str(tmp_path / "cache")}}
        )
        suite = load_suite(path)
        run_suite(with_executor(suite, "ray"), tmp_path / "ray", progress=False)
        asked = server.chat_calls
        assert asked == 4 * 3 and slow.peak <= 2
        info = json.loads((tmp_path / "ray" / "run.json").read_text())
        assert info["system_calls"]["gpt"]["calls"] == asked
        assert info["cluster"]["systems"]["gpt"]["peak"] <= 2
        run_suite(suite, tmp_path / "local", progress=False)
        assert server.chat_calls == asked  # every reply from the output cache
    local = json.loads(_summary(tmp_path / "local"))
    assert _without_latency(json.loads(_summary(tmp_path / "ray"))) == _without_latency(local)


def test_the_server_gold_precheck_runs_on_the_clusters_engines(tmp_path: Path) -> None:
    """A server database whose golds all fail stops a Ray run (issue 28) as a local one,
    before anything is written: the check runs on the run's engine actors."""
    from test_gold_precheck import _suite

    path = _suite(tmp_path / "s", customers=False)
    with pytest.raises(InputError, match="every gold query tried on database 'sales'"):
        run_suite(with_executor(load_suite(path), "ray"), tmp_path / "r", progress=False)
    assert not (tmp_path / "r" / "results.jsonl").exists()
