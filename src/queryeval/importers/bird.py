"""BIRD and BIRD mini-dev (SQLite).

Sources (folders are searched for the usual names): the examples (``dev.json``, or
mini-dev's ``mini_dev_sqlite.json`` / ``.jsonl``: ``[{question_id, db_id, question,
evidence, SQL, difficulty}]``), the databases (``dev_databases/<db>/<db>.sqlite``), and
optionally a gold file (``dev.sql`` / ``mini_dev_sqlite_gold.sql``: ``SQL<TAB>db_id``),
which, when given, must agree with the examples and is what is scored.

Predictions (``--predictions FILE``): BIRD's JSON object ``{"0": "SQL\\t----- bird
-----\\tdb_id", ...}``, matched to the examples by position as the official script does.
As in mini-dev's ``package_sqls``, a value without the separator (or with more than one) is
the whole stripped string, and a value that is not a string is no query. The query runs on
the example's database (mini-dev's rule). Options: see `OPTIONS`. With ``--skip-missing``
the questions whose database is absent are left out (and reported).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.importers._read import (
    database_root,
    expect_list_of_objects,
    read_json,
    read_jsonl,
    read_lines,
)
from queryeval.importers._suite import ImportedSuite, ImportRequest

SUMMARY = "BIRD / BIRD mini-dev: dev.json with evidence and difficulty, dev_databases/"

PRESETS = ("bird", "bird_legacy")
OPTIONS = {
    "preset": "bird (queryeval's conventions, the default) or bird_legacy (the official "
    "script's verdicts: the leaderboard's figures)",
    "timeout_s": "time limit of each query, seconds (30, BIRD's meta_time_out)",
}
SCORERS = ("executes", "execution_match", "results_f1")
SKIPS_MISSING = True
SEPARATOR = "\t----- bird -----\t"
_EXAMPLES = ("dev.json", "mini_dev_sqlite.json", "mini_dev_sqlite.jsonl", "mini_dev.json")
_GOLD = ("dev.sql", "mini_dev_sqlite_gold.sql", "dev_gold.sql")
_DATABASES = ("dev_databases", "databases", "dev_databases/dev_databases")


def build(request: ImportRequest) -> ImportedSuite:
    """The suite of BIRD (see the module docstring)."""
    request.expect_options(*OPTIONS)
    preset = request.option("preset", "bird") or "bird"
    if preset not in PRESETS:
        raise InputError(f"--set preset={preset}: expected one of {', '.join(PRESETS)}")
    examples_path, gold_path, db_root = _find(request.sources)
    examples = _examples(examples_path)
    if gold_path is not None:
        _check_gold(gold_path, examples)
    timeout_s = request.number_option("timeout_s", 30.0)
    databases: dict[str, dict[str, Any]] = {}
    absent: dict[str, list[str]] = {}
    for e in examples:
        db = e["db_id"]
        if db in absent:
            continue
        if db not in databases:
            path = db_root / db / f"{db}.sqlite"
            if not path.is_file() and request.skip_missing:
                absent[db] = []
                continue
            if not path.is_file():
                raise InputError(
                    f"database {db!r} not found: expected {path} (--skip-missing leaves its "
                    "questions out)",
                    path=db_root,
                )
            databases[db] = {
                "engine": "sqlite",
                "path": str(path.resolve()),
                "options": {"timeout_s": timeout_s, "max_rows": 1_000_000},
            }
    cases = [_case(e) for e in examples]
    predictions = {}
    notes: list[str] = []
    for name, path in request.predictions:
        records, other_db = _predictions(path, cases)
        predictions[name] = records
        if other_db:
            notes.append(
                f"{name}: {other_db} prediction(s) name another database than their "
                "example's; they run on the example's (mini-dev's rule)"
            )
    suite = ImportedSuite(
        name=request.name or "bird-dev",
        cases=cases,
        databases=databases,
        predictions=predictions,
        preset=preset,
        notes=notes,
        leaderboard="bird_legacy",
    )
    for case in cases:
        if case["metadata"]["database"] in absent:
            absent[case["metadata"]["database"]].append(case["id"])
    suite.leave_out(absent)
    return suite


def _find(sources: Any) -> tuple[Path, Path | None, Path]:
    examples = gold = db_root = None
    for source in sources:
        if source.is_dir():
            if database_root(source):
                db_root = source
            for sub in _DATABASES:
                if database_root(source / sub):
                    db_root = source / sub
                    break
            examples = examples or next(
                (source / n for n in _EXAMPLES if (source / n).is_file()), None
            )
            gold = gold or next((source / n for n in _GOLD if (source / n).is_file()), None)
        elif source.suffix.lower() in {".json", ".jsonl"}:
            examples = source
        else:
            gold = source
    if examples is None:
        raise InputError("no BIRD examples (dev.json or mini_dev_sqlite.json) among the sources")
    if db_root is None:
        raise InputError("no database folder (dev_databases/<db>/<db>.sqlite) among the sources")
    return examples, gold, db_root


def _examples(path: Path) -> list[dict[str, Any]]:
    if path.suffix.lower() == ".jsonl":
        data: Any = [record for _, record in read_jsonl(path)]
    else:
        data = read_json(path)
    items = expect_list_of_objects(data, path, "examples")
    out = []
    for i, item in enumerate(items):
        where = f"item {i}"
        for key in ("db_id", "question"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise InputError(f"'{key}': expected a non-empty string", path=path, where=where)
        sql = item.get("SQL", item.get("query"))
        if not isinstance(sql, str) or not sql.strip():
            raise InputError("'SQL': expected a non-empty string", path=path, where=where)
        difficulty = item.get("difficulty")
        if difficulty is not None and not isinstance(difficulty, str):
            raise InputError("'difficulty': expected a string", path=path, where=where)
        out.append({**item, "SQL": sql, "_index": i})
    if not out:
        raise InputError("no examples", path=path)
    return out


def _check_gold(path: Path, examples: list[dict[str, Any]]) -> None:
    """The gold file must list the examples' databases in order; its SQL is what counts."""
    lines = [(n, line) for n, line in enumerate(read_lines(path), start=1) if line.strip()]
    if len(lines) != len(examples):
        raise InputError(f"{len(lines)} gold queries, but {len(examples)} examples", path=path)
    for (lineno, line), e in zip(lines, examples, strict=True):
        parts = line.strip().split("\t")
        if len(parts) != 2:
            raise InputError("expected 'SQL<TAB>db_id'", path=path, line=lineno)
        if parts[1] != e["db_id"]:
            raise InputError(
                f"database {parts[1]!r}, but the example says {e['db_id']!r}",
                path=path,
                line=lineno,
            )
        e["SQL"] = parts[0]


