"""examples/model as `make demo` runs it: a (toy) model writes SQL for the sales database,
once and in the built-in refinement loop; the loop passes the gate the single shot fails,
and a re-run of the suite calls the model for nothing."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from queryeval.config import load_suite
from queryeval.runner import run_suite

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "model"


def _toy_model():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("toy_model", EXAMPLE / "toy_model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.start(0)


def test_the_model_example_runs_and_the_loop_recovers(tmp_path: Path) -> None:
    server = _toy_model()
    try:
        suite = load_suite(EXAMPLE / "suite.yaml")
        suite.settings.cache_dir = str(tmp_path / "cache")
        for system in suite.systems:
            assert system.model is not None
            system.model.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        first = run_suite(suite, tmp_path / "run", progress=False)
        again = run_suite(suite, tmp_path / "again", progress=False)
    finally:
        server.shutdown()
    systems = first.summary["systems"]
    single = systems["model"]["scorers"]["execution_match"]["mean"]
    loop = systems["agent"]["scorers"]["execution_match"]["mean"]
    assert single is not None and loop is not None and loop > single
    verdicts = {g["system"]: g["passed"] for g in first.gates}
    assert verdicts == {"model": False, "agent": True}
    report = systems["agent"]["scorers"]["agentic"]["aggregate"]["agentic_report"]
    assert report["recovery_rate"] is not None and report["recovery_rate"] > 0
    calls = json.loads((tmp_path / "again" / "run.json").read_text())["system_calls"]
    assert all(stats["calls"] == 0 for stats in calls.values()), calls
    assert again.summary["systems"]["agent"]["scorers"]["execution_match"]["mean"] == loop
