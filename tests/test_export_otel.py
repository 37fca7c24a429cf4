"""OTLP/JSON files read back by opentelemetry-proto's own parser, their resource, the GenAI
semantic-convention attributes of model and judge calls, and saved latencies in spans."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from export_support import SAVED_LATENCY, records, small_run

pytest.importorskip("opentelemetry.exporter.otlp.proto.common")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_run(tmp_path_factory.mktemp("export-otel"))


def _parse(path: Path) -> Any:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    (line,) = path.read_text().splitlines()  # the OTLP file format: a request a line
    return json_format.Parse(line, ExportTraceServiceRequest())


def _attrs(span: Any) -> dict[str, Any]:
    out = {}
    for kv in span.attributes:
        value = kv.value
        out[kv.key] = getattr(value, value.WhichOneof("value"))
    return out


def test_cli_out_is_otlp_json_read_by_the_proto_parser(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from queryeval.cli._app import app

    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    out = tmp_path / "spans.json"
    result = CliRunner().invoke(app, ["export", "otel", str(run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    request = _parse(out)
    (resource,) = request.resource_spans
    service = {kv.key: kv.value.string_value for kv in resource.resource.attributes}
    assert service["service.name"] == "queryeval"
    spans = [s for scope in resource.scope_spans for s in scope.spans]
    assert len(spans) == int(result.output.split()[0])
    mine = records(run)
    cases = [s for s in spans if s.name == "queryeval.case"]
    assert len(cases) == len(mine)
    by_key = {(r["system"], r["case_id"]): r for r in mine}
    ids = {s.span_id for s in spans}
    for span in cases:
        attrs = _attrs(span)
        record = by_key[(attrs["queryeval.system"], attrs["queryeval.case_id"])]
        assert (
            attrs["queryeval.score.test_exec_match.value"]
            == (record["scores"]["test_exec_match"]["value"])
        )
        assert attrs["queryeval.passed"] == record["passed"]
        assert span.parent_span_id in ids  # the run's root
        assert (span.status.code == 2) == bool(record["error"])  # STATUS_CODE_ERROR
    # OTLP/JSON's ids are hex (not proto3 JSON's base64): 32 and 16 hex digits
    raw = json.loads(out.read_text())
    first = raw["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(first["traceId"]) == 32 and len(first["spanId"]) == 16
    int(first["traceId"], 16)
    calls = {s.parent_span_id: s for s in spans if s.name == "system_call"}
    for span in cases:
        attrs = _attrs(span)
        if attrs["queryeval.system"] == "saved":  # the latency the prediction file gave
            call = calls[span.span_id]
            seconds = (call.end_time_unix_nano - call.start_time_unix_nano) / 1e9
            assert seconds == pytest.approx(SAVED_LATENCY[attrs["queryeval.case_id"]])
    other = tmp_path / "named.json"
    result = CliRunner().invoke(
        app, ["export", "otel", str(run), "--out", str(other), "--service-name", "nl2sql-ci"]
    )
    assert result.exit_code == 0, result.output
    (resource,) = _parse(other).resource_spans
    assert {kv.key: kv.value.string_value for kv in resource.resource.attributes}[
        "service.name"
    ] == "nl2sql-ci"


def test_genai_attributes_on_model_and_judge_calls(run: Path, tmp_path: Path) -> None:
    """A model system's call and an LLM judge's call carry the GenAI conventions' system,
    model, token usage and cost, read from the stored records (a copy of the run whose
    records are given a model's and a judge's record, as those systems store them)."""
    import shutil

    from queryeval.exporters import write_otlp_json

    copy = Path(shutil.copytree(run, tmp_path / "run"))
    rows = records(copy)
    for r in rows:
        r["output"]["metadata"] = {"system": "model", "model": "anthropic/claude-x"}
        r["output"].setdefault("attempts", [{}])
        r["output"]["attempts"] = [
            {**a, "tokens_in": 100 + i, "tokens_out": 7}
            for i, a in enumerate(r["output"]["attempts"])
        ]
        r["scores"]["test_judge"]["details"] = {
            "judge": {"model": "gpt-4o-mini", "usage": {"prompt_tokens": 50,
                      "completion_tokens": 5}, "cost_usd": 0.002, "cached": False}
        }  # fmt: skip
    (copy / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_otlp_json(copy, tmp_path / "s.json", service_name="x")
    spans = [s for rs in _parse(tmp_path / "s.json").resource_spans
             for sc in rs.scope_spans for s in sc.spans]  # fmt: skip
    calls = [_attrs(s) for s in spans if s.name == "system_call"]
    assert len(calls) == len(rows)
    for attrs in calls:
        assert attrs["gen_ai.system"] == "anthropic"
        assert attrs["gen_ai.request.model"] == "anthropic/claude-x"
        assert attrs["gen_ai.usage.input_tokens"] >= 100
        assert attrs["gen_ai.usage.output_tokens"] == 7
    costs = {_attrs(s).get("gen_ai.usage.cost") for s in spans if s.name == "system_call"}
    assert costs == {r["cost"] for r in rows if r["cost"] is not None} | (
        {None} if any(r["cost"] is None for r in rows) else set()
    )
    judges = [_attrs(s) for s in spans if s.name == "judge"]
    assert len(judges) == len(rows)
    for attrs in judges:
        assert attrs["gen_ai.system"] == "openai"
        assert attrs["gen_ai.request.model"] == "gpt-4o-mini"
        assert attrs["gen_ai.usage.input_tokens"] == 50
        assert attrs["gen_ai.usage.output_tokens"] == 5
        assert attrs["gen_ai.usage.cost"] == pytest.approx(0.002)


def test_saved_latencies_in_a_rewritten_summary(run: Path, tmp_path: Path) -> None:
    """Saved predictions record latency per attempt: `queryeval report` (the summary from
    the stored records) gives their percentiles, as the HTML report shows them. (A fresh
    run's summary needs the runner to carry them into the record: see issue 35's report.)"""
    import shutil
    import statistics

    from queryeval.cli._report import report_command

    copy = Path(shutil.copytree(run, tmp_path / "run"))
    report_command(copy, None)
    latency = json.loads((copy / "summary.json").read_text())["systems"]["saved"]["latency_s"]
    assert latency["p50"] == pytest.approx(statistics.median(SAVED_LATENCY.values()))
    assert latency["max"] == pytest.approx(max(SAVED_LATENCY.values()))
