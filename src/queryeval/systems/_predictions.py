"""A system given as saved outputs: a JSONL file of `{"case_id": ..., <output>}` records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from queryeval._validation import input_error
from queryeval.cases import Attempt, Output
from queryeval.errors import InputError

_OUTPUT_KEYS = set(Output.model_fields)
# keys that mark the long form of a record (`output`, `attempts`, `error`), not one attempt
_OUTPUT_KEYS_SEEN = frozenset({"output", "attempts", "error"})


def parse_output(data: Any) -> Output:
    """An Output from a record: `{"output": {...}}`, `{"attempts": [...]}`, or the fields of
    one Attempt at top level (`{"query": ...}`, `{"answer": ...}`, ...). A bare string is an
    answer."""
    if isinstance(data, str):
        return Output(attempts=[Attempt(answer=data)])
    if not isinstance(data, dict):
        raise ValueError("expected an object")
    if "output" in data:
        inner = data["output"]
        return parse_output(inner) if not isinstance(inner, dict) else Output.model_validate(inner)
    if "attempts" in data or "error" in data:
        return Output.model_validate({k: v for k, v in data.items() if k in _OUTPUT_KEYS})
    fields = {k: v for k, v in data.items() if k not in ("case_id", "system")}
    return Output(attempts=[Attempt.model_validate(fields)])


def _fast_attempt(raw: bytes) -> tuple[str, Output] | None:
    """The common shorthand record (one attempt's fields and a case_id) validated straight from
    JSON bytes in pydantic's core, wrapped as the one attempt of an Output (one call builds
    both); None when the record needs the general path."""
    try:
        output = Output.model_validate_json(b'{"attempts":[' + raw + b"]}")
    except ValidationError:
        return None  # the general path reports the problem with its place
    extra = output.attempts[0].__pydantic_extra__
    if extra is None or "case_id" not in extra or _OUTPUT_KEYS_SEEN.intersection(extra):
        return None  # no case id, or a record in the long form
    case_id = extra.pop("case_id")
    extra.pop("system", None)
    if not isinstance(case_id, str | int) or isinstance(case_id, bool):
        return None
    return str(case_id), output


def parse_prediction_line(raw: bytes, path: Path, lineno: int) -> tuple[str, Output]:
    """(case id, output) from one JSONL record; bad input is an InputError with its place."""
    fast = _fast_attempt(raw)
    if fast is not None:
        return fast
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc})", path=path, line=lineno) from None
    if not isinstance(data, dict) or "case_id" not in data:
        raise InputError("expected an object with a 'case_id'", path=path, line=lineno)
    try:
        return str(data["case_id"]), parse_output(data)
    except ValidationError as exc:
        raise input_error(exc, path=path, line=lineno) from None
    except ValueError as exc:
        raise InputError(str(exc), path=path, line=lineno) from None


class PredictionsFile:
    """Outputs read from a JSONL file, by case id. Several records for one case add attempts."""

    def __init__(self, path: Path, known_ids: set[str] | None = None) -> None:
        self.path = path
        self.outputs: dict[str, Output] = {}
        self._load(known_ids)

    def _load(self, known_ids: set[str] | None) -> None:
        try:
            handle = self.path.open("rb")
        except OSError as exc:
            raise InputError(f"cannot read predictions ({exc.strerror})", path=self.path) from exc
        with handle:
            for lineno, raw in enumerate(handle, start=1):
                if not raw.strip():
                    continue
                case_id, output = parse_prediction_line(raw, self.path, lineno)
                if known_ids is not None and case_id not in known_ids:
                    raise InputError(
                        f"prediction for unknown case id {case_id!r}",
                        path=self.path,
                        line=lineno,
                        where="case_id",
                    )
                previous = self.outputs.get(case_id)
                if previous is None:
                    self.outputs[case_id] = output
                else:
                    previous.attempts.extend(output.attempts)
                    previous.error = output.error or previous.error

    def get(self, case_id: str) -> Output:
        """The saved output, or an Output whose error says none was saved."""
        out = self.outputs.get(case_id)
        if out is None:
            return Output(error="no prediction for this case")
        return out
