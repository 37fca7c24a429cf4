"""The one writer of a run directory: results.jsonl appended record by record, the JSON
files written whole and atomically.

Each finished (system, case) is one JSON line handed to the OS as it completes (the file is
unbuffered), so a killed run loses nothing that was finished; `repair_tail` cuts the torn
last line such a kill may leave, before a resumed run appends.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from queryeval._unicode import readable
from queryeval.log._schema import RESULTS, RUN_FILES


def json_default(obj: Any) -> Any:
    """What orjson cannot write itself: named tuples (as arrays), decimals, sets, models;
    anything else as text.

    >>> from decimal import Decimal
    >>> json_default(Decimal("1.5")), json_default({2, 1}), json_default(Decimal("NaN"))
    (1.5, [1, 2], 'NaN')
    """
    if isinstance(obj, tuple):  # first: named tuples are by far the most common here
        return list(obj)
    from decimal import Decimal

    if isinstance(obj, Decimal):
        return float(obj) if obj.is_finite() else str(obj)
    if isinstance(obj, set | frozenset):
        return sorted(obj, key=repr)
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return str(obj)


def encode_record(record: Mapping[str, Any]) -> bytes:
    """One record as a JSON line; a text holding an unpaired UTF-16 surrogate (a system's
    reply can carry one; UTF-8 has no form for it) is written with U+FFFD in its place.

    >>> encode_record({"system": "s", "case_id": "c", "scores": {}})
    b'{"system":"s","case_id":"c","scores":{}}\\n'
    >>> encode_record({"error": "bad \\ud800"})
    b'{"error":"bad \\xef\\xbf\\xbd"}\\n'
    """
    try:
        data = orjson.dumps(record, default=json_default, option=orjson.OPT_SERIALIZE_NUMPY)
    except orjson.JSONEncodeError:
        data = orjson.dumps(without_surrogates(record), default=json_default, option=_LENIENT)
    return data + b"\n"


_LENIENT = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS  # the fallback's options


def without_surrogates(value: Any) -> Any:
    """`value` with every unpaired UTF-16 surrogate in its texts (keys included, through
    dicts, lists, tuples and sets) replaced by U+FFFD; anything else as it is.

    >>> without_surrogates({"a\\udc00": ["x\\ud800", 1]})
    {'a\\ufffd': ['x\\ufffd', 1]}
    """
    if isinstance(value, str):
        return readable(value)
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [without_surrogates(v) for v in value]
    return value


class LogWriter:
    """Appends the records of one run directory and writes its JSON files.

    >>> import tempfile
    >>> from queryeval.log import read_log
    >>> out = Path(tempfile.mkdtemp())
    >>> writer = LogWriter(out)
    >>> writer.open_for_append()
    >>> writer.append({"system": "s", "case_id": "c1", "output": {}, "scores": {},
    ...                "passed": True, "error": None, "latency_s": None, "cost": None})
    >>> writer.close()
    >>> [r["case_id"] for r in read_log(out).records]
    ['c1']
    """

    def __init__(self, out_dir: Path) -> None:
        self.dir = Path(out_dir)
        self.results_path = self.dir / RESULTS
        self._handle: Any = None

    encode = staticmethod(encode_record)

    def has_results(self) -> bool:
        """Whether the directory already holds results."""
        return self.results_path.exists() and self.results_path.stat().st_size > 0

    def clear(self) -> None:
        """Remove what a previous run left (results, run info, summary, comparison, review)."""
        for name in RUN_FILES:
            with contextlib.suppress(FileNotFoundError):
                (self.dir / name).unlink()

    def repair_tail(self) -> int:
        """Cut a torn last line (from SIGKILL mid-write); returns the bytes removed."""
        if not self.results_path.exists():
            return 0
        size = self.results_path.stat().st_size
        if size == 0:
            return 0
        with self.results_path.open("rb+") as f:
            f.seek(max(0, size - 1))
            if f.read(1) == b"\n":
                return 0
            # walk back to the last newline
            pos = size
            chunk = 65536
            while pos > 0:
                start = max(0, pos - chunk)
                f.seek(start)
                data = f.read(pos - start)
                idx = data.rfind(b"\n")
                if idx >= 0:
                    keep = start + idx + 1
                    f.truncate(keep)
                    return size - keep
                pos = start
            f.truncate(0)
            return size

    def rewrite(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Replace results.jsonl by `records` (written beside it, then moved over it: a kill
        leaves the old file or the new one, never a mix). For `run --retry-errors`."""
        self.dir.mkdir(parents=True, exist_ok=True)
        temporary = self.results_path.with_name(self.results_path.name + ".tmp")
        with temporary.open("wb") as f:
            for record in records:
                f.write(encode_record(record))
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, self.results_path)

    def open_for_append(self) -> None:
        """Open results.jsonl for appending (creating the directory)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self._handle = self.results_path.open("ab", buffering=0)

    def write_lines(self, data: bytes) -> None:
        """Append already encoded whole lines in one write."""
        self._handle.write(data)

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record and hand it to the OS at once (unbuffered), so SIGKILL keeps it."""
        self._handle.write(encode_record(record))

    def close(self) -> None:
        """Close the results file."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def write_json(self, name: str, data: Any) -> Path:
        """Write a JSON file atomically (temp file + rename), so readers never see half."""
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / name
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_bytes(
            orjson.dumps(
                data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY
            )
            + b"\n"
        )
        os.replace(tmp, path)
        return path
