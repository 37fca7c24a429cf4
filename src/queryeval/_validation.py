"""Turn pydantic validation errors into one-line InputErrors that name file, line and field;
and the checks configurations share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from queryeval._yaml import Loc, Located
from queryeval.errors import InputError


def duplicates(names: Iterable[str]) -> list[str]:
    """The names that occur more than once, sorted."""
    return sorted(name for name, n in Counter(names).items() if n > 1)


def where(loc: Loc) -> str:
    """A location as the messages write it.

    >>> where(("systems", 0, "predictions"))
    'systems[0].predictions'
    """
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def first_problem(
    exc: ValidationError, unknown: str = "", *, unknown_first: bool = False
) -> tuple[Loc, str, str]:
    """(location, pydantic's error type, message) of the first problem of `exc`; `unknown`:
    the message of an unknown key, with `unknown_first` put before the field it left
    missing (the misspelt name explains both). The one reading of a ValidationError.

    >>> from pydantic import BaseModel, ConfigDict
    >>> class M(BaseModel):
    ...     model_config = ConfigDict(extra="forbid")
    ...     size: int
    >>> try:
    ...     M.model_validate({"sise": 1})
    ... except ValidationError as exc:
    ...     first_problem(exc, "unknown option", unknown_first=True)
    (('sise',), 'extra_forbidden', 'unknown option')
    """
    errors = exc.errors(include_url=False)
    first = (
        min(errors, key=lambda e: e["type"] != "extra_forbidden") if unknown_first else errors[0]
    )
    kind, message = first["type"], str(first["msg"])
    if kind == "extra_forbidden" and unknown:
        message = unknown
    return tuple(p for p in first["loc"] if isinstance(p, str | int)), kind, message


def input_error(
    exc: ValidationError,
    *,
    path: Path,
    located: Located | None = None,
    base: Loc = (),
    line: int | None = None,
) -> InputError:
    """The first validation problem as an InputError (with a count of the others)."""
    loc, kind, message = first_problem(exc, "unknown field (check its spelling)")
    if located is not None:
        loc = _drop_type_tags(loc, _walk(located.data, base))
        line = located.line_of((*base, *loc))
    if kind == "missing":
        message = "missing required field"
    elif kind != "extra_forbidden":
        message = message[0].lower() + message[1:] if message else kind
    if (n := len(exc.errors()) - 1) > 0:
        message += f" (and {n} more problem{'s' if n > 1 else ''})"
    return InputError(message, path=path, line=line, where=where(loc) or None)


def _walk(data: Any, loc: Loc) -> Any:
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _drop_type_tags(loc: Loc, data: Any) -> Loc:
    """Pydantic puts union members' names in error locations (`target.Target.query`); keep
    only the parts that exist in the input, plus a final missing field name."""
    out: list[str | int] = []
    for i, part in enumerate(loc):
        present = (isinstance(data, dict) and part in data) or (
            isinstance(data, list) and isinstance(part, int) and part < len(data)
        )
        if present:
            out.append(part)
            data = data[part]
        elif i == len(loc) - 1 or not isinstance(data, dict | list):
            out.append(part)
    return tuple(out)
