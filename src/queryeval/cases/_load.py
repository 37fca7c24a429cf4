"""Load cases from YAML (one case or a list per file) and JSONL, from globs."""

from __future__ import annotations

import glob
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from queryeval._inputs import invalid_json_line, jsonl_lines
from queryeval._validation import input_error
from queryeval._yaml import load_yaml_documents
from queryeval.cases._model import Case
from queryeval.errors import InputError

_YAML = {".yaml", ".yml"}
_JSONL = {".jsonl", ".ndjson"}


def case_files(patterns: str | Iterable[str], base: Path) -> list[Path]:
    """Files matching the glob patterns (relative to `base`), sorted, without repeats."""
    if isinstance(patterns, str):
        patterns = [patterns]
    files: list[Path] = []
    seen: set[Path] = set()
    for pattern in patterns:
        full = pattern if Path(pattern).is_absolute() else str(base / pattern)
        matches = sorted(Path(m) for m in glob.glob(full, recursive=True))
        if not matches and not glob.has_magic(pattern):
            raise InputError("file not found", path=full)
        for m in matches:
            if m.is_file() and m.resolve() not in seen:
                seen.add(m.resolve())
                files.append(m)
    return files


def load_cases_file(path: Path) -> list[Case]:
    """Every case in one YAML or JSONL file."""
    return [case for case, _ in _load_file(path)]


def _load_file(path: Path) -> list[tuple[Case, int | None]]:
    """(case, line where it starts) for every case in a file."""
    suffix = path.suffix.lower()
    if suffix in _JSONL:
        return _load_jsonl(path)
    if suffix in _YAML:
        return _load_yaml(path)
    raise InputError("expected a .yaml, .yml or .jsonl file of cases", path=path)


def _load_yaml(path: Path) -> list[tuple[Case, int | None]]:
    cases: list[tuple[Case, int | None]] = []
    for doc in load_yaml_documents(path):
        data = doc.data
        if data is None:
            continue
        base: tuple[str | int, ...] | None
        if isinstance(data, dict) and "cases" in data and "conversation" not in data:
            items, base = data["cases"], ("cases",)
        elif isinstance(data, list):
            items, base = data, ()
        else:
            items, base = [data], None
        if not isinstance(items, list):
            raise InputError("expected a list of cases", path=path, line=doc.line_of(("cases",)))
        for i, item in enumerate(items):
            loc = (*base, i) if base is not None else ()
            if not isinstance(item, dict):
                raise InputError(
                    "expected a case (a mapping with id and conversation)",
                    path=path,
                    line=doc.line_of(loc),
                )
            try:
                cases.append((Case.model_validate(item), doc.line_of(loc)))
            except ValidationError as exc:
                raise input_error(exc, path=path, located=doc, base=loc) from None
    return cases


def _load_jsonl(path: Path) -> list[tuple[Case, int | None]]:
    return [(parse_case_line(raw, path, lineno), lineno) for lineno, raw in jsonl_lines(path)]


def duplicate_case(case_id: str, first: str, path: Path, line: int | None) -> InputError:
    """The error for a second case with an id (`first`: where the first is, FILE:LINE).

    >>> duplicate_case("q1", "a.jsonl:3", Path("b.jsonl"), 7).render()
    "b.jsonl:7: id: duplicate case id 'q1' (first defined at a.jsonl:3)"
    """
    return InputError(
        f"duplicate case id {case_id!r} (first defined at {first})",
        path=path,
        line=line,
        where="id",
    )


def parse_case_line(raw: bytes, path: Path, lineno: int) -> Case:
    """One JSONL line of a cases file as a Case; InputError naming the line otherwise.

    >>> line = b'{"id": "q1", "conversation": [{"role": "user", "content": "Hi"}]}'
    >>> parse_case_line(line, Path("cases.jsonl"), 1).id
    'q1'
    """
    try:
        return Case.model_validate_json(raw)
    except ValidationError as exc:
        invalid = [e for e in exc.errors() if e["type"] == "json_invalid"]
        if invalid:
            why = str(invalid[0].get("ctx", {}).get("error", "")).strip()
            raise invalid_json_line(why, path, lineno) from None
        raise input_error(exc, path=path, line=lineno) from None


def load_cases(
    patterns: str | Iterable[str],
    base: Path = Path("."),
    places: dict[str, tuple[Path, int | None]] | None = None,
) -> list[Case]:
    """All cases from the files matching the patterns; duplicate ids are an InputError.
    `places`, when given, receives each case's file and line (for later errors)."""
    cases: list[Case] = []
    where: dict[str, str] = {}
    for path in case_files(patterns, base):
        for case, line in _load_file(path):
            if case.id in where:
                raise duplicate_case(case.id, where[case.id], path, line)
            where[case.id] = f"{path}:{line}" if line else str(path)
            if places is not None:
                places[case.id] = (path, line)
            cases.append(case)
    return cases
