"""Export a stored run as OpenTelemetry spans: a `queryeval.run` root, one `queryeval.case`
span per (system, case) with the verdict and every score as attributes, and its children
`system_call` (the system's latency and cost), `execution` (the query's run on the
database, when there was one) and `judge` (each judged score).

The stored records hold durations, not clock times: start times are laid end to end from
the run's `started_at` (one case after the other), so the timeline shows real durations in
a reconstructed order. A system's failure sets the case span's status to ERROR.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from queryeval.exporters._common import missing_extra, read_run

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


def _final_attempt(record: Mapping[str, Any]) -> Mapping[str, Any]:
    attempts = (record.get("output") or {}).get("attempts") or []
    return attempts[-1] if attempts and isinstance(attempts[-1], Mapping) else {}


def _judged(scores: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for label, score in scores.items():
        details = (score or {}).get("details") or {}
        if "reasoning" in details or "verdict" in details:
            yield label, score


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
    summary = run.summary or {}
    provider = tracer_provider or trace.get_tracer_provider()
    tracer = provider.get_tracer("queryeval")
    clock = _start_ns(info)
    count = 0
    root = tracer.start_span(
        "queryeval.run",
        start_time=clock,
        attributes={
            "queryeval.suite": str(summary.get("suite", "")),
            "queryeval.config_hash": str(info.get("config_hash", "")),
            "queryeval.run_dir": str(Path(run_dir).resolve()),
        },
    )
    context = trace.set_span_in_context(root)
    for record in run.records:
        scores: Mapping[str, Any] = record.get("scores") or {}
        attempt = _final_attempt(record)
        execution = attempt.get("execution") if isinstance(attempt, Mapping) else None
        call_ns = _ns(record.get("latency_s"))
        exec_ns = _ns((execution or {}).get("elapsed_s"))
        attributes: dict[str, Any] = {
            "queryeval.system": str(record["system"]),
            "queryeval.case_id": str(record["case_id"]),
        }
        if record.get("passed") is not None:
            attributes["queryeval.passed"] = bool(record["passed"])
        for label, score in scores.items():
            score = score or {}
            attributes[f"queryeval.score.{label}.status"] = str(score.get("status", "ok"))
            if score.get("value") is not None:
                attributes[f"queryeval.score.{label}.value"] = float(score["value"])
            if (score.get("details") or {}).get("review"):
                attributes[f"queryeval.score.{label}.overridden"] = True
        case = tracer.start_span(
            "queryeval.case", context=context, start_time=clock, attributes=attributes
        )
        if record.get("error"):
            case.set_status(Status(StatusCode.ERROR, str(record["error"])[:500]))
        inner = trace.set_span_in_context(case)
        call_attrs = {"queryeval.latency_s": call_ns / _NS}
        if record.get("cost") is not None:
            call_attrs["queryeval.cost"] = float(record["cost"])
        span = tracer.start_span("system_call", context=inner, start_time=clock,
                                 attributes=call_attrs)  # fmt: skip
        span.end(end_time=clock + call_ns)
        count += 1
        cursor = clock + call_ns
        if execution:
            span = tracer.start_span(
                "execution",
                context=inner,
                start_time=cursor,
                attributes={
                    f"queryeval.execution.{k}": _attr(v)
                    for k, v in execution.items()
                    if v is not None and k in ("kind", "elapsed_s", "row_count", "truncated")
                },
            )
            cursor += exec_ns
            span.end(end_time=cursor)
            count += 1
        for label, score in _judged(scores):
            details = score.get("details") or {}
            judge_attrs = {"queryeval.scorer": label, "queryeval.status": str(score.get("status"))}
            for key in ("verdict", "cached", "cost"):
                if details.get(key) is not None:
                    judge_attrs[f"queryeval.judge.{key}"] = _attr(details[key])
            span = tracer.start_span("judge", context=inner, start_time=cursor,
                                     attributes=judge_attrs)  # fmt: skip
            span.end(end_time=cursor)
            count += 1
        case.end(end_time=cursor)
        count += 1
        clock = cursor
    root.end(end_time=clock)
    return count + 1


def write_spans_jsonl(run_dir: str | Path, path: str | Path) -> int:
    """Export the run's spans to a JSON-lines file (one OpenTelemetry span as JSON a line),
    with the SDK and no collector. Returns the number of spans."""
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )
    except ImportError:
        raise missing_extra("opentelemetry-sdk", "otel") from None
    import orjson

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    n = export_otel(run_dir, tracer_provider=provider)
    provider.shutdown()
    lines = [orjson.dumps(orjson.loads(s.to_json())) for s in memory.get_finished_spans()]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(b"\n".join(lines) + b"\n")
    return n
