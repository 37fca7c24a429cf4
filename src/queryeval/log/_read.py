"""The one reader of a run directory: its records (a torn last line of a killed run is
skipped; a human review's overrides, review.json, put over them), run info, summary and
comparison, each typed (`read_summary`, `read_run_info`, `read_review`, `read_comparison`:
the file's top-level shape checked, InputError naming the file and key when it is not)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson

from queryeval.errors import InputError
from queryeval.log._schema import (
    COMPARISON,
    OVERLAYS,
    RESULTS,
    REVIEW,
    RUN,
    SUMMARY,
    Record,
    ReviewFile,
    RunInfo,
    Summary,
)


def iter_records(run_dir: Path) -> Iterator[Record]:
    """Every complete record of a run directory, in file order (none when it has no
    results); InputError on a corrupt line or one that is not a record.

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> _ = (out / RESULTS).write_bytes(b'{"system":"s","case_id":"c1"}\\n{"system":"s","ca')
    >>> [r["case_id"] for r in iter_records(out)]  # the torn last line of a kill is skipped
    ['c1']
    """
    results = Path(run_dir) / RESULTS
    if not results.exists():
        return
    with results.open("rb") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.endswith(b"\n"):
                return  # torn write of a killed run
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
            yield cast(Record, rec)


def read_json(run_dir: Path, name: str) -> dict[str, Any] | None:
    """One JSON file of a run directory (run.json, summary.json, ...), or None when absent;
    InputError when it is not JSON.

    >>> read_json(Path("/nonexistent"), RUN) is None
    True
    """
    path = Path(run_dir) / name
    if not path.exists():
        return None
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc})", path=path) from None
    return data if isinstance(data, dict) else None


# the JSON kind of each top-level key the typed readers check (a key not listed, or absent
# where optional, is taken as it is: a newer or an older run's files read alike)
_SUMMARY_KEYS = {"suite": str, "n_cases": int, "systems": dict, "gates": list, "review": dict}
_SUMMARY_REQUIRED = ("suite", "n_cases", "systems")
_RUN_KEYS = {"suite": str, "config_hash": str, "inputs_hash": str, "input_files": list,
             "config": dict, "scorers": dict, "systems": list, "seed": int, "versions": dict,
             "status": str, "system_calls": dict, "review": dict, "selection": dict,
             "cluster": dict, "overlays": list}  # fmt: skip
_REVIEW_KEYS = {"file": str, "records": list, "golds": list}
_KINDS = {dict: "an object", list: "a list", str: "a text", int: "an integer"}


def _checked(
    run_dir: Path,
    name: str,
    kinds: Mapping[str, type],
    required: Sequence[str] = (),
    nested: str | None = None,
) -> dict[str, Any] | None:
    """`read_json`, with every key of `required` present, each key of `kinds` of its JSON
    kind (or null, where not required) and, under `nested`, every value an object;
    InputError naming the file and the key otherwise."""
    path = Path(run_dir) / name
    data = read_json(run_dir, name)
    if data is None:
        if path.exists():
            raise InputError("expected a JSON object", path=path)
        return None
    for key in required:
        if key not in data:
            raise InputError("expected this key", path=path, where=key)
    for key, kind in kinds.items():
        value = data.get(key)
        if value is None and key not in required:
            continue
        if not isinstance(value, kind) or isinstance(value, bool):
            got = "null" if value is None else type(value).__name__
            raise InputError(f"expected {_KINDS[kind]}, got {got}", path=path, where=key)
    for key, value in data[nested].items() if nested is not None else ():
        if not isinstance(value, dict):
            raise InputError("expected an object", path=path, where=f"{nested}.{key}")
    return data


def read_summary(run_dir: Path) -> Summary | None:
    """summary.json of a run directory, or None when absent; InputError when it is not a
    summary (no `suite`, `n_cases` or `systems`, a key of the wrong kind).

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> _ = (out / SUMMARY).write_text('{"suite": "s", "n_cases": 1, "systems": {"a": {}}}')
    >>> read_summary(out)["systems"]
    {'a': {}}
    >>> _ = (out / SUMMARY).write_text('{"suite": "s", "n_cases": 1, "systems": []}')
    >>> try:
    ...     read_summary(out)
    ... except InputError as error:
    ...     print(error.where, error.message)
    systems expected an object, got list
    """
    data = _checked(run_dir, SUMMARY, _SUMMARY_KEYS, _SUMMARY_REQUIRED, nested="systems")
    return cast(Summary | None, data)


def read_run_info(run_dir: Path) -> RunInfo | None:
    """run.json of a run directory, or None when absent; InputError when a key it has is
    of the wrong kind (every key is optional: an older run's run.json reads).

    >>> read_run_info(Path("/nonexistent")) is None
    True
    """
    return cast(RunInfo | None, _checked(run_dir, RUN, _RUN_KEYS, nested=None))


def read_review(run_dir: Path) -> ReviewFile | None:
    """review.json of a run directory (a human review's overridden scores), or None.

    >>> read_review(Path("/nonexistent")) is None
    True
    """
    return cast(ReviewFile | None, _checked(run_dir, REVIEW, _REVIEW_KEYS))


def read_comparison(run_dir: Path) -> dict[str, Any] | None:
    """comparison.json of a run directory (`stats.RunComparison.as_dict`), or None.

    >>> read_comparison(Path("/nonexistent")) is None
    True
    """
    return _checked(run_dir, COMPARISON, {})


def read_overlays(run_dir: Path) -> list[dict[str, Any]]:
    """The correction overlays' figures of a run directory (overlay-<name>.json, by name);
    none when it has none; InputError when one is not JSON.

    >>> read_overlays(Path("/nonexistent"))
    []
    """
    found = sorted(Path(run_dir).glob(OVERLAYS)) if Path(run_dir).is_dir() else []
    return [o for p in found if (o := read_json(p.parent, p.name)) is not None]


def overlay_review(records: Sequence[Record], reviewed: Mapping[str, Any] | None) -> list[Record]:
    """The records with a human review's overridden scores and case verdicts (review.json,
    written by the runner when it applies a review file) in place of the stored ones.

    >>> recs = [{"system": "s", "case_id": "c", "passed": False,
    ...          "scores": {"a": {"value": 0.0}, "b": {"value": 1.0}}}]
    >>> review = {"records": [{"system": "s", "case_id": "c", "passed": True,
    ...                        "scores": {"a": {"value": 1.0}}}]}
    >>> out = overlay_review(recs, review)[0]
    >>> out["passed"], out["scores"]["a"]["value"], out["scores"]["b"]["value"]
    (True, 1.0, 1.0)
    """
    changes = {
        (str(r.get("system")), str(r.get("case_id"))): r
        for r in (reviewed or {}).get("records") or []
        if isinstance(r, Mapping)
    }
    if not changes:
        return list(records)
    out: list[Record] = []
    for rec in records:
        change = changes.get((str(rec["system"]), str(rec["case_id"])))
        if change is not None:
            rec = cast(
                Record,
                {
                    **rec,
                    "passed": change.get("passed"),
                    "scores": {**(rec.get("scores") or {}), **(change.get("scores") or {})},
                },
            )
        out.append(rec)
    return out


@dataclass
class RunLog:
    """A run as read: its records, summary, run info, comparison and correction overlays'
    figures (when present).

    Built by `read_log` from a directory (the records are read once, on first use, with a
    human review's overrides from review.json put over them) or from records in memory
    (`RunLog.of`).

    >>> log = RunLog.of([{"system": "s", "case_id": "c"}], label="A")
    >>> log.label, len(log.records), log.summary
    ('A', 1, None)
    """

    label: str
    path: Path | None = None
    summary: Summary | None = None
    info: RunInfo | None = None
    comparison: dict[str, Any] | None = None
    review: ReviewFile | None = None  # review.json: the overridden scores
    overlays: list[dict[str, Any]] = field(default_factory=list)  # overlay-<name>.json
    _records: list[Record] | None = field(default=None, repr=False)

    @classmethod
    def of(cls, records: Sequence[Mapping[str, Any]], *, label: str) -> RunLog:
        """A run log of records held in memory."""
        return cls(label=label, _records=cast(list[Record], list(records)))

    @property
    def records(self) -> list[Record]:
        """Every record (read from results.jsonl the first time, a review's overrides put
        over them)."""
        if self._records is None:
            stored = [] if self.path is None else list(iter_records(self.path))
            self._records = overlay_review(stored, self.review) if self.review else stored
        return self._records


def read_log(path: str | Path, *, reviewed: bool = True) -> RunLog:
    """A run directory; InputError when it holds no results.jsonl. Its records carry the
    human review's overrides (review.json) unless `reviewed` is False (the stored scores,
    which a review is applied to again).

    >>> read_log("/nonexistent")
    Traceback (most recent call last):
    queryeval.errors.InputError: /nonexistent: not a run directory (no results.jsonl)
    """
    run_dir = Path(path)
    if not (run_dir / RESULTS).is_file():
        raise InputError("not a run directory (no results.jsonl)", path=run_dir)
    return RunLog(
        label=str(run_dir),
        path=run_dir,
        summary=read_summary(run_dir),
        info=read_run_info(run_dir),
        comparison=read_comparison(run_dir),
        review=read_review(run_dir) if reviewed else None,
        overlays=read_overlays(run_dir),
    )


def as_log(run: str | Path | RunLog | Sequence[Mapping[str, Any]], label: str) -> RunLog:
    """A run directory, a RunLog, or a plain list of records, as a RunLog.

    >>> as_log([], "B").label
    'B'
    """
    if isinstance(run, RunLog):
        return run
    if isinstance(run, str | Path):
        return read_log(run)
    return RunLog.of(run, label=label)
