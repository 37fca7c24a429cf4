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
    for label, score in scores.items():
        details = (score or {}).get("details") or {}
        if "reasoning" in details or "verdict" in details:
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
        call_ns = _ns(record.get("latency_s"))
        call = {"queryeval.latency_s": call_ns / _NS}
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
