"""Export a stored run as OpenTelemetry spans: a `queryeval.run` root, one `queryeval.case`
span per (system, case) with the verdict and every score as attributes, and its children
`system_call` (the system's latency and cost), `execution` (the query's run on the
database, when there was one) and `judge` (each judged score).

The stored records hold durations, not clock times: start times are laid end to end from
the run's `started_at` (one case after the other), so the timeline shows real durations in
a reconstructed order. A system's failure sets the case span's status to ERROR.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from queryeval.exporters._common import (
    genai_attributes,
    missing_extra,
    model_call_attributes,
    read_run,
)
from queryeval.stats import record_latency

_NS = 1_000_000_000


def _ns(seconds: Any) -> int:
    ok = isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds > 0
    return int(seconds * _NS) if ok else 0


def _start_ns(info: Mapping[str, Any]) -> int:
    text = info.get("started_at")
    try:
        return int(datetime.fromisoformat(str(text)).timestamp() * _NS)
    except ValueError:
        return 0


def _attr(value: Any) -> Any:
    """An attribute value OpenTelemetry accepts (str, bool, int, float)."""
    return value if isinstance(value, str | bool | int | float) else str(value)


def _execution(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The query's execution outcome: the final attempt's, else the first a scorer recorded
    (`details.execution`, the predicted side when it holds both); None when nothing ran."""
    attempts = (record.get("output") or {}).get("attempts") or []
    final = attempts[-1] if attempts and isinstance(attempts[-1], Mapping) else {}
    if isinstance(final.get("execution"), Mapping):
        return final["execution"]
    for score in (record.get("scores") or {}).values():
        found = ((score or {}).get("details") or {}).get("execution")
        if isinstance(found, Mapping) and isinstance(found.get("predicted"), Mapping):
            found = found["predicted"]
        if isinstance(found, Mapping) and isinstance(found.get("kind"), str):
            return found
    return None


def _judged(scores: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(label, score) of each judged score: an LLM judge's (its record under
    `details.judge`) or another scorer's that gave reasoning or a verdict."""
    for label, score in scores.items():
        details = (score or {}).get("details") or {}
        if (
            "reasoning" in details
            or "verdict" in details
            or isinstance(details.get("judge"), Mapping)
        ):
            yield label, score


def _case_attributes(record: Mapping[str, Any]) -> dict[str, Any]:
    """System, case, verdict and every score's status, value and override flag."""
    out: dict[str, Any] = {
        "queryeval.system": str(record["system"]),
        "queryeval.case_id": str(record["case_id"]),
    }
    if record.get("passed") is not None:
        out["queryeval.passed"] = bool(record["passed"])
    for label, score in (record.get("scores") or {}).items():
        score = score or {}
        out[f"queryeval.score.{label}.status"] = str(score.get("status", "ok"))
        if score.get("value") is not None:
            out[f"queryeval.score.{label}.value"] = float(score["value"])
        if (score.get("details") or {}).get("review"):
            out[f"queryeval.score.{label}.overridden"] = True
    return out


class _Emitter:
    """Spans of one run on a reconstructed clock (durations real, starts end to end)."""

    def __init__(self, trace: Any, tracer: Any, clock: int) -> None:
        self.trace, self.tracer, self.clock, self.count = trace, tracer, clock, 0

    def span(self, name: str, context: Any, start: int, end: int, attributes: dict) -> None:
        span = self.tracer.start_span(name, context=context, start_time=start,
                                      attributes=attributes)  # fmt: skip
        span.end(end_time=end)
        self.count += 1

    def case(self, record: Mapping[str, Any], parent: Any, error_status: Any) -> None:
        """The case span and its children, from the current clock on."""
        start = self.clock
        case = self.tracer.start_span("queryeval.case", context=parent, start_time=start,
                                      attributes=_case_attributes(record))  # fmt: skip
        if record.get("error"):
            case.set_status(error_status(str(record["error"])[:500]))
        inner = self.trace.set_span_in_context(case)
        call_ns = _ns(record_latency(record))
        call = {"queryeval.latency_s": call_ns / _NS, **model_call_attributes(record)}
        if record.get("cost") is not None:
            call["queryeval.cost"] = float(record["cost"])
        self.span("system_call", inner, start, start + call_ns, call)
        cursor = start + call_ns
        execution = _execution(record)
        if execution is not None:
            attrs = {
                f"queryeval.execution.{k}": _attr(v)
                for k, v in execution.items()
                if v is not None and k in ("kind", "elapsed_s", "row_count", "truncated")
            }
            end = cursor + _ns(execution.get("elapsed_s"))
            self.span("execution", inner, cursor, end, attrs)
            cursor = end
        for label, score in _judged(record.get("scores") or {}):
            details = score.get("details") or {}
            attrs = {"queryeval.scorer": label, "queryeval.status": str(score.get("status"))}
            for key in ("verdict", "cached", "cost"):
                if details.get(key) is not None:
                    attrs[f"queryeval.judge.{key}"] = _attr(details[key])
            judge = details.get("judge")
            if isinstance(judge, Mapping):
                usage = judge.get("usage") or {}
                attrs.update(
                    genai_attributes(judge.get("model"), judge.get("provider"),
                                     usage.get("prompt_tokens"), usage.get("completion_tokens"),
                                     judge.get("cost_usd"))
                )  # fmt: skip
                if judge.get("cached") is not None:
                    attrs["queryeval.judge.cached"] = bool(judge["cached"])
            self.span("judge", inner, cursor, cursor, attrs)
        case.end(end_time=cursor)
        self.count += 1
        self.clock = cursor


