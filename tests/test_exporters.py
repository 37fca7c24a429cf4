"""The exporters against the real libraries, offline: MLflow with a file store in a temp
folder, OpenTelemetry with the SDK's in-memory exporter. Everything is compared with the
run's own summary.json and results.jsonl."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from queryeval.cli._app import app
from queryeval.config import load_suite
from queryeval.runner import run_suite
from queryeval.stats import headline_metrics
from reports_plugin import make_suite


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("export")
    suite = load_suite(make_suite(folder, n=12))
    suite.reports = [r for r in suite.reports if r.kind in ("json", "markdown", "junit")]
    run_suite(suite, folder / "run", progress=False)
    return folder / "run"


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def _otlp_spans(path: Path) -> list[dict]:
    """The spans of an OTLP/JSON file, attributes as a plain mapping."""
    (line,) = path.read_text().splitlines()
    spans = [
        s
        for rs in json.loads(line)["resourceSpans"]
        for sc in rs["scopeSpans"]
        for s in sc["spans"]
    ]
    for s in spans:
        s["attributes"] = {
            a["key"]: next(iter(a["value"].values())) for a in s.get("attributes", [])
        }
    return spans


def _records(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]


def test_mlflow_run_per_system_with_metrics_params_artifacts(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    from queryeval.exporters import export_mlflow

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    store = tmp_path / "mlruns"
    runs = export_mlflow(run, tracking_uri=store, experiment="exp", traces=False)
    summary = _summary(run)
    assert set(runs) == set(summary["systems"]) and len(set(runs.values())) == 4
    client = MlflowClient(tracking_uri=store.resolve().as_uri())
    for system, run_id in runs.items():
        data = client.get_run(run_id).data
        expected = headline_metrics(summary["systems"][system])
        assert expected["pass_rate"] == summary["systems"][system]["pass_rate"]
        assert data.metrics == pytest.approx(expected)
        assert "test_exec_match.row_f1" in data.metrics
        info = json.loads((run / "run.json").read_text())
        (point,) = client.get_metric_history(run_id, "pass_rate")
        finished = datetime.fromisoformat(info["finished_at"]).timestamp()
        assert point.timestamp == int(finished * 1000)  # when the run finished, not now
        assert data.params["config_hash"] == info["config_hash"]
        assert json.loads(data.params["system.params"]) == next(
            s["params"] for s in info["systems"] if s["name"] == system
        )
        reports = {a.path for a in client.list_artifacts(run_id, "reports")}
        assert {"reports/summary.json", "reports/report.md", "reports/junit.xml"} <= reports
        table = json.loads(
            Path(client.download_artifacts(run_id, "results.json", str(tmp_path))).read_text()
        )
        rows = [dict(zip(table["columns"], r, strict=True)) for r in table["data"]]
        mine = {r["case_id"]: r for r in _records(run) if r["system"] == system}
        assert {r["case"] for r in rows} == set(mine)
        for r in rows:
            assert (r["status"] == "passed") == (mine[r["case"]]["passed"] is True)
            assert r["test_exec_match"] == mine[r["case"]]["scores"]["test_exec_match"]["value"]
    # exporting again makes no new runs
    assert export_mlflow(run, tracking_uri=store, experiment="exp", traces=False) == runs
    experiment = client.get_experiment_by_name("exp")
    assert len(client.search_runs([experiment.experiment_id])) == 4


def test_otel_spans_per_case(run: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import StatusCode

    from queryeval.exporters import export_otel

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    n = export_otel(run, tracer_provider=provider)
    spans = memory.get_finished_spans()
    assert n == len(spans)
    records = _records(run)
    by_name: dict[str, list] = {}
    for s in spans:
        by_name.setdefault(s.name, []).append(s)
    (root,) = by_name["queryeval.run"]
    cases = by_name["queryeval.case"]
    assert len(cases) == len(records) == len(by_name["system_call"])
    # the judge-like scorer's verdicts (the unscored ones carry no reasoning) are judge spans
    judged = sum(
        1 for r in records if "reasoning" in (r["scores"]["test_judge"].get("details") or {})
    )
    assert 0 < judged == len(by_name["judge"])
    # the execution outcome the engine-like scorer recorded: one span per record, its kind
    executions = {s.parent.span_id: s for s in by_name["execution"]}
    assert (
        0
        < len(executions)
        == len(
            [
                r
                for r in records
                if (r["scores"]["test_exec_match"].get("details") or {}).get("execution")
            ]
        )
    )
    span_of = {
        (s.attributes["queryeval.system"], s.attributes["queryeval.case_id"]): s for s in cases
    }
    for r in records:
        span = span_of[(r["system"], r["case_id"])]
        assert span.parent.span_id == root.context.span_id
        assert span.attributes.get("queryeval.passed") == r["passed"]
        assert (span.status.status_code is StatusCode.ERROR) == bool(r["error"])
        value = r["scores"]["test_exec_match"]["value"]
        assert span.attributes["queryeval.score.test_exec_match.value"] == value
    for r in records:
        execution = (r["scores"]["test_exec_match"].get("details") or {}).get("execution")
        if execution:
            span = executions[span_of[(r["system"], r["case_id"])].context.span_id]
            assert span.attributes["queryeval.execution.kind"] == execution["predicted"]["kind"]
    calls = {s.parent.span_id: s for s in by_name["system_call"]}
    for r in records:
        span = span_of[(r["system"], r["case_id"])]
        call = calls[span.context.span_id]
        assert (call.end_time - call.start_time) / 1e9 == pytest.approx(
            r["latency_s"] or 0, abs=1e-6
        )
        assert span.start_time <= call.start_time and call.end_time <= span.end_time
    assert root.start_time <= min(s.start_time for s in cases)
    assert root.end_time >= max(s.end_time for s in cases)


def test_cli_export(run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("opentelemetry.sdk")
    runner = CliRunner()
    out = tmp_path / "spans.jsonl"
    result = runner.invoke(app, ["export", "otel", str(run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    spans = _otlp_spans(out)
    assert len(spans) == int(result.output.split()[0])
    assert sum(s["name"] == "queryeval.case" for s in spans) == len(_records(run))
    result = runner.invoke(app, ["export", "otel", str(run)])
    assert result.exit_code == 2 and "exactly one of --out and --endpoint" in result.output
    result = runner.invoke(app, ["export", "mlflow", str(tmp_path / "nothing")])
    assert result.exit_code == 2 and "not a run directory" in result.output


def test_exports_show_a_reviews_overrides(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mlflow")
    pytest.importorskip("opentelemetry.sdk")
    import shutil

    from mlflow.tracking import MlflowClient

    from queryeval.cli._report import report_command
    from queryeval.exporters import export_mlflow, write_otlp_json

    reviewed = Path(shutil.copytree(run, tmp_path / "reviewed"))
    target = next(r for r in _records(reviewed) if r["scores"]["test_judge"].get("passed"))
    (tmp_path / "r.yaml").write_text(
        f"overrides:\n  - {{case_id: {target['case_id']}, system: '{target['system']}', "
        "scorer: test_judge, verdict: fail, reviewer: ana}\n"
    )
    report_command(reviewed, tmp_path / "r.yaml")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    runs = export_mlflow(reviewed, tracking_uri=tmp_path / "ml", experiment="rev", traces=False)
    client = MlflowClient(tracking_uri=(tmp_path / "ml").resolve().as_uri())
    path = client.download_artifacts(runs[target["system"]], "results.json", str(tmp_path))
    table = json.loads(Path(path).read_text())
    rows = [dict(zip(table["columns"], r, strict=True)) for r in table["data"]]
    flagged = [r["case"] for r in rows if r["test_judge.overridden"]]
    assert flagged == [target["case_id"]]
    row = next(r for r in rows if r["case"] == target["case_id"])
    assert row["test_judge"] == 0.0 and row["status"] == "failed"
    write_otlp_json(reviewed, tmp_path / "s.json")
    spans = _otlp_spans(tmp_path / "s.json")
    marked = [
        s["attributes"]["queryeval.case_id"]
        for s in spans
        if s["attributes"].get("queryeval.score.test_judge.overridden")
    ]
    assert marked == [target["case_id"]]