def _case(e: dict[str, Any]) -> dict[str, Any]:
    qid = e.get("question_id", e["_index"])
    tags = [f"db:{e['db_id']}"]
    if e.get("difficulty"):
        tags.insert(0, f"difficulty:{e['difficulty']}")
    metadata: dict[str, Any] = {"database": e["db_id"], "index": e["_index"]}
    if e.get("evidence"):
        metadata["evidence"] = e["evidence"]
    return {
        "id": str(qid),
        "tags": tags,
        "metadata": metadata,
        "conversation": [
            {
                "content": e["question"],
                "target": {"query": {"text": e["SQL"], "database": e["db_id"]}},
            }
        ],
    }


def _predictions(path: Path, cases: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError(
            'expected a JSON object {"0": "SQL\\t----- bird -----\\tdb_id", ...}', path=path
        )
    if len(data) != len(cases):
        raise InputError(f"{len(data)} predictions, but {len(cases)} examples", path=path)
    records = []
    other_db = 0
    for (key, value), case in zip(data.items(), cases, strict=True):
        if not isinstance(value, str):
            records.append({"case_id": case["id"], "query": None})
            continue
        parts = value.split(SEPARATOR)
        if len(parts) == 2:
            sql, db = parts
            other_db += db.strip() != case["metadata"]["database"]
        else:
            sql = value.strip()
        records.append({"case_id": case["id"], "query": sql})
        del key
    return records, other_db
