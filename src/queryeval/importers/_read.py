"""Reading a benchmark's files with errors that name the file and the place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from queryeval.errors import InputError


def read_json(path: Path) -> Any:
    """A JSON document; malformed JSON is an InputError with its line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read: {error}", path=path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"not valid JSON: {error.msg} (column {error.colno})", path=path, line=error.lineno
        ) from None


def read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """(line number, record) for each non-empty line of a JSON Lines file."""
    records = []
    for lineno, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        try:
            records.append((lineno, json.loads(line)))
        except json.JSONDecodeError as error:
            raise InputError(
                f"not valid JSON: {error.msg} (column {error.colno})", path=path, line=lineno
            ) from None
    return records


def read_lines(path: Path) -> list[str]:
    """The file's lines without their line ends."""
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read: {error}", path=path) from None


def expect_list_of_objects(data: Any, path: Path, what: str) -> list[dict[str, Any]]:
    """``data`` as a list of objects, else an InputError naming the first bad item."""
    if not isinstance(data, list):
        raise InputError(f"expected a JSON list of {what}", path=path)
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise InputError(f"expected an object ({what})", path=path, where=f"item {i}")
    return data


def field(item: dict[str, Any], key: str, kind: type, path: Path, where: str) -> Any:
    """``item[key]`` checked to be a ``kind``, else an InputError naming file and place."""
    value = item.get(key)
    if not isinstance(value, kind) or (isinstance(value, str) and not value.strip()):
        expected = "a non-empty string" if kind is str else f"a {kind.__name__}"
        raise InputError(f"'{key}': expected {expected}, got {value!r:.60}", path=path, where=where)
    return value


def sqlite_files(folder: Path) -> list[Path]:
    """The files of a database folder whose name contains ``.sqlite``, the main one
    (``<folder>/<folder>.sqlite``) first (the Spider test-suite's notion of variants)."""
    main = folder / f"{folder.name}.sqlite"
    others = sorted(p for p in folder.iterdir() if ".sqlite" in p.name and p != main)
    return [main, *others] if main.exists() else others


def database_root(folder: Path) -> bool:
    """Whether ``folder`` holds ``<db>/<db>.sqlite`` sub-folders."""
    try:
        return any(
            (sub / f"{sub.name}.sqlite").is_file() for sub in folder.iterdir() if sub.is_dir()
        )
    except OSError:
        return False
