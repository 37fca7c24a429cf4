"""Plain-text views of a case and of a stored record, shared by the HTML, Excel and JUnit
reports: the gold target, the prediction, the execution outcome, judge reasoning."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from queryeval.cases import Case, Target

_OK_LIKE = ("kind", "outcome", "status")


def cap(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was left out (0: no limit)."""
    if limit <= 0 or len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters in results.jsonl]"


def _compact_json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _selection_text(selection: Any) -> str:
    """`DATASET: DIM=ID,ID; DIM=ID` for SDMX indicator selections (dicts or models)."""
    parts = []
    for ds in selection or []:
        ds = ds.model_dump() if hasattr(ds, "model_dump") else ds
        dims = "; ".join(
            f"{d.get('dimension_name')}={','.join(str(v.get('id')) for v in d.get('values') or [])}"
            for d in ds.get("dimensions") or []
        )
        parts.append(f"{ds.get('dataset_id')}: {dims}" if dims else str(ds.get("dataset_id")))
    return "\n".join(parts)


def _weaviate_text(query: Any) -> str:
    if hasattr(query, "model_dump"):
        query = query.model_dump(mode="json")
    if isinstance(query, dict):
        query = {k: v for k, v in query.items() if v not in (None, "", [], {})}
    return _compact_json(query)


def target_text(target: Target | None) -> str:
    """The gold of one target, as text: query, Weaviate call, selection, answer or rows."""
    if target is None:
        return ""
    parts: list[str] = []
    if target.query is not None:
        parts.append(target.query if isinstance(target.query, str) else target.query.text)
    if target.weaviate_query is not None:
        parts.append(_weaviate_text(target.weaviate_query))
    if target.indicator_selection is not None:
        parts.append(_selection_text(target.indicator_selection))
    if target.answer is not None:
        parts.append(target.answer if isinstance(target.answer, str) else target.answer.text)
    if target.result is not None:
        cols = ", ".join(target.result.columns)
        parts.append(f"expected rows ({cols}): {len(target.result.rows)} row(s)")
    return "\n".join(parts)


def gold_text(case: Case) -> str:
    """Every accepted gold of a case; alternatives after the main one."""
    targets = case.targets
    if not targets:
        return ""
    main = target_text(targets[0])
    alts = [target_text(t) for t in targets[1:]]
    lines = [main, *(f"or: {a}" for a in alts if a)]
    fix = case.metadata.get("gold_correction") if case.metadata else None
    if isinstance(fix, Mapping):  # a human review replaced the gold (runner's review)
        by = f" by {fix['reviewer']}" if fix.get("reviewer") else ""
        note = f": {fix['note']}" if fix.get("note") else ""
        lines.append(f"[gold corrected{by}{note}; was: {fix.get('original', '')}]")
    return "\n".join(lines)


def review_of(score: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The human review that overrode a stored score (`details.review`), or None."""
    review = (score.get("details") or {}).get("review")
    return review if isinstance(review, Mapping) else None


def review_text(review: Mapping[str, Any]) -> str:
    """`fail -> pass by ana: note`: an override in words."""
    original = review.get("original") or {}
    passed = original.get("passed")
    was = "pass" if passed is True else "fail" if passed is False else original.get("status")
    by = f" by {review['reviewer']}" if review.get("reviewer") else ""
    note = f": {review['note']}" if review.get("note") else ""
    return f"overridden {was} -> {review.get('verdict')}{by}{note}"


def attempt_text(attempt: Mapping[str, Any]) -> str:
    """What one stored attempt produced, as text."""
    parts: list[str] = []
    if attempt.get("query"):
        parts.append(str(attempt["query"]))
    if attempt.get("weaviate_query") is not None:
        parts.append(_weaviate_text(attempt["weaviate_query"]))
    if attempt.get("indicator_selection") is not None:
        parts.append(_selection_text(attempt["indicator_selection"]))
    if attempt.get("answer"):
        parts.append(str(attempt["answer"]))
    return "\n".join(parts)


def prediction_text(record: Mapping[str, Any]) -> str:
    """The final attempt of a record (noting how many attempts there were)."""
    attempts = (record.get("output") or {}).get("attempts") or []
    if not attempts:
        return ""
    text = attempt_text(attempts[-1])
    return f"[attempt {len(attempts)} of {len(attempts)}]\n{text}" if len(attempts) > 1 else text


def _outcome_of(value: Any) -> tuple[str, str] | None:
    """(kind, message) from an execution outcome dict, or from a dict holding one under a
    predicted-side key (engine scorers store both sides)."""
    if not isinstance(value, Mapping):
        return (str(value), "") if isinstance(value, str) and value else None
    for key in _OK_LIKE:
        if isinstance(value.get(key), str):
            return value[key], str(value.get("message") or "")
    for key in ("predicted", "prediction", "pred", "generated"):
        found = _outcome_of(value.get(key))
        if found:
            return found
    return None


def execution_of(record: Mapping[str, Any]) -> tuple[str, str]:
    """The execution outcome (kind, message) of a record: its final attempt's, else the first
    one a scorer recorded in `details.execution`; ("", "") when nothing was executed."""
    attempts = (record.get("output") or {}).get("attempts") or []
    if attempts and attempts[-1].get("execution"):
        found = _outcome_of(attempts[-1]["execution"])
        if found:
            return found
    scores = (record.get("scores") or {}).values()
    for score in scores:
        found = _outcome_of((score.get("details") or {}).get("execution"))
        if found:
            return found
    for score in scores:  # nothing ran: what the system produced failed before (crashed ...)
        reason = (score.get("details") or {}).get("failure")
        if reason:
            return str(reason), str(score.get("explanation") or "")
    return "", ""


def reasoning_of(record: Mapping[str, Any]) -> str:
    """Judge reasoning of every scorer that gave some (`details.reasoning`), labelled."""
    parts = []
    scores = record.get("scores") or {}
    for label, score in scores.items():
        reasoning = (score.get("details") or {}).get("reasoning")
        if reasoning:
            parts.append(f"{label}: {reasoning}" if len(scores) > 1 else str(reasoning))
    return "\n".join(parts)


def latency_of(record: Mapping[str, Any]) -> float | None:
    """The record's latency, else the sum of its attempts' latencies."""
    if record.get("latency_s") is not None:
        return float(record["latency_s"])
    attempts = (record.get("output") or {}).get("attempts") or []
    times = [a["latency_s"] for a in attempts if a.get("latency_s") is not None]
    return float(sum(times)) if times else None


def is_judge_score(score: Mapping[str, Any]) -> bool:
    """Whether a stored score came from an LLM judge (it carries reasoning or a verdict)."""
    details = score.get("details") or {}
    return "reasoning" in details or "verdict" in details
