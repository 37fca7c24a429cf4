"""Byte ranges of JSONL files, whole lines each: how a large run's inputs are cut into
shards that workers read on their own, so no process holds a whole file. A range's lines
are checked as every reader checks them (`queryeval._inputs`); its line numbers count from
its first line, and the driver, which knows the lines before each range, names the file's
line (`placed`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from queryeval._inputs import BOM, decode_utf8, line_too_long, max_line_bytes
from queryeval.cases import Case, parse_case_line
from queryeval.errors import InputError


@dataclass(frozen=True, slots=True)
class FileRange:
    """Bytes `start`..`end` of a file, whole lines."""

    path: Path
    start: int
    end: int

    def lines(self) -> tuple[int, list[bytes]]:
        """The byte offset of the first line (past a byte-order mark) and the lines (blank
        ones too), checked: InputError on a line that is not UTF-8 or too long."""
        with self.path.open("rb") as f:
            f.seek(self.start)
            data = f.read(self.end - self.start)
        skip = len(BOM) if self.start == 0 and data.startswith(BOM) else 0
        if not data.isascii():
            decode_utf8(data[skip:], self.path)
        lines = data[skip:].split(b"\n")  # as `readline` reads them: a lone \r ends no line
        if lines[-1] == b"":
            lines.pop()
        cap = max_line_bytes()
        if lines and max(map(len, lines)) > cap:
            line = next(i for i, text in enumerate(lines, start=1) if len(text) > cap)
            raise line_too_long(self.path, line, cap)
        return self.start + skip, lines


def parse_cases(lines: list[bytes], path: Path, before: int = 0) -> Iterator[tuple[int, Case]]:
    """(line number in the range, case) of each line that is not blank; InputError at the
    first bad one (its line counted from `before`)."""
    for number, raw in enumerate(lines, start=1):
        if raw.strip():
            yield number, parse_case_line(raw, path, before + number)


def placed(error: InputError, lines_before: int) -> InputError:
    """An error found in a range, its line counted in the whole file."""
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
    total, start, cap = os.path.getsize(path), 0, max_line_bytes()
    ranges: list[FileRange] = []
    with path.open("rb") as f:
        while start < total:
            # after the first newline past start + size, or a line longer than the cap cut
            # past the cap (its range reports it): no range exceeds size + cap
            f.seek(start + size - 1)
            end = total if total - start <= size else f.tell() + len(f.readline(cap + 1))
            ranges.append(FileRange(path, start, min(end, total)))
            start = min(end, total)
    return ranges
