"""A system given as saved outputs: a JSONL file of `{"case_id": ..., <output>}` records."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from queryeval._inputs import invalid_json_line, jsonl_lines
from queryeval.cases import Attempt, Output
from queryeval.errors import InputError
from queryeval.systems._record_keys import check_record, needs_checking

_OUTPUT_KEYS = set(Output.model_fields)
# keys that mark the long form of a record (`output`, `attempts`, `error`), not one attempt
_OUTPUT_KEYS_SEEN = frozenset({"output", "attempts", "error"})
_RECORD_KEYS = ("case_id", "system", "attempt")  # about the record, not the output

# The field a plain string fills: the query text for query tasks, the answer for RAG.
TextFields = tuple[str, ...]
ANSWER: TextFields = ("answer",)


def text_fields_for(reads: set[str]) -> TextFields:
    """Which field a plain string fills, from what the suite's scorers read: the query for
    query tasks (SQL, KQL, Cypher, Weaviate), the answer for RAG, both when a suite scores
    both (and the answer when no scorer says).

    >>> text_fields_for({"query"}), text_fields_for({"answer", "output"})
    (('query',), ('answer',))
    """
    query = bool(reads & {"query", "weaviate", "attempts"})
    answer = "answer" in reads
    if query and answer:
        return ("query", "answer")
    return ("query",) if query else ANSWER


def parse_output(data: Any, text_fields: TextFields = ANSWER) -> Output:
    """An Output from a record: `{"output": {...}}`, `{"attempts": [...]}`, or the fields of
    one Attempt at top level (`{"query": ...}`, `{"answer": ...}`, ...). A plain string is the
    text of the suite's task: it fills `text_fields` (("query",) for query suites,
    ("answer",) for RAG)."""
    if isinstance(data, str):
        return Output(attempts=[Attempt.model_validate(dict.fromkeys(text_fields, data))])
    if not isinstance(data, dict):
        raise ValueError(f"expected an object or a string, got {type(data).__name__}")
    if "output" in data:
        inner = data["output"]
        if isinstance(inner, dict):
            return Output.model_validate(inner)
        return parse_output(inner, text_fields)
    if "attempts" in data or "error" in data:
        return Output.model_validate({k: v for k, v in data.items() if k in _OUTPUT_KEYS})
    fields = {k: v for k, v in data.items() if k not in _RECORD_KEYS}
    return Output(attempts=[Attempt.model_validate(fields)])


def unusable(exc: Exception) -> Output:
    """The Output of a system whose output cannot be read as one (the wrong type, a list
    where a query belongs ...): the system's failure, never an input error."""
    if isinstance(exc, ValidationError):
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"] if isinstance(p, str | int))
        why = f"{where}: {first['msg']}" if where else str(first["msg"])
    else:
        why = str(exc)
    return Output(error=f"unusable output: {why}"[:500], failure="invalid_output")


@dataclass(frozen=True)
class PredictionLine:
    """One record of a predictions file: its case, its output, and the attempt number it
    gives (None when it gives none)."""

    case_id: str
    output: Output
    attempt: int | None = None


def _fast_attempt(raw: bytes) -> PredictionLine | None:
    """The common shorthand record (one attempt's fields and a case_id) validated straight from
    JSON bytes in pydantic's core, wrapped as the one attempt of an Output (one call builds
    both); None when the record needs the general path."""
    try:
        output = Output.model_validate_json(b'{"attempts":[' + raw + b"]}")
    except ValidationError:
        return None  # the general path reports the problem with its place
    if len(output.attempts) != 1:  # `{...}, {...}`: two values on a line, not one record
        return None
    extra = output.attempts[0].__pydantic_extra__
    if extra is None or "case_id" not in extra or _OUTPUT_KEYS_SEEN.intersection(extra):
        return None  # no case id, or a record in the long form
    if "attempt" in extra or needs_checking(extra):
        return None  # an attempt number, or keys the general path checks (and refuses)
    case_id = extra.pop("case_id")
    extra.pop("system", None)
    if not isinstance(case_id, str | int) or isinstance(case_id, bool):
        return None
    return PredictionLine(str(case_id), output)


def read_prediction_line(
    raw: bytes, path: Path, lineno: int, text_fields: TextFields = ANSWER
) -> PredictionLine:
    """One JSONL record. A line that is not a JSON object with a `case_id` is bad input
    (InputError with its place); an output that cannot be read is the system's failure."""
    fast = _fast_attempt(raw)
    if fast is not None:
        return fast
    data = _record(raw, path, lineno)
    try:
        output = parse_output(data, text_fields)
    except (ValidationError, ValueError) as exc:
        output = unusable(exc)
    return PredictionLine(str(data["case_id"]), output, data.get("attempt"))


def prediction_key(raw: bytes, path: Path, lineno: int) -> tuple[str, int | None]:
    """(case id, attempt number) of a JSONL record, checked as `read_prediction_line` checks
    it (its output is not read: an unreadable output is the system's failure, not bad input).

    >>> prediction_key(b'{"case_id": 7, "query": "SELECT 1"}', Path("p.jsonl"), 1)
    ('7', None)
    """
    data = _record(raw, path, lineno)
    return str(data["case_id"]), data.get("attempt")


