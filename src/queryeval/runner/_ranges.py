"""Byte ranges of JSONL files: how a large run's inputs are cut into shards that workers
read on their own, so no process ever holds a whole file.

A range starts at the beginning of a line and ends after a newline (or at the end of the
file). Its lines are checked as every reader checks them (`queryeval._inputs`): UTF-8, the
byte-order mark of the file's first line dropped, no line longer than `max_line_bytes()`.
A worker knows only its range, so the line numbers it reports are counted from the range's
first line, and the driver, which knows how many lines come before each range, names the
file's line (`placed`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from queryeval._inputs import BOM, decode_utf8, line_too_long, max_line_bytes
from queryeval.errors import InputError


@dataclass(frozen=True, slots=True)
class FileRange:
    """Bytes `start`..`end` of a file, whole lines."""

    path: Path
    start: int
    end: int

    def read(self) -> bytes:
        """The range's bytes."""
        with self.path.open("rb") as f:
            f.seek(self.start)
            return f.read(self.end - self.start)


def placed(error: InputError, lines_before: int) -> InputError:
    """An error found in a range (its line counted from the range's first line), with the
    line number in the whole file."""
    line = None if error.line is None else error.line + lines_before
    return InputError(error.message, path=error.path, line=line, where=error.where)


def split_file(path: Path, size: int) -> list[FileRange]:
    """Cut a file into ranges of about `size` bytes, at line ends (an empty file: none).

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "a.jsonl"
    >>> _ = p.write_bytes(b"{}\\n" * 10)
    >>> [(r.start, r.end) for r in split_file(p, 12)]
    [(0, 12), (12, 24), (24, 30)]
    """
    total = os.path.getsize(path)
    cap = max_line_bytes()
    ranges: list[FileRange] = []
    start = 0
    with path.open("rb") as f:
        while start < total:
            end = total if total - start <= size else _line_end(f, start + size - 1, cap)
            ranges.append(FileRange(path, start, min(end, total)))
            start = min(end, total)
    return ranges


def _line_end(f: BinaryIO, at: int, cap: int) -> int:
    """The offset after the first newline at or past `at`; a line longer than the cap is
    cut past the cap (its range then reports it) so no range is larger than size + cap."""
    f.seek(at)
    read = 0
    while read <= cap:
        chunk = f.read(min(1 << 20, cap + 1 - read))
        if not chunk:
            return at + read
        newline = chunk.find(b"\n")
        if newline >= 0:
            return at + read + newline + 1
        read += len(chunk)
    return at + read


def range_lines(data: bytes, r: FileRange) -> list[bytes]:
    """The range's lines (blank ones included, so an index is a line number less one),
    checked; InputError (its line counted in the range) on a line that is not UTF-8 or
    too long."""
    if r.start == 0 and data.startswith(BOM):
        data = data[len(BOM) :]
    if not data.isascii():
        decode_utf8(data, r.path)
    lines = data.split(b"\n")  # as `readline` reads them: a lone \r ends no line
    if lines[-1] == b"":
        lines.pop()
    cap = max_line_bytes()
    if lines and max(map(len, lines)) > cap:
        line = next(i for i, text in enumerate(lines, start=1) if len(text) > cap)
        raise line_too_long(r.path, line, cap)
    return lines


def numbered(lines: list[bytes]) -> Iterator[tuple[int, bytes]]:
    """(line number in the range, line) of the lines that are not blank."""
    for number, raw in enumerate(lines, start=1):
        if raw.strip():
            yield number, raw
