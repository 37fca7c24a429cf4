"""Helpers of the formats whose files are tables of records (NL2KQL, Text2Cypher) or that
generate further files (Gorilla's schemas, NL2KQL's fixtures): records read from JSONL / JSON
/ CSV / Parquet with their places, a suite with files of its own, predictions by case id."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.importers._read import read_json, read_jsonl
from queryeval.importers._suite import ImportedSuite, ImportRequest, check_out, write_suite


@dataclass
class SuiteWithFiles(ImportedSuite):
    """An `ImportedSuite` with further files of its own (relative path -> text: schemas,
    fixture folders, published figures) and a comment for the top of suite.yaml."""

    files: dict[str, str] = field(default_factory=dict)
    header: str = ""

    def write_files(self, out: Path) -> None:
        """Write the further files under `out` (`write_suite` writes the rest)."""
        for relative, text in self.files.items():
            target = out / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(target)


def import_with(
    build: Any,
    sources: Sequence[str | Path],
    out: str | Path,
    options: dict[str, str],
    overwrite: bool,
) -> ImportedSuite:
    """What `queryeval import` does, for a format's Python function: refuse an existing suite
    (unless `overwrite`), build, write."""
    out = Path(out)
    check_out(out, overwrite=overwrite)
    request = ImportRequest(sources=[Path(s) for s in sources], out=out, options=options)
    suite: ImportedSuite = build(request)
    write_suite(suite, out, overwrite=overwrite)
    return suite


def read_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """(place, record) of a JSONL, JSON (a list, or {"data"|"rows": [...]}), CSV or Parquet
    file of records; the place is the line of a JSONL / CSV file, the record's number
    (from 1) in a JSON list or a Parquet file."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        yield from read_jsonl(path)
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


def add_predictions(
    suite: ImportedSuite, request: ImportRequest, fields: Sequence[str], language: str
) -> None:
    """The request's `(system, file)` predictions as systems of `suite` (replacing the
    `gold` stand-in), each file read with `read_predictions`."""
    ids = {c["id"] for c in suite.cases}
    for system, path in request.predictions:
        suite.predictions[system] = read_predictions(path, ids, fields, language)
    if request.predictions:
        suite.predictions.pop("gold", None)


def read_predictions(
    path: Path, case_ids: set[str], fields: Sequence[str], language: str
) -> list[dict[str, Any]]:
    """A system's predictions from a JSONL / JSON / CSV / Parquet file of records naming the
    case (`case_id`, `id` or `instance_id`) and holding the query (the first of `fields`;
    none: a failed prediction). A record without a query field but with a key close to one
    (`"qurey"`), or a file none of whose records has one, is an InputError: every
    prediction would otherwise be a silent failure."""
    records: list[dict[str, Any]] = []
    present = False  # some record has a query field (empty or not)
    for line, rec in read_rows(path):
        if not isinstance(rec, Mapping):
            raise InputError("expected an object", path=path, line=line)
        raw_id = next((rec[k] for k in ("case_id", "id", "instance_id") if k in rec), None)
        if raw_id is None or str(raw_id) not in case_ids:
            what = "no case_id / id / instance_id" if raw_id is None else f"unknown case {raw_id!r}"
            raise InputError(what, path=path, line=line)
        query = text_field(rec, fields, path, line)
        if any(name in rec for name in fields):
            present = True
        else:
            _near_miss(rec, fields, path, line)
        if query is None:
            records.append({"case_id": str(raw_id), "error": "no prediction"})
        else:
            records.append({"case_id": str(raw_id), "query": query, "language": language})
    if records and not present:
        raise InputError(
            f"none of its records has a query: expected a field {' or '.join(fields)}",
            path=path,
        )
    return records


def _near_miss(rec: Mapping[str, Any], fields: Sequence[str], path: Path, line: int) -> None:
    """InputError when a key of `rec` is a misspelling of one of `fields`."""
    import difflib

    for key in rec:
        close = difflib.get_close_matches(str(key), list(fields), n=1, cutoff=0.8)
        if close:
            raise InputError(
                f"no {' or '.join(fields)} field; did you mean {close[0]!r} (not {key!r})?",
                path=path,
                line=line,
                where=str(key),
            )


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