def export_otel(run_dir: str | Path, *, tracer_provider: Any = None) -> int:
    """Emit the stored run in `run_dir` as spans through `tracer_provider` (default: the
    global one; configure its exporter, e.g. OTLP, as usual). Returns the number of spans.
    """
    try:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode
    except ImportError:
        raise missing_extra("opentelemetry-sdk", "otel") from None

    run = read_run(run_dir)
    info = run.info or {}
    provider = tracer_provider or trace.get_tracer_provider()
    emitter = _Emitter(trace, provider.get_tracer("queryeval"), _start_ns(info))
    root = emitter.tracer.start_span(
        "queryeval.run",
        start_time=emitter.clock,
        attributes={
            "queryeval.suite": str(run.summary.get("suite", "") if run.summary else ""),
            "queryeval.config_hash": str(info.get("config_hash", "")),
            "queryeval.run_dir": str(Path(run_dir).resolve()),
        },
    )
    context = trace.set_span_in_context(root)
    for record in run.records:
        emitter.case(record, context, lambda text: Status(StatusCode.ERROR, text))
    root.end(end_time=emitter.clock)
    return emitter.count + 1


def tracer_provider(service_name: str | None = None) -> Any:
    """An SDK TracerProvider whose resource's `service.name` is `service_name`, else
    OTEL_SERVICE_NAME, else `queryeval` (other OTEL_RESOURCE_ATTRIBUTES are kept)."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:
        raise missing_extra("opentelemetry-sdk", "otel") from None
    name = service_name or os.environ.get("OTEL_SERVICE_NAME") or "queryeval"
    return TracerProvider(resource=Resource.create({"service.name": name}))


def otlp_json(run_dir: str | Path, *, service_name: str | None = None) -> tuple[str, int]:
    """The run's spans as one OTLP/JSON ExportTraceServiceRequest (the OTLP exporter's own
    encoder, then protobuf's JSON mapping with OTLP's two differences: trace and span ids
    in hex, enums as integers), and the number of spans."""
    try:
        from google.protobuf import json_format
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )
    except ImportError:
        raise missing_extra("opentelemetry-exporter-otlp-proto-common", "otel") from None
    memory = InMemorySpanExporter()
    provider = tracer_provider(service_name)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    n = export_otel(run_dir, tracer_provider=provider)
    provider.shutdown()
    request = encode_spans(memory.get_finished_spans())
    data = json_format.MessageToDict(request, use_integers_for_enums=True)
    for resource in data.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:  # proto3 JSON gives bytes as base64; OTLP wants hex
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(data, separators=(",", ":")), n


def write_otlp_json(
    run_dir: str | Path, path: str | Path, *, service_name: str | None = None
) -> int:
    """Write the run's spans to `path` as OTLP/JSON: one ExportTraceServiceRequest on one
    line (the OTLP file format: a collector's `otlpjsonfile` receiver reads it).
    Returns the number of spans."""
    text, n = otlp_json(run_dir, service_name=service_name)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text + "\n")
    return n


write_spans_jsonl = write_otlp_json  # the name before OTLP/JSON (one request a line)
