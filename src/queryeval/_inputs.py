"""Reading input files as bytes safely: UTF-8 with or without a byte-order mark, anything
else refused naming the file and line, and JSONL read line by line under a length cap.

The cap on a JSONL line (`MAX_LINE_BYTES`, 16 MiB) may be changed with the environment
variable `QUERYEVAL_MAX_LINE_BYTES` (bytes); a longer line is an InputError, read no further
than the cap, so a file of one endless line cannot exhaust the memory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from queryeval.errors import InputError

BOM = b"\xef\xbb\xbf"
MAX_LINE_BYTES = 16 * 2**20
_LINE_ENV = "QUERYEVAL_MAX_LINE_BYTES"


def max_line_bytes() -> int:
    """The cap on one JSONL line: `QUERYEVAL_MAX_LINE_BYTES` when set, else 16 MiB."""
    value = os.environ.get(_LINE_ENV, "").strip()
    if not value:
        return MAX_LINE_BYTES
    try:
        cap = int(value)
    except ValueError:
        cap = 0
    if cap < 1:
        raise InputError(f"{_LINE_ENV}={value!r}: expected a positive number of bytes")
    return cap


def decode_utf8(data: bytes, path: Path | str | None, first_line: int = 1) -> str:
    """`data` as text: UTF-8, a leading byte-order mark dropped; anything else is an
    InputError naming the line of the first bad byte.

    >>> decode_utf8(BOM + b"id: x", None)
    'id: x'
    """
    if data.startswith(BOM):
        data = data[len(BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data.count(b"\n", 0, exc.start)
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at column {column}); expected a "
            "UTF-8 text file",
            path=path,
            line=line,
        ) from None


def read_text(path: Path) -> str:
    """A whole text file (see `decode_utf8`); an unreadable file is an InputError."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror})", path=path) from exc
    return decode_utf8(data, path)


def line_too_long(path: Path, line: int, cap: int) -> InputError:
    """The error for a JSONL line past the cap, naming the file and the line."""
    return InputError(
        f"line longer than {cap} bytes; expected one JSON record per line (raise the cap "
        f"with {_LINE_ENV})",
        path=path,
        line=line,
    )


def jsonl_lines(path: Path, what: str = "file") -> Iterator[tuple[int, bytes]]:
    """(line number, bytes without the newline) of every non-blank line of a JSONL file: the
    byte-order mark of
    the first line dropped, each line checked to be UTF-8 and no longer than
    `max_line_bytes()`."""
    cap = max_line_bytes()
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read {what} ({exc.strerror})", path=path) from exc
    with handle:
        lineno = 0
        while raw := handle.readline(cap + 1):
            lineno += 1
            if len(raw) > cap and not raw.endswith(b"\n"):
                raise line_too_long(path, lineno, cap)
            if lineno == 1 and raw.startswith(BOM):
                raw = raw[len(BOM) :]
            if not raw.strip():
                continue
            if not raw.isascii():
                decode_utf8(raw, path, lineno)  # raises naming the line
            yield lineno, raw.removesuffix(b"\n")  # a parser's "column" is then the line's


_AT = re.compile(r"[:,]?\s*(?:at )?line (\d+) column (\d+)(?: \(char \d+\))?\s*$")


def invalid_json_line(why: str, path: Path | str | None, line: int) -> InputError:
    """The error for one JSONL line that is not JSON: the parser's message (orjson's or
    pydantic's) without its inner `line 1 column N` (a JSONL line is the parser's whole
    text), the column kept as `at column N`.

    >>> invalid_json_line("unexpected character: line 1 column 27 (char 26)", "p.jsonl", 2).message
    'invalid JSON at column 27: unexpected character'
    """
    found = _AT.search(why)
    what = (why[: found.start()] if found else why).strip().removeprefix("Invalid JSON: ")
    where = f" at column {found.group(2)}" if found and found.group(1) == "1" else ""
    if found and found.group(1) != "1":  # a multi-line text (not JSONL): keep both
        where = f" at line {found.group(1)} column {found.group(2)} of the record"
    return InputError(f"invalid JSON{where}: {what or 'not a JSON value'}", path=path, line=line)
