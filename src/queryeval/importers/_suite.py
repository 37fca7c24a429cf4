"""What an importer returns (`ImportedSuite`) and how it is written as a suite directory."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from queryeval.errors import InputError

SUITE_FILE = "suite.yaml"
CASES_FILE = "cases.jsonl"


@dataclass(frozen=True)
class ImportRequest:
    """What the user gave `queryeval import`: sources, predictions, options, output folder."""

    sources: Sequence[Path]
    out: Path
    predictions: Sequence[tuple[str, Path]] = ()
    options: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    skip_missing: bool = False  # leave out (and report) the questions whose database is absent

    def option(self, key: str, default: str | None = None) -> str | None:
        """A `--set key=value` option."""
        return self.options.get(key, default)

    def number_option(self, key: str, default: float) -> float:
        """A positive number given as `--set key=value`."""
        text = self.options.get(key)
        if text is None:
            return default
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not value > 0 or value == float("inf"):
            raise InputError(f"{key}={text}: expected a positive number", where="--set")
        return value

    def expect_options(self, *known: str) -> None:
        """Refuse a `--set` option the format does not have (it could not be honoured)."""
        unknown = sorted(set(self.options) - set(known))
        if unknown:
            raise InputError(f"unknown option(s) {', '.join(unknown)}; this format takes "
                             f"{', '.join(known) or 'none'}", where="--set")  # fmt: skip


@dataclass
class ImportedSuite:
    """A suite to write: case records, databases, predictions per system, suite keys."""

    name: str
    cases: list[dict[str, Any]]
    databases: dict[str, dict[str, Any]] = field(default_factory=dict)
    predictions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    preset: str | None = None
    suite: dict[str, Any] = field(default_factory=dict)  # further suite keys (comparison, ...)
    notes: list[str] = field(default_factory=list)  # printed after the import
    # the preset whose figures the benchmark's leaderboards publish (the official scripts'
    # verdicts), printed beside the preset written when they differ
    leaderboard: str | None = None

    def leave_out(self, databases: dict[str, list[str]]) -> None:
        """Drop the cases on absent databases (``{database: [case ids]}``) and their
        predictions, with a note naming each database and how many questions it had.

        >>> suite = ImportedSuite("s", [{"id": "a"}, {"id": "b"}], predictions={"m": [
        ...     {"case_id": "a", "query": "x"}, {"case_id": "b", "query": "y"}]})
        >>> suite.leave_out({"db1": ["b"]})
        >>> [c["id"] for c in suite.cases], suite.predictions["m"], suite.notes
        (['a'], [{'case_id': 'a', 'query': 'x'}], ['1 question(s) left out, their database \
absent (--skip-missing): db1 (1)'])
        """
        gone = {case_id for ids in databases.values() for case_id in ids}
        if not gone:
            return
        self.cases = [c for c in self.cases if c["id"] not in gone]
        if not self.cases:
            raise InputError(
                f"no question left: every database is absent ({', '.join(sorted(databases))})"
            )
        for system, records in self.predictions.items():
            self.predictions[system] = [r for r in records if r.get("case_id") not in gone]
        listed = ", ".join(f"{db} ({len(ids)})" for db, ids in sorted(databases.items()))
        self.notes.append(
            f"{len(gone)} question(s) left out, their database absent (--skip-missing): {listed}"
        )


def default_reports() -> list[str]:
    """The reports of an imported suite: console, json, html, and excel where XlsxWriter is
    installed (``queryeval[excel]``), so that each shows the benchmark's breakdown."""
    excel = ["excel"] if find_spec("xlsxwriter") is not None else []
    return ["console", "json", "html", *excel]


def check_out(out: Path, *, overwrite: bool) -> None:
    """Refuse to write over an existing suite unless asked to."""
    if (out / SUITE_FILE).exists() and not overwrite:
        raise InputError(
            f"{out / SUITE_FILE} exists; pass --overwrite to replace it", path=out / SUITE_FILE
        )


def write_suite(suite: ImportedSuite, out: Path, *, overwrite: bool = False) -> Path:
    """Write ``suite`` under ``out``: suite.yaml (with `default_reports` unless the suite
    names its own), cases.jsonl, predictions/<system>.jsonl.

    Each file is written to a temporary name and renamed, so a failure leaves no half file.
    Returns the suite file's path.
    """
    import yaml

    check_out(out, overwrite=overwrite)
    out.mkdir(parents=True, exist_ok=True)
    _write_jsonl(out / CASES_FILE, suite.cases)
    systems = []
    for system, records in suite.predictions.items():
        path = out / "predictions" / f"{_file_name(system)}.jsonl"
        path.parent.mkdir(exist_ok=True)
        _write_jsonl(path, records)
        systems.append({"name": system, "predictions": str(path.relative_to(out))})
    if not systems:  # a suite needs a system: the gold itself (the self-test)
        systems.append({"name": "gold", "predictions": "predictions/gold.jsonl"})
        gold = [_gold_record(case) for case in suite.cases]
        (out / "predictions").mkdir(exist_ok=True)
        _write_jsonl(out / "predictions" / "gold.jsonl", [g for g in gold if g is not None])
    data: dict[str, Any] = {"name": suite.name}
    if suite.preset:
        data["preset"] = suite.preset
    data["cases"] = CASES_FILE
    data["databases"] = suite.databases
    data["systems"] = systems
    data["reports"] = default_reports()
    data.update(suite.suite)  # an importer's own reports replace the default
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    header = getattr(suite, "header", "")  # an importer may explain the suite in a comment
    if header:
        text = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines()) + text
    _atomic_write(out / SUITE_FILE, text.encode())
    return out / SUITE_FILE


def _gold_record(case: dict[str, Any]) -> dict[str, Any] | None:
    for turn in reversed(case.get("conversation", [])):
        target = turn.get("target")
        if isinstance(target, list):
            target = target[0] if target else None
        if isinstance(target, dict) and target.get("query") is not None:
            query = target["query"]
            text = query["text"] if isinstance(query, dict) else query
            return {"case_id": case["id"], "query": text}
    return None


def _file_name(system: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in system)
    return safe.strip(".") or "system"


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    import orjson

    body = b"".join(orjson.dumps(r) + b"\n" for r in records)
    _atomic_write(path, body)


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
