"""What every importer shares: reading JSON / JSONL / CSV / Parquet with errors that name the
file and the place, and writing a suite directory (YAML, JSONL) all at once at the end."""

from __future__ import annotations

import csv
import json
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson
import yaml

from queryeval.errors import InputError


@dataclass
class Built:
    """A suite an importer made, before it is written: the cases, databases, predictions per
    system, further suite keys (description, scorers, comparison, reports), further files
    (relative path -> text) and notes for the user."""

    name: str
    cases: list[dict[str, Any]]
    databases: dict[str, dict[str, Any]] = field(default_factory=dict)
    predictions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    suite: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    header: str = ""
    preset: str | None = None

    def write_files(self, out: Path) -> None:
        """Write the further files under `out` (what `queryeval import` leaves to the format:
        it writes the cases, predictions and suite.yaml itself)."""
        for relative, text in self.files.items():
            target = out / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(target)


class Request(Protocol):
    """What `queryeval import FORMAT` passes to a format's `build`: the sources, the output
    folder, `(system, path)` prediction files, `--set key=value` options, a suite name."""

    sources: Sequence[Path]
    out: Path
    predictions: Sequence[tuple[str, Path]]
    options: dict[str, str]
    name: str | None


def check_options(request: Request, known: Sequence[str]) -> None:
    """Refuse an option the format does not have (it could not be honoured)."""
    unknown = sorted(set(request.options) - set(known))
    if unknown:
        expected = ", ".join(known) if known else "none"
        raise InputError(f"unknown option(s) {', '.join(unknown)}; this format takes {expected}")


def add_predictions(built: Built, request: Request, fields: Sequence[str], language: str) -> None:
    """The request's `(system, file)` predictions as systems of `built` (replacing the
    `gold` stand-in), each file read with `read_predictions`."""
    ids = {c["id"] for c in built.cases}
    for system, path in request.predictions:
        built.predictions[system] = read_predictions(path, ids, fields, language)
    if request.predictions:
        built.predictions.pop("gold", None)


def read_predictions(
    path: Path, case_ids: set[str], fields: Sequence[str], language: str
) -> list[dict[str, Any]]:
    """A system's predictions from a JSONL / JSON / CSV / Parquet file of records naming the
    case (`case_id`, `id` or `instance_id`) and holding the query (the first of `fields`)."""
    records: list[dict[str, Any]] = []
    for line, rec in read_rows(path):
        if not isinstance(rec, Mapping):
            raise InputError("expected an object", path=path, line=line)
        raw_id = next((rec[k] for k in ("case_id", "id", "instance_id") if k in rec), None)
        if raw_id is None or str(raw_id) not in case_ids:
            what = "no case_id / id / instance_id" if raw_id is None else f"unknown case {raw_id!r}"
            raise InputError(what, path=path, line=line)
        query = text_field(rec, fields, path, line)
        if query is None:
            records.append({"case_id": str(raw_id), "error": "no prediction"})
        else:
            records.append({"case_id": str(raw_id), "query": query, "language": language})
    return records


@dataclass
class ImportReport:
    """What an import wrote: the suite file, how many cases, the systems, and notes (what was
    assumed or left out)."""

    suite: Path
    cases: int
    systems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_json(path: Path) -> Any:
    """A JSON file (the standard library's reader: NaN is accepted, as the benchmarks' own
    scripts accept it); bad JSON is an InputError with the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", path=path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON ({exc.msg}, column {exc.colno})", path=path, line=exc.lineno
        ) from None


def read_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """(place, record) of a JSONL, JSON (a list, or {"data"|"rows": [...]}), CSV or Parquet
    file of records; the place is the line of a JSONL / CSV file, the record's number
    (from 1) in a JSON list or a Parquet file."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        yield from _jsonl(path)
    elif suffix == ".json":
        data = read_json(path)
        if isinstance(data, Mapping):
            data = next((data[k] for k in ("data", "rows", "examples") if k in data), None)
        if not isinstance(data, list):
            raise InputError('expected a list of records (or {"data": [...]})', path=path)
        yield from enumerate(data, start=1)
    elif suffix == ".csv":
        yield from _csv(path)
    elif suffix == ".parquet":
        yield from _parquet(path)
    else:
        raise InputError("expected a .jsonl, .json, .csv or .parquet file of records", path=path)


