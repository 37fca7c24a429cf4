"""Published gold corrections attached to an imported benchmark as an overlay (issue 32;
docs/audit.md).

``queryeval import corrections SRC... --set base=bird --set corrections=FILE --out DIR``
imports SRC with the ``base`` format (its own options pass through), reads the corrections
in their published layout, maps their ids to the base importer's case ids, and writes
``DIR/corrections.yaml`` (an overlay: the corrected golds, with where they come from: the
file, its sha256, the source) listed under the suite's ``overlays:``. A run then reports
its figures on the original golds and on the corrected ones side by side.

Layouts (``--set layout=``, see `LAYOUTS`):

- ``bird-json``: a BIRD examples file (``[{question_id, db_id, question, evidence, SQL,
  difficulty}]``), as the corrected BIRD Dev subset of uiuc-kang-lab/text_to_sql_benchmarks
  (arXiv 2601.08778; its ``text_to_sql_agents/evaluate.py --gold data/dev/dev.json`` reads
  it) is laid out; ``question_id`` is the BIRD importer's case id. An item whose SQL is the
  imported gold (whitespace aside) is not a correction and is not listed;
- ``sql-dir``: a folder of ``<case id>.sql`` files, one corrected gold each (Spider 2.0's
  ``gold/sql/<instance_id>.sql`` layout; the spider2 importer's case id is the instance_id);
- ``overlay``: a queryeval overlay file (YAML or JSONL), its case ids checked;
- ``errata``: a queryeval errata file (`queryeval.importers._errata`): errata reported in
  prose, each with its original gold, applied only where the case's gold is that original.
  ``--set corrections=spider-errata`` (the default layout for it) is the packaged file of
  the Spider/SParC/CoSQL errata published in the taoyds issue trackers.

Published corrections are applied (the publisher stands behind them); ``--set
proposed=true`` writes them as ``proposed`` drafts for a person to accept one by one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.importers._errata import BUILTIN, DATA_FILE, match, read_errata
from queryeval.importers._read import expect_list_of_objects, read_json
from queryeval.importers._suite import ImportedSuite, ImportRequest

SUMMARY = "published gold corrections as an overlay over another format's import (--set base=)"

LAYOUTS = {
    "bird-json": "uiuc-kang-lab/text_to_sql_benchmarks, corrected BIRD Dev subset "
    "(arXiv 2601.08778)",
    "sql-dir": "a folder of <case id>.sql corrected golds",
    "overlay": "a queryeval overlay file",
    "errata": "Spider-family gold errata with their original golds (taoyds issue trackers)",
}
OPTIONS = {
    "base": "the format that imports SRC (bird, spider, spider2, ...)",
    "corrections": "the corrections file or folder, in its published layout, or "
    "spider-errata (the packaged Spider/SParC/CoSQL errata)",
    "layout": f"the corrections' layout: {', '.join(LAYOUTS)} (default bird-json for "
    "base=bird, errata for spider-errata, else overlay)",
    "source": "who publishes the corrections (default: the layout's publisher)",
    "proposed": "true: write the entries as proposed drafts (default false)",
}
OVERLAY_FILE = "corrections.yaml"


def build(request: ImportRequest) -> ImportedSuite:
    """The base format's suite with the corrections attached as an overlay."""
    from queryeval.importers import importer

    ours = {k: v for k, v in request.options.items() if k in OPTIONS}
    base_name, corrections = ours.get("base"), ours.get("corrections")
    if not base_name or base_name == "corrections":
        raise InputError("expected --set base=FORMAT (bird, spider, ...)", where="--set")
    if not corrections:
        raise InputError("expected --set corrections=FILE", where="--set")
    builtin = corrections == BUILTIN and not Path(corrections).exists()
    default = "errata" if builtin else "bird-json" if base_name == "bird" else "overlay"
    layout = ours.get("layout") or default
    if layout not in LAYOUTS:
        raise InputError(f"layout={layout}: expected one of {', '.join(LAYOUTS)}", where="--set")
    proposed = (ours.get("proposed") or "false").lower()
    if proposed not in ("true", "false"):
        raise InputError(f"proposed={proposed}: expected true or false", where="--set")
    rest = {k: v for k, v in request.options.items() if k not in OPTIONS}
    suite = importer(base_name).build(dataclasses.replace(request, options=rest))
    path = _packaged() if builtin else Path(corrections)
    if not path.exists():
        raise InputError("no such corrections file or folder", path=path)
    source = ours.get("source") or LAYOUTS[layout]
    cases = {str(c["id"]): c for c in suite.cases}
    reports: list[str] = []
    if layout == "errata":
        entries, reports, unchanged = _errata(path, suite.cases, base_name, rest)
    else:
        reader = {"bird-json": _bird_json, "sql-dir": _sql_dir, "overlay": _overlay}[layout]
        entries, unchanged = reader(path, cases, source)
    missing = [e for e in entries if e["case_id"] not in cases]
    if missing and not request.skip_missing:
        raise InputError(
            f"{len(missing)} correction(s) name no case of the {base_name} import: "
            f"{', '.join(e['case_id'] for e in missing[:10])}",
            path=path,
        )
    entries = [e for e in entries if e["case_id"] in cases]
    if proposed == "true":
        entries = [{**e, "proposed": True} for e in entries]
    provenance: dict[str, Any] = {
        "source": source,
        "layout": layout,
        "file": str(path.resolve()),
        "sha256": _digest(path),
        "base": base_name,
        "imported_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if reports:
        provenance["not_applied"] = reports
    _write(request.out / OVERLAY_FILE, provenance, entries)
    suite.suite["overlays"] = [*suite.suite.get("overlays", []), OVERLAY_FILE]
    if layout == "errata":
        suite.notes.append(
            f"corrections: {len(entries)} erratum(s) applied in {OVERLAY_FILE} ({path.name}); "
            f"{len(reports)} not applied; {unchanged} for other benchmarks or splits"
        )
        suite.notes.extend(f"corrections: not applied: {r}" for r in reports)
        return suite
    suite.notes.append(
        f"corrections: {len(entries)} gold(s) corrected in {OVERLAY_FILE} ({source}); "
        f"{unchanged} item(s) the same as the original gold"
        + (f", {len(missing)} left out with their cases" if missing else "")
    )
    return suite


def _packaged() -> Path:
    """The packaged errata file (a real file: the package data is installed unzipped)."""
    from importlib import resources

    return Path(str(resources.files("queryeval.importers") / "data" / DATA_FILE))


def _errata(
    path: Path, cases: list[dict[str, Any]], base: str, options: dict[str, str]
) -> tuple[list[dict[str, Any]], list[str], int]:
    if not path.is_file():
        raise InputError("expected an errata file (YAML, 'errata:')", path=path)
    return match(
        read_errata(path), cases, benchmark=base, split=options.get("split") or "dev", gold=_gold
    )


def _gold(case: dict[str, Any]) -> tuple[str | None, str | None]:
    """The case's gold query text and database."""
    for turn in reversed(case.get("conversation") or []):
        target = turn.get("target")
        if isinstance(target, list):
            target = target[0] if target else None
        query = target.get("query") if isinstance(target, dict) else None
        if isinstance(query, dict):
            return query.get("text"), query.get("database")
        if isinstance(query, str):
            return query, None
    return None, None


def _same(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and " ".join(a.split()) == " ".join(b.split())


def _bird_json(
    path: Path, cases: dict[str, dict[str, Any]], source: str
) -> tuple[list[dict[str, Any]], int]:
    items = expect_list_of_objects(read_json(path), path, "BIRD examples")
    entries: list[dict[str, Any]] = []
    unchanged = 0
    for i, item in enumerate(items):
        where = f"item {i}"
        qid, sql, db = item.get("question_id"), item.get("SQL"), item.get("db_id")
        if not isinstance(qid, int | str) or isinstance(qid, bool) or str(qid) == "":
            raise InputError("'question_id': expected an id", path=path, where=where)
        if not isinstance(sql, str) or not sql.strip() or not isinstance(db, str):
            raise InputError("'SQL' and 'db_id': expected strings", path=path, where=where)
        case = cases.get(str(qid))
        reason = "corrected gold (published)"
        if case is not None:
            text, database = _gold(case)
            if database is not None and database != db:
                raise InputError(
                    f"question {qid} is on database {db!r}, the imported case on {database!r}",
                    path=path,
                    where=where,
                )
            if _same(text, sql):
                unchanged += 1
                continue
            turns: list[dict[str, Any]] = case.get("conversation") or [{}]
            question = turns[0].get("content")
            asked = item.get("question")
            if (
                isinstance(asked, str)
                and question is not None
                and " ".join(asked.split()) not in " ".join(str(question).split())
            ):
                reason += (
                    "; the correction also rewrites the question (the overlay replaces "
                    "the gold only)"
                )
        entries.append(
            {"case_id": str(qid), "gold": {"text": sql, "database": db}, "reason": reason,
             "source": source}
        )  # fmt: skip
    return entries, unchanged


def _sql_dir(
    path: Path, cases: dict[str, dict[str, Any]], source: str
) -> tuple[list[dict[str, Any]], int]:
    if not path.is_dir():
        raise InputError("expected a folder of <case id>.sql files", path=path)
    entries: list[dict[str, Any]] = []
    unchanged = 0
    for file in sorted(path.glob("*.sql")):
        sql = file.read_text(encoding="utf-8").strip()
        if not sql:
            raise InputError("empty gold query", path=file)
        case = cases.get(file.stem)
        if case is not None and _same(_gold(case)[0], sql):
            unchanged += 1
            continue
        entries.append(
            {"case_id": file.stem, "gold": sql, "reason": "corrected gold (published)",
             "source": source}
        )  # fmt: skip
    if not entries and not unchanged:
        raise InputError("no <case id>.sql file", path=path)
    return entries, unchanged


def _overlay(
    path: Path, cases: dict[str, dict[str, Any]], source: str
) -> tuple[list[dict[str, Any]], int]:
    from queryeval.config import load_overlay

    overlay = load_overlay(path)
    keep = {"case_id", "gold", "drop", "reason", "source", "proposed", "reviewer", "at"}
    entries = [
        e.model_dump(include=keep, exclude_defaults=True) | {"reason": e.reason, "source": e.source}
        for e in overlay.entries
    ]
    return entries, 0


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for p in files:
        if path.is_dir():
            h.update(re.sub(r"\\", "/", str(p.relative_to(path))).encode() + b"\0")
        h.update(p.read_bytes())
    return h.hexdigest()


def _write(path: Path, provenance: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    import yaml

    text = yaml.safe_dump(
        {"provenance": provenance, "entries": entries},
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
