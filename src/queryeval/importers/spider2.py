"""Spider 2.0-lite, its local (SQLite) cases.

Sources (folders are searched for the usual names):

- the examples ``spider2-lite.jsonl`` (``{instance_id, db, question,
  external_knowledge}``); only ``local*`` instances are imported (the others need BigQuery or
  Snowflake);
- the evaluation suite's ``gold/`` folder: ``spider2lite_eval.jsonl`` (``{instance_id,
  condition_cols, ignore_order}``) and ``exec_result/<id>.csv``, with alternatives
  ``<id>_a.csv``, ``<id>_b.csv``... (any of them is accepted), and optionally ``sql/<id>.sql``;
- the databases ``spider2-localdb/<db>.sqlite``.

The expected rows are the gold CSVs (a case's targets, any-of); the verdict is the official
column-vector rule (``execution_match`` with ``rule: spider2_legacy``; ``condition_cols`` and
``ignore_order`` go to the case's ``metadata.spider2``). Predictions (``--predictions``): a
folder of ``<instance_id>.sql`` files, as the official ``--mode sql`` reads them; a missing
file is a missing prediction. Options: see `OPTIONS`. With ``--skip-missing`` the
instances whose database is absent are left out (and reported).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.importers._read import read_jsonl
from queryeval.importers._suite import ImportedSuite, ImportRequest

SUMMARY = "Spider 2.0-lite local cases: spider2-lite.jsonl, gold CSVs (_a/_b), local SQLite"
OPTIONS = {"timeout_s": "time limit of each query, seconds (60)"}
SCORERS = ("executes", "execution_match")
SKIPS_MISSING = True


def build(request: ImportRequest) -> ImportedSuite:
    """The suite of Spider 2.0-lite's local cases (see the module docstring)."""
    request.expect_options(*OPTIONS)
    examples_path, eval_path, results_dir, db_dir = _find(request.sources)
    standards = {
        str(r.get("instance_id")): (n, r) for n, r in read_jsonl(eval_path) if isinstance(r, dict)
    }
    timeout_s = request.number_option("timeout_s", 60.0)
    cases: list[dict[str, Any]] = []
    databases: dict[str, dict[str, Any]] = {}
    skipped = 0
    absent: dict[str, list[str]] = {}
    for lineno, item in read_jsonl(examples_path):
        if not isinstance(item, dict):
            raise InputError("expected an object", path=examples_path, line=lineno)
        iid = item.get("instance_id")
        if not isinstance(iid, str) or not iid:
            raise InputError("'instance_id': expected a string", path=examples_path, line=lineno)
        if not iid.startswith("local"):
            skipped += 1
            continue
        db = item.get("db")
        question = item.get("question") or item.get("instruction")
        if not isinstance(db, str) or not isinstance(question, str):
            raise InputError(
                "expected 'db' and 'question' strings", path=examples_path, line=lineno
            )
        if iid not in standards:
            raise InputError(
                f"{iid}: no entry in {eval_path.name}", path=examples_path, line=lineno
            )
        std_line, standard = standards[iid]
        if db not in databases:
            path = db_dir / f"{db}.sqlite"
            if not path.is_file() and request.skip_missing:
                absent.setdefault(db, []).append(iid)
                continue
            if not path.is_file():
                raise InputError(
                    f"database {db!r} not found: expected {path} (--skip-missing leaves its "
                    "instances out)",
                    path=db_dir,
                )
            databases[db] = {
                "engine": "sqlite",
                "path": str(path.resolve()),
                "options": {"timeout_s": timeout_s, "max_rows": 1_000_000},
            }
        cases.append(_case(iid, db, question, item, standard, (eval_path, std_line), results_dir))
    if not cases:
        raise InputError("no local* instances", path=examples_path)
    predictions = {name: _predictions(path, cases) for name, path in request.predictions}
    notes = [f"{skipped} non-local instance(s) skipped (BigQuery/Snowflake)"] if skipped else []
    if absent:
        listed = ", ".join(f"{db} ({len(ids)})" for db, ids in sorted(absent.items()))
        notes.append(
            f"{sum(map(len, absent.values()))} question(s) left out, their database absent "
            f"(--skip-missing): {listed}"
        )
    return ImportedSuite(
        name=request.name or "spider2-lite-local",
        cases=cases,
        databases=databases,
        predictions=predictions,
        suite={
            "scorers": [
                {"name": "executes", "weight": 0},
                {
                    "name": "execution_match",
                    "required": True,
                    "options": {"rule": "spider2_legacy"},
                },
            ],
        },
        notes=notes,
    )