def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=path) from None
    with handle:
        for lineno, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                yield lineno, json.loads(raw)
            except ValueError as exc:
                raise InputError(f"invalid JSON ({exc})", path=path, line=lineno) from None


def _csv(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=path) from None
    with handle:
        reader = csv.DictReader(handle)
        try:
            for row in reader:
                yield reader.line_num, row
        except (csv.Error, UnicodeDecodeError) as exc:
            raise InputError(f"invalid CSV ({exc})", path=path, line=reader.line_num) from None


def _parquet(path: Path) -> Iterator[tuple[int, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"cannot read Parquet ({exc})", path=path) from None
    yield from enumerate(table.to_pylist(), start=1)


def text_field(record: Any, names: Sequence[str], path: Path, line: int) -> str | None:
    """The first of `names` holding a non-empty string (None when none is present); a field
    present with something other than text is an InputError."""
    for name in names:
        value = record.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        if not isinstance(value, str):
            raise InputError(
                f"{name} must be text, got {type(value).__name__}", path=path, line=line, where=name
            )
        return value
    return None


def write_built(built: Built, out: Path, overwrite: bool = False) -> ImportReport:
    """Write `built` as a suite directory at `out` (all at once at the end)."""
    with SuiteWriter(out, overwrite) as w:
        for relative, text in built.files.items():
            w.text(relative, text)
        w.jsonl("cases.jsonl", built.cases)
        systems = []
        for name, records in built.predictions.items():
            w.jsonl(f"predictions/{name}.jsonl", records)
            systems.append({"name": name, "predictions": f"predictions/{name}.jsonl"})
        data: dict[str, Any] = {"name": built.name}
        if built.preset:
            data["preset"] = built.preset
        data["cases"] = "cases.jsonl"
        if "description" in built.suite:
            data["description"] = built.suite["description"]
        if built.databases:
            data["databases"] = built.databases
        data["systems"] = systems
        data.update((k, v) for k, v in built.suite.items() if k != "description")
        w.yaml("suite.yaml", data, header=built.header)
    return ImportReport(out / "suite.yaml", len(built.cases), list(built.predictions), built.notes)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(name: str) -> str:
    """A file / system name from free text: `meta-llama/Llama 3` -> `meta-llama-Llama-3`."""
    return _UNSAFE.sub("-", name).strip("-.") or "unnamed"


def unique(name: str, taken: set[str]) -> str:
    """`name`, or `name-2`, `name-3` ... when taken (and records it)."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}-{n}"
    taken.add(candidate)
    return candidate


class SuiteWriter:
    """Files of a suite directory, written into a temporary folder and moved into place at
    the end, so a failed import leaves nothing half written."""

    def __init__(self, out: Path, overwrite: bool = False) -> None:
        if out.exists() and not out.is_dir():
            raise InputError("the output exists and is not a folder", path=out)
        if out.is_dir() and any(out.iterdir()) and not overwrite:
            raise InputError(
                "the output folder is not empty (choose another or overwrite)", path=out
            )
        self.out = out
        out.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))

    def path(self, relative: str) -> Path:
        """Where `relative` goes (its folders created)."""
        target = self._tmp / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def jsonl(self, relative: str, records: Iterator[Mapping[str, Any]] | list[Any]) -> int:
        """Write records one per line; returns how many."""
        n = 0
        with self.path(relative).open("wb") as handle:
            for record in records:
                handle.write(orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
                n += 1
        return n

    def json(self, relative: str, data: Any) -> None:
        """Write one JSON document (indented)."""
        self.path(relative).write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")

    def yaml(self, relative: str, data: Any, header: str = "") -> None:
        """Write YAML in the given key order, after an optional comment header."""
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
        comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
        self.path(relative).write_text(comment + text, encoding="utf-8")

    def text(self, relative: str, text: str) -> None:
        """Write a text file."""
        self.path(relative).write_text(text, encoding="utf-8")

    def commit(self) -> None:
        """Move everything written into the output folder."""
        self.out.mkdir(parents=True, exist_ok=True)
        for item in self._tmp.iterdir():
            target = self.out / item.name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
            shutil.move(str(item), str(target))
        shutil.rmtree(self._tmp, ignore_errors=True)

    def abort(self) -> None:
        """Drop everything written."""
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> SuiteWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()
