"""Read a stored run directory (results.jsonl, summary.json, run.json) for comparisons; a
human review's overrides (review.json) are put over the stored records.

Kept here, read-only and free of the runner, so that `stats` does not import the layer
above it; like the run store, it skips a torn last line left by a killed run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from queryeval.errors import InputError


@dataclass
class RunData:
    """The records of one run and its summary/run metadata (when present)."""

    label: str
    records: Sequence[Mapping[str, Any]]
    summary: dict[str, Any] | None = None
    info: dict[str, Any] | None = None
    path: Path | None = field(default=None)


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc})", path=path) from None
    return data if isinstance(data, dict) else None


def load_run(path: str | Path) -> RunData:
    """A run directory's records (with a human review's overrides, when review.json holds
    some) and summary; InputError when it holds no results."""
    run_dir = Path(path)
    results = run_dir / "results.jsonl"
    if not results.is_file():
        raise InputError("not a run directory (no results.jsonl)", path=run_dir)
    records: list[dict[str, Any]] = []
    with results.open("rb") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.endswith(b"\n"):
                break  # torn write of a killed run
            if not line.strip():
                continue
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                raise InputError("corrupt record in results", path=results, line=lineno) from None
            if not isinstance(rec, dict) or "system" not in rec or "case_id" not in rec:
                raise InputError(
                    "expected a record with 'system' and 'case_id'", path=results, line=lineno
                )
            records.append(rec)
    reviewed = _read_json(run_dir / "review.json")
    if reviewed:
        records = _overlay(records, reviewed)
    return RunData(
        label=str(run_dir),
        records=records,
        summary=_read_json(run_dir / "summary.json"),
        info=_read_json(run_dir / "run.json"),
        path=run_dir,
    )


def _overlay(records: list[dict[str, Any]], reviewed: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The records with a human review's overridden scores and case verdicts (review.json,
    written by the runner when it applies a review file) in place of the stored ones."""
    changes = {
        (str(r.get("system")), str(r.get("case_id"))): r
        for r in reviewed.get("records") or []
        if isinstance(r, Mapping)
    }
    if not changes:
        return records
    out = []
    for rec in records:
        change = changes.get((str(rec["system"]), str(rec["case_id"])))
        if change is not None:
            rec = {
                **rec,
                "passed": change.get("passed"),
                "scores": {**(rec.get("scores") or {}), **(change.get("scores") or {})},
            }
        out.append(rec)
    return out


def as_run(run: str | Path | RunData | Sequence[Mapping[str, Any]], label: str) -> RunData:
    """Accept a run directory, loaded RunData, or a plain list of records."""
    if isinstance(run, RunData):
        return run
    if isinstance(run, str | Path):
        return load_run(run)
    return RunData(label=label, records=list(run))
