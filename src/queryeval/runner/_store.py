"""The run directory: append-only results.jsonl, run.json, summary.json.

Each finished (system, case) is one JSON line, written and flushed as it completes, so a
killed run loses nothing that was finished. On resume a torn last line is cut off.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from queryeval.errors import InputError

RESULTS = "results.jsonl"
RUN = "run.json"
SUMMARY = "summary.json"
COMPARISON = "comparison.json"
REVIEW = "review.json"  # a human review's overridden scores (stats.load_run overlays them)


def json_default(obj: Any) -> Any:
    """What orjson cannot write itself: named tuples (as arrays), decimals, sets, models;
    anything else as text."""
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


class RunStore:
    """Reads and appends the records of one run directory."""

    def __init__(self, out_dir: Path) -> None:
        self.dir = Path(out_dir)
        self.results_path = self.dir / RESULTS
        self._handle: Any = None

    # --- reading ------------------------------------------------------------------------

    def exists(self) -> bool:
        """Whether the directory already holds results."""
        return self.results_path.exists() and self.results_path.stat().st_size > 0

    def records(self) -> Iterator[dict[str, Any]]:
        """Every complete record, in file order (a torn last line is skipped)."""
        if not self.results_path.exists():
            return
        with self.results_path.open("rb") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.endswith(b"\n"):
                    return  # torn write of a killed run
                if line.strip():
                    try:
                        yield orjson.loads(line)
                    except orjson.JSONDecodeError:
                        raise InputError(
                            "corrupt record in results", path=self.results_path, line=lineno
                        ) from None

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

    def read_json(self, name: str) -> dict[str, Any] | None:
        """A JSON file of the run directory, or None."""
        path = self.dir / name
        if not path.exists():
            return None
        try:
            data = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as exc:
            raise InputError(f"invalid JSON ({exc})", path=path) from None
        return data if isinstance(data, dict) else None

    # --- writing ------------------------------------------------------------------------

    def open_for_append(self) -> None:
        """Open results.jsonl for appending (creating the directory)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self._handle = self.results_path.open("ab", buffering=0)

    @staticmethod
    def encode(record: dict[str, Any]) -> bytes:
        """One record as a JSON line."""
        return orjson.dumps(record, default=json_default, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"

    def write_lines(self, data: bytes) -> None:
        """Append already encoded whole lines in one write."""
        self._handle.write(data)

    def append(self, record: dict[str, Any]) -> None:
        """Write one record and hand it to the OS at once (unbuffered), so SIGKILL keeps it."""
        self._handle.write(self.encode(record))

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