def _find(sources: Any) -> tuple[Path, Path, Path, Path]:
    examples = eval_file = results = db_dir = None
    for source in sources:
        candidates = [source]
        if source.is_dir():
            candidates += [
                p
                for p in source.rglob("*")
                if p.name
                in {
                    "spider2-lite.jsonl",
                    "spider2lite_eval.jsonl",
                    "exec_result",
                    "spider2-localdb",
                }
            ]
        for path in candidates:
            if path.name == "spider2-lite.jsonl":
                examples = path
            elif path.name == "spider2lite_eval.jsonl":
                eval_file = path
            elif path.is_dir() and path.name == "exec_result":
                results = path
            elif path.is_dir() and any(path.glob("*.sqlite")):
                db_dir = path
    missing = [
        name
        for name, found in (
            ("spider2-lite.jsonl", examples),
            ("spider2lite_eval.jsonl", eval_file),
            ("gold/exec_result/", results),
            ("the local databases (<db>.sqlite)", db_dir),
        )
        if found is None
    ]
    if missing:
        raise InputError(f"not found among the sources: {', '.join(missing)}")
    assert examples and eval_file and results and db_dir
    return examples, eval_file, results, db_dir


def _case(
    iid: str,
    db: str,
    question: str,
    item: dict[str, Any],
    standard: dict[str, Any],
    place: tuple[Path, int],
    results_dir: Path,
) -> dict[str, Any]:
    pattern = re.compile(rf"^{re.escape(iid)}(_[a-z])?\.csv$")
    files = sorted(p for p in results_dir.iterdir() if pattern.match(p.name))
    if not files:
        raise InputError(f"{iid}: no gold CSV ({iid}.csv or {iid}_a.csv ...)", path=results_dir)
    targets = [{"result": _read_csv(p)} for p in files]
    condition_cols = standard.get("condition_cols") or []
    if condition_cols and isinstance(condition_cols[0], list):
        condition_cols = condition_cols[0]  # one list per alternative: the same for each here
    if not isinstance(condition_cols, list) or not all(isinstance(i, int) for i in condition_cols):
        raise InputError(
            "'condition_cols': expected a list of column indexes", path=place[0], line=place[1]
        )
    metadata: dict[str, Any] = {
        "database": db,
        "spider2": {
            "condition_cols": condition_cols,
            "ignore_order": bool(standard.get("ignore_order", False)),
        },
    }
    if item.get("external_knowledge"):
        metadata["external_knowledge"] = item["external_knowledge"]
    return {
        "id": iid,
        "tags": [f"db:{db}"],
        "metadata": metadata,
        "conversation": [{"content": question, "target": targets}],
    }


def _read_csv(path: Path) -> dict[str, Any]:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise InputError(f"cannot read the CSV: {error}", path=path) from None
    if not rows:
        raise InputError("empty CSV: expected a header row", path=path)
    header, body = rows[0], rows[1:]
    for lineno, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise InputError(
                f"{len(row)} cells, the header has {len(header)}", path=path, line=lineno
            )
    columns = [[row[i] for row in body] for i in range(len(header))]
    from queryeval.metrics.benchmarks import spider2_column_value

    typed = [spider2_column_value(c) for c in columns]
    return {"columns": header, "rows": [list(r) for r in zip(*typed, strict=True)] if body else []}


def _predictions(folder: Path, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not folder.is_dir():
        raise InputError("expected a folder of <instance_id>.sql files", path=folder)
    records = []
    for case in cases:
        path = folder / f"{case['id']}.sql"
        if path.is_file():
            records.append({"case_id": case["id"], "query": path.read_text(encoding="utf-8")})
        else:
            records.append({"case_id": case["id"], "error": f"no {path.name}"})
    return records