def _record(raw: bytes, path: Path, lineno: int) -> dict[str, Any]:
    """The record as JSON: an object with a `case_id`, and an integer `attempt` if any."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise invalid_json_line(str(exc), path, lineno) from None
    if not isinstance(data, dict) or "case_id" not in data:
        named = isinstance(data, dict) and any(k in data for k in ("id", "instance_id"))
        raise InputError(
            ("the record names its case with 'id'; " if named else "")
            + 'expected an object with a \'case_id\' ({"case_id": ..., "query": ...})',
            path=path,
            line=lineno,
            where="case_id" if named else None,
        )
    data = check_record(data, path, lineno)
    attempt = data.get("attempt")
    if attempt is not None and (not isinstance(attempt, int) or isinstance(attempt, bool)):
        raise InputError(
            f"'attempt' must be an integer (the attempt's number), not {attempt!r}",
            path=path,
            line=lineno,
            where="attempt",
        )
    return data


def parse_prediction_line(raw: bytes, path: Path, lineno: int) -> tuple[str, Output]:
    """(case id, output) from one JSONL record (see `read_prediction_line`)."""
    line = read_prediction_line(raw, path, lineno)
    return line.case_id, line.output


class CaseOutputs:
    """The records of one case, put together: one record, or several with distinct attempt
    numbers (in that order). Two records for one case and attempt are an InputError naming
    both lines (the last would otherwise silently win)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines: dict[str, list[tuple[int, PredictionLine]]] = {}

    def add(self, lineno: int, line: PredictionLine) -> None:
        """Keep a record, refusing a second one for the same case and attempt."""
        seen = self._lines.setdefault(line.case_id, [])
        earlier = [(other_no, other.attempt) for other_no, other in seen]
        problem = repeated_record(self.path, lineno, line.case_id, line.attempt, earlier)
        if problem is not None:
            raise problem
        seen.append((lineno, line))

    def outputs(self) -> dict[str, Output]:
        """case id -> its Output."""
        return {case_id: join_outputs(lines) for case_id, lines in self._lines.items()}


def unknown_case(path: Path, lineno: int, case_id: str) -> InputError:
    """The error for a record whose case id is no case's."""
    return InputError(
        f"prediction for unknown case id {case_id!r}", path=path, line=lineno, where="case_id"
    )


def empty_predictions(path: Path) -> InputError:
    """The error for a predictions file without a record."""
    return InputError(
        "the predictions file is empty: expected one JSON record per case, e.g. "
        '{"case_id": "q1", "query": "SELECT ..."}',
        path=path,
        line=1,
    )


def repeated_record(
    path: Path,
    lineno: int,
    case_id: str,
    attempt: int | None,
    earlier: list[tuple[int, int | None]],
) -> InputError | None:
    """The error for a record of a case that has `earlier` records ((line, attempt) each)
    with no attempt number or the same one; None when the attempts are distinct.

    >>> repeated_record(Path("p.jsonl"), 2, "q1", None, [(1, None)]).line
    2
    """
    for other_no, other in earlier:
        if other is None or attempt is None or other == attempt:
            what = "" if attempt is None else f" and attempt {attempt}"
            return InputError(
                f"a second prediction for case {case_id!r}{what} (the first is at line "
                f"{other_no}); expected one record per case, or records with distinct "
                "'attempt' numbers",
                path=path,
                line=lineno,
                where="case_id",
            )
    return None


def join_outputs(lines: list[tuple[int, PredictionLine]]) -> Output:
    """One Output from a case's records (several: attempts in attempt-number order)."""
    if len(lines) == 1:
        return lines[0][1].output
    ordered = sorted(lines, key=lambda pair: pair[1].attempt or 0)
    first = ordered[0][1].output.model_copy()
    first.attempts = [a for _, line in ordered for a in line.output.attempts]
    errors = [line.output for _, line in ordered if line.output.error]
    if errors:
        first.error, first.failure = errors[-1].error, errors[-1].failure
    return first


class PredictionsFile:
    """Outputs read from a JSONL file, by case id. An empty file, an unknown case id, or two
    records for one case and attempt are InputErrors naming the line."""

    def __init__(
        self, path: Path, known_ids: set[str] | None = None, text_fields: TextFields = ANSWER
    ) -> None:
        self.path = path
        self.text_fields = text_fields
        self.outputs: dict[str, Output] = {}
        self._load(known_ids)

    def _load(self, known_ids: set[str] | None) -> None:
        by_case = CaseOutputs(self.path)
        records = 0
        for lineno, raw in jsonl_lines(self.path, "predictions"):
            records += 1
            line = read_prediction_line(raw, self.path, lineno, self.text_fields)
            if known_ids is not None and line.case_id not in known_ids:
                raise unknown_case(self.path, lineno, line.case_id)
            by_case.add(lineno, line)
        if not records:
            raise empty_predictions(self.path)
        self.outputs = by_case.outputs()

    def get(self, case_id: str) -> Output:
        """The saved output, or an Output whose error says none was saved."""
        out = self.outputs.get(case_id)
        if out is None:
            return Output(error="no prediction for this case", failure="missing")
        return out
