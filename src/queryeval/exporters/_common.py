"""What every exporter reads of a run directory (records, summary, run.json, the suite's
cases), the texts of a case (question, gold, prediction, reason), the GenAI attributes of
model and judge calls (both exporters' spans), and the missing-extra message."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from queryeval.cases import Case, case_files, load_cases
from queryeval.errors import InputError
from queryeval.log import COMPARISON, RUN, SUMMARY, RunLog, read_log

# the reports a run directory may hold, logged as artifacts
REPORT_FILES = (
    "report.html",
    "report.xlsx",
    "report.md",
    "junit.xml",
    SUMMARY,
    RUN,
    COMPARISON,
)


def read_run(run_dir: str | Path) -> RunLog:
    """The run's records (with a human review's overrides), summary and run.json;
    InputError without a summary (the run is not finished: nothing to export yet)."""
    run = read_log(run_dir)
    if run.summary is None:
        raise InputError("the run has no summary.json (unfinished?)", path=Path(run_dir))
    return run


def missing_extra(package: str, extra: str) -> InputError:
    """The error for an exporter whose library is not installed."""
    return InputError(
        f"{package} is not installed; install it with: pip install 'queryeval[{extra}]'"
    )


def system_params(info: Mapping[str, Any] | None, system: str) -> dict[str, Any]:
    """The system's configuration as run.json records it (name excluded), or {}."""
    for entry in (info or {}).get("systems") or []:
        if isinstance(entry, Mapping) and entry.get("name") == system:
            return {k: v for k, v in entry.items() if k != "name"}
    return {}


@dataclass(frozen=True)
class SuiteCases:
    """The suite's cases as the run read them (from run.json's suite file and case
    patterns): by id, the files and a hash of their bytes (MLflow's dataset digest). Empty
    when the case files are gone or changed shape since the run (question and gold are then
    left blank, never guessed)."""

    by_id: Mapping[str, Case]
    files: tuple[Path, ...] = ()
    digest: str = ""


def suite_cases(info: Mapping[str, Any] | None) -> SuiteCases:
    """The cases of the run whose run.json is `info` (see SuiteCases)."""
    info = info or {}
    patterns = (info.get("config") or {}).get("cases")
    suite_file = info.get("suite_file")
    if not patterns or not suite_file:
        return SuiteCases({})
    base = Path(str(suite_file)).parent
    try:
        files = tuple(case_files(patterns, base))
        cases = load_cases(patterns, base)
    except (InputError, OSError):
        return SuiteCases({})
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    return SuiteCases({c.id: c for c in cases}, files, digest.hexdigest()[:32])


def _text(value: Any) -> str:
    """A gold or predicted field as text: a string as it is, a query's text, else JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json", exclude_defaults=True)
    if isinstance(value, Mapping) and isinstance(value.get("text"), str):
        return value["text"]
    return orjson.dumps(value, default=str).decode()


_FIELDS = ("query", "weaviate_query", "indicator_selection", "answer")


def gold_text(case: Case | None) -> str:
    """The main gold of a case as text (query, Weaviate call, selection, answer or expected
    rows); alternatives follow after `or:`. The HTML report's reading, kept here because
    the reports are a sibling layer.

    >>> from queryeval.cases import Case
    >>> gold_text(Case.model_validate({"id": "1", "conversation": [
    ...     {"content": "q", "target": {"query": "SELECT 1"}}]}))
    'SELECT 1'
    """
    if case is None:
        return ""
    texts = []
    for target in case.targets:
        parts = [_text(getattr(target, f)) for f in _FIELDS if getattr(target, f) is not None]
        if target.result is not None:
            cols = ", ".join(target.result.columns)
            parts.append(f"expected rows ({cols}): {len(target.result.rows)} row(s)")
        texts.append("\n".join(parts))
    return "\n".join([texts[0], *(f"or: {t}" for t in texts[1:] if t)]) if texts else ""


def prediction_text(record: Mapping[str, Any]) -> str:
    """What the system finally answered (its last attempt) as text; '' when nothing.

    >>> prediction_text({"output": {"attempts": [{"query": "SELECT 1"}]}})
    'SELECT 1'
    """
    output = record.get("output")
    attempts = output.get("attempts") if isinstance(output, Mapping) else None
    if not attempts or not isinstance(attempts[-1], Mapping):
        return ""
    final = attempts[-1]
    return "\n".join(_text(final[f]) for f in _FIELDS if final.get(f) is not None)


def reason_text(record: Mapping[str, Any]) -> str:
    """Why a case did not pass: the system's error, else each failing or not-scored score's
    explanation (`label: why`); '' for a passing case.

    >>> reason_text({"passed": False, "scores": {"em": {"status": "ok", "passed": False,
    ...     "explanation": "rows differ"}}})
    'em: rows differ'
    """
    if record.get("error"):
        return str(record["error"])
    if record.get("passed") is True:
        return ""
    lines = []
    for label, score in (record.get("scores") or {}).items():
        score = score or {}
        failing = score.get("status", "ok") != "ok" or score.get("passed") is False
        if failing:
            why = score.get("explanation") or score.get("status") or "failed"
            lines.append(f"{label}: {why}")
    return "\n".join(lines)


def score_value(score: Mapping[str, Any] | None) -> float | None:
    """A stored score's value as a float, None when it has none (unscored, error)."""
    value = (score or {}).get("value")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def genai_provider(model: Any, provider: Any = None) -> str:
    """The GenAI system of a call: the provider recorded, else LiteLLM's `provider/model`
    prefix, else openai (the OpenAI-compatible API)."""
    if isinstance(provider, str) and provider:
        return provider
    if isinstance(model, str) and "/" in model:
        return model.split("/", 1)[0]
    return "openai"


def genai_attributes(
    model: Any, provider: Any, tokens_in: Any, tokens_out: Any, cost: Any
) -> dict[str, Any]:
    """OpenTelemetry's GenAI semantic-convention attributes of a model call (what Langfuse
    and Phoenix read), the cost as `gen_ai.usage.cost` (Langfuse's name; the conventions
    have none)."""
    system = genai_provider(model, provider)
    out: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": system,
        "gen_ai.provider.name": system,
    }
    if isinstance(model, str) and model:
        out["gen_ai.request.model"] = model
    for key, value in (
        ("gen_ai.usage.input_tokens", tokens_in),
        ("gen_ai.usage.output_tokens", tokens_out),
    ):
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = value
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        out["gen_ai.usage.cost"] = float(cost)
    return out


def model_call_attributes(record: Mapping[str, Any]) -> dict[str, Any]:
    """GenAI attributes of a model system's call (its attempts' tokens added up); {} for
    a system that is no model (or did not say)."""
    output = record.get("output")
    if not isinstance(output, Mapping):
        return {}
    meta = output.get("metadata") or {}
    attempts = [a for a in output.get("attempts") or [] if isinstance(a, Mapping)]
    tokens = [a for a in attempts if a.get("tokens_in") is not None]
    if meta.get("system") != "model" and not tokens:
        return {}

    def total(key: str) -> int | None:
        values = [a[key] for a in attempts if isinstance(a.get(key), int)]
        return sum(values) if values else None

    return genai_attributes(
        meta.get("model"), meta.get("provider"), total("tokens_in"), total("tokens_out"),
        record.get("cost"),
    )  # fmt: skip
