"""The two jobs of building an index, as plain functions: the records of a byte range of
results.jsonl as Arrow tables (`index_lines`; a large file is read a range at a time, so
its rows are never all held at once), and the cases' Parquet file (`write_cases_file`).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from queryeval._gc import bulk_allocation
from queryeval.log import RecordColumns, cut_text
from queryeval.viewer._gold import Unusual, case_fields, gold_text

PART_ROWS = 50_000  # rows per Parquet part: bounds the memory of indexing a large run
BATCH_ROWS = 10_000  # rows held as Python lists at once while a part is built (its memory)


@dataclass
class Lines:
    """The records of a run of lines: their Arrow tables (`row` set to 0: the caller
    numbers them), the lines read (complete ones), the bad ones (line number from 1 in the
    range, why) and where the last complete line ends."""

    tables: list[Any] = field(default_factory=list)
    lines: int = 0
    bad: list[tuple[int, str]] = field(default_factory=list)
    end: int = 0
    torn: bool = False  # the range ends in a partial line (a kill, or a write now)


def parse_record(line: bytes) -> tuple[dict[str, Any] | None, str]:
    """A line's record, or None and why it is not one."""
    try:
        rec = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return None, f"not JSON ({exc})"
    if not isinstance(rec, dict) or "system" not in rec or "case_id" not in rec:
        return None, "not a record (no 'system' and 'case_id')"
    return rec, ""


def index_lines(path: Path, start: int, end: int) -> Lines:
    """The index's rows of the complete lines of `path` in bytes [start, end).

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "results.jsonl"
    >>> _ = p.write_bytes(b'{"system": "s", "case_id": "c"}\\n\\nnot json\\n{"sys')
    >>> got = index_lines(p, 0, p.stat().st_size)
    >>> got.lines, [t.num_rows for t in got.tables], got.bad[0][0], got.torn
    (3, [1], 3, True)
    """
    out = Lines(end=start)
    columns = RecordColumns()
    place: dict[str, list[int]] = {"row": [], "offset": [], "length": []}

    def batch() -> None:
        nonlocal columns, place
        out.tables.append(columns.table(place))
        columns, place = RecordColumns(), {"row": [], "offset": [], "length": []}

    offset = start
    # a batch's rows are thousands of acyclic lists: the cyclic collector is paused
    with bulk_allocation(), path.open("rb") as f:
        f.seek(start)
        while offset < end:
            line = f.readline(end - offset)
            if not line:
                break
            if not line.endswith(b"\n"):
                out.torn = True
                break
            out.lines += 1
            here, offset = offset, offset + len(line)
            if not line.strip():
                continue
            rec, why = parse_record(line)
            if rec is None:
                out.bad.append((out.lines, why))
                continue
            columns.add(rec)
            place["row"].append(0)
            place["offset"].append(here)
            place["length"].append(len(line))
            if len(columns) >= BATCH_ROWS:
                batch()
    if len(columns):
        batch()
    out.end = offset
    return out


def ranges(path: Path, start: int, end: int, size: int) -> list[tuple[int, int]]:
    """[start, end) of `path` cut into ranges of about `size` bytes at line ends."""
    cuts = [start]
    with path.open("rb") as f:
        while cuts[-1] + size < end:
            f.seek(cuts[-1] + size)
            f.readline()
            if f.tell() >= end:
                break
            cuts.append(f.tell())
    return list(zip(cuts, [*cuts[1:], end], strict=True))


def write_cases_file(path: Path, patterns: list[str], base: Path, checked: bool) -> str | None:
    """The cases' Parquet file at `path`, written in batches (a JSONL file is read line by
    line, so 200,000 cases never stand in memory as models at once); None when written,
    else why the case files cannot be read. `checked`: the run has validated them, so a
    JSONL case is read from its JSON (`case_fields`) unless its shape is one for the model.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from queryeval._inputs import jsonl_lines
    from queryeval.cases import case_files, load_cases_file, parse_case_line
    from queryeval.errors import InputError

    schema = pa.schema(
        [("case_id", pa.string()), ("question", pa.string()), ("gold", pa.string()),
         ("tags", pa.list_(pa.string())), ("case", pa.string())]
    )  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    columns: list[list[Any]] = [[], [], [], [], []]
    ids, questions, golds, tags, texts = columns
    seen: set[str] = set()

    def add(case_id: str, question: str, gold: str, case_tags: list[str], text: str) -> None:
        if case_id in seen:
            raise InputError(f"duplicate case id {case_id!r}")
        seen.add(case_id)
        ids.append(case_id)
        questions.append(cut_text(question))
        golds.append(cut_text(gold))
        tags.append(case_tags)
        texts.append(text)

    def line(raw: bytes, file: Path, lineno: int) -> None:
        """One JSONL line, kept as it is (the case validated from it is this case: no
        second serialisation of every case)."""
        if checked:
            with contextlib.suppress(orjson.JSONDecodeError, Unusual):
                add(*case_fields(orjson.loads(raw)), raw.decode())
                return
        case = parse_case_line(raw, file, lineno)
        add(case.id, case.question, gold_text(case), list(case.tags), raw.decode())

    try:
        with bulk_allocation(), pq.ParquetWriter(temporary, schema, compression="zstd") as writer:

            def flush() -> None:
                if columns[0]:
                    writer.write_table(pa.table(dict(zip(schema.names, columns, strict=True)),
                                                schema=schema))  # fmt: skip
                    for column in columns:
                        column.clear()

            for file in case_files(patterns, base):
                if file.suffix.lower() in (".jsonl", ".ndjson"):
                    for lineno, raw in jsonl_lines(file):
                        line(raw, file, lineno)
                        if len(columns[0]) >= PART_ROWS:
                            flush()
                else:
                    for case in load_cases_file(file):
                        add(case.id, case.question, gold_text(case), list(case.tags),
                            case.model_dump_json(exclude_defaults=True))  # fmt: skip
                flush()
    except InputError as exc:
        temporary.unlink(missing_ok=True)
        return f"the case files cannot be read ({exc}): questions and golds are not shown"
    os.replace(temporary, path)  # another process may be writing the same file
    return None
