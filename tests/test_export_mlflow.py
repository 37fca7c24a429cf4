"""The MLflow exporter against a real `mlflow server` on 127.0.0.1 (started here, SQLite
store, artifacts served): the per-case table read back with `mlflow.load_table`, the
cases as the run's dataset input, one trace per case, the runs' times the evaluation's."""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from export_support import SAVED_LATENCY, records, small_run

pytest.importorskip("mlflow.server")  # the full mlflow (dev extra): the tracking server


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("mlflow-server")
    port = _port()
    env = {
        **os.environ,
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",  # no job runner process
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # the server imports LiteLLM: no fetch
    }
    command = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--workers", "1"]
    command += ["--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}"]
    command += ["--default-artifact-root", str(folder / "artifacts")]
    log = (folder / "server.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=log, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((folder / "server.log").read_text()[-3000:]) from None
                time.sleep(0.2)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # a throwaway server: no graceful shutdown
        process.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small run whose records name a model system's provider and an LLM judge's call
    (as those store them: a plain model name, the provider beside it)."""
    folder = small_run(tmp_path_factory.mktemp("export-mlflow"), n=4)
    rows = records(folder)
    for r in rows:
        r["output"]["metadata"] = {"system": "model", "model": "claude-x", "provider": "anthropic"}
        r["output"]["attempts"] = [{**a, "tokens_in": 100, "tokens_out": 7}
                                   for a in r["output"].get("attempts") or []]  # fmt: skip
        details = r["scores"]["test_judge"].get("details") or {}
        if "reasoning" in details:
            details["judge"] = {"model": "gemini-x", "provider": "gemini", "cost_usd": 0.002,
                                "usage": {"prompt_tokens": 50, "completion_tokens": 5}}  # fmt: skip
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_mlflow_server_table_dataset_traces_times(server: str, run: Path) -> None:
    import mlflow
    from mlflow import MlflowClient

    from queryeval.exporters import export_mlflow
    from queryeval.exporters._common import gold_text, suite_cases

    runs = export_mlflow(run, tracking_uri=server, experiment="queryeval-test")
    info = json.loads((run / "run.json").read_text())
    summary = json.loads((run / "summary.json").read_text())
    assert set(runs) == set(summary["systems"])
    cases = suite_cases(info)
    client = MlflowClient(tracking_uri=server)
    mlflow.set_tracking_uri(server)
    mlflow.set_experiment("queryeval-test")
    mine = records(run)
    failed_rows = judge_spans = 0
    for system, run_id in runs.items():
        table = mlflow.load_table("results.json", run_ids=[run_id])
        theirs = {r["case_id"]: r for r in mine if r["system"] == system}
        assert sorted(table["case"]) == sorted(theirs)
        for row in table.to_dict("records"):
            record = theirs[row["case"]]
            case = cases.by_id[row["case"]]
            assert row["system"] == system
            assert row["question"] == case.question and row["gold"] == gold_text(case)
            assert row["test_exec_match"] == record["scores"]["test_exec_match"]["value"]
            if record["error"]:
                assert row["status"] == "error" and row["reason"] == record["error"]
            else:
                assert row["status"] == ("passed" if record["passed"] else "failed")
                final = record["output"]["attempts"][-1]
                said = [final[k] for k in ("query", "answer") if k in final]
                assert row["prediction"] == "\n".join(said) and said
            if system == "saved":  # the latency the saved prediction recorded
                assert row["latency_s"] == pytest.approx(SAVED_LATENCY[row["case"]])
        failing = [r for r in table.to_dict("records") if r["status"] == "failed"]
        assert all("test_exec_match: rows differ" in r["reason"] for r in failing)
        failed_rows += len(failing)
        got = client.get_run(run_id)
        started = datetime.fromisoformat(info["started_at"]).timestamp() * 1000
        finished = datetime.fromisoformat(info["finished_at"]).timestamp() * 1000
        assert got.info.start_time == int(started) and got.info.end_time == int(finished)
        (dataset,) = got.inputs.dataset_inputs
        assert dataset.dataset.digest == cases.digest and dataset.dataset.name == "grid"
        assert {t.key: t.value for t in dataset.tags}["mlflow.data.context"] == "evaluation"
        traces = mlflow.search_traces(run_id=run_id, return_type="list")
        assert len(traces) == len(theirs)
        for trace in traces:
            root = next(s for s in trace.data.spans if s.parent_id is None)
            case_id = root.inputs["case"]
            record = theirs[case_id]
            verdict = "passed" if record["passed"] else "failed"
            assert root.outputs["status"] == ("error" if record["error"] else verdict)
            names = sorted(s.name for s in trace.data.spans)
            judged = "reasoning" in (record["scores"]["test_judge"].get("details") or {})
            assert names == sorted(["queryeval.case", "system_call"]
                                   + (["judge test_judge"] if judged else []))  # fmt: skip
            call = next(s for s in trace.data.spans if s.name == "system_call")
            # GenAI attributes: the provider recorded (a plain model name), not openai
            assert call.attributes["gen_ai.system"] == "anthropic"
            assert call.attributes["gen_ai.provider.name"] == "anthropic"
            assert call.attributes["gen_ai.request.model"] == "claude-x"
            if record["output"]["attempts"]:
                assert call.attributes["gen_ai.usage.output_tokens"] % 7 == 0
            for judge in (s for s in trace.data.spans if s.name == "judge test_judge"):
                judge_spans += 1
                assert judge.attributes["gen_ai.system"] == "gemini"
                assert judge.attributes["gen_ai.usage.input_tokens"] == 50
                assert judge.attributes["gen_ai.usage.cost"] == pytest.approx(0.002)
            if system == "saved":
                seconds = (call.end_time_ns - call.start_time_ns) / 1e9
                assert seconds == pytest.approx(SAVED_LATENCY[case_id], abs=1e-6)
        metrics = got.data.metrics
        if system == "saved":
            median = statistics.median(SAVED_LATENCY[c] for c in theirs)
            assert metrics["latency_p50_s"] == pytest.approx(median)
    assert failed_rows > 0 and judge_spans > 0
    # exporting again makes no new runs (nor traces)
    assert export_mlflow(run, tracking_uri=server, experiment="queryeval-test") == runs
    experiment = client.get_experiment_by_name("queryeval-test")
    assert len(client.search_runs([experiment.experiment_id])) == len(runs)
