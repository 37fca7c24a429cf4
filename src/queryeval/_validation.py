"""Turn pydantic validation errors into one-line InputErrors that name file, line and field;
and the checks configurations share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from queryeval._yaml import Loc, Located
from queryeval.errors import InputError


def duplicates(names: Iterable[str]) -> list[str]:
    """The names that occur more than once, sorted."""
    return sorted(name for name, n in Counter(names).items() if n > 1)


def _where(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def input_error(
    exc: ValidationError,
    *,
    path: Path,
    located: Located | None = None,
    base: Loc = (),
    line: int | None = None,
) -> InputError:
    """The first validation problem as an InputError (with a count of the others)."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc: Loc = tuple(p for p in first["loc"] if isinstance(p, str | int))
    if located is not None:
        loc = _drop_type_tags(loc, _walk(located.data, base))
    if located is not None:
        line = located.line_of((*base, *loc))
    message = _describe(first)
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return InputError(message, path=path, line=line, where=_where(loc) or None)


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


def _describe(error: Any) -> str:
    kind = error["type"]
    if kind == "missing":
        return "missing required field"
    if kind == "extra_forbidden":
        return "unknown field (check its spelling)"
    msg = str(error["msg"])
    return msg[0].lower() + msg[1:] if msg else kind
