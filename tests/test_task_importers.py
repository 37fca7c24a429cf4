"""`queryeval import bird-critic` / `livesqlbench` on files the tests write in the published
formats (task JSONL with the ground-truth fields, SQLite files, PostgreSQL table dumps),
then `queryeval run` end to end: the default soft-EX test, a Management task's own test
functions, setup and cleanup, the official predictions' format."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from queryeval.cli import app
from queryeval.runner import load_suite, run_suite
from task_support import needs_postgres, needs_wall

RAISE_TEST = (
    "def test_case(pred_sqls, sol_sqls, db_path, conn, conditions):\n"
    "    execute_queries(pred_sqls, db_path, conn)\n"  # the prediction ran once already
    "    rows, _ = perform_query_on_sqlite_databases(\n"
    "        \"SELECT score FROM member WHERE name = 'Bo'\", db_path, conn)\n"
    "    assert rows[0][0] in (100, 110), rows\n"
)
INSTANCES: list[dict[str, Any]] = [
    {
        "instance_id": "SQLite_0",
        "db_id": "club",
        "query": "Names of Spanish members?",
        "issue_sql": ["SELECT name FROM member WHERE country = 'spain'"],
        "preprocess_sql": [],
        "sol_sql": ["SELECT name FROM member WHERE country = 'Spain'"],
        "clean_up_sql": [],
        "test_cases": [],
        "conditions": {"order": False},
    },
    {
        "instance_id": "SQLite_1",
        "db_id": "club",
        "query": "Give Bo 10 more points.",
        "issue_sql": ["UPDATE member SET score = score + '10' WHERE name = 'bo'"],
        "preprocess_sql": ["CREATE TABLE audit (note TEXT)"],
        "sol_sql": ["UPDATE member SET score = score + 10 WHERE name = 'Bo'"],
        "clean_up_sql": ["DROP TABLE audit"],
        "test_cases": [RAISE_TEST],
    },
    {
        "instance_id": "SQLite_2",
        "db_id": "club",
        "query": "Faster?",
        "issue_sql": [],
        "preprocess_sql": [],
        "sol_sql": ["SELECT 1"],
        "clean_up_sql": [],
        "test_cases": [],
        "efficiency": True,
    },
]


def _cli(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def _scores(run_dir: Path, system: str = "model") -> dict[str, Any]:
    out = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if "case_id" in record and record.get("system", system) == system:
            out[record["case_id"]] = record["scores"]["task_tests"]
    return out


def _club(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE member (id INTEGER, name TEXT, country TEXT, score INT);"
        "INSERT INTO member VALUES (1,'Ann','France',70),(2,'Bo','Spain',90),"
        "(3,'Ed','Spain',55);"
    )
    con.commit()
    con.close()


def _jsonl(path: Path, rows: list[Any]) -> Path:
    """`rows` written to `path` one JSON object a line; `path` back."""
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return path


def _preds(path: Path, pred_sqls: dict[str, list[str]]) -> Path:
    """A predictions file in the official format: one `instance_id`/`pred_sqls` a line."""
    return _jsonl(path, [{"instance_id": i, "pred_sqls": s} for i, s in pred_sqls.items()])


def _import_and_run(
    kind: str, data: Path, dbs: Path, out: Path, run_dir: Path, systems: dict[str, Path],
    *extra: Any,
) -> str:  # fmt: skip
    """`queryeval import <kind>` of `data` and `dbs` into `out` with `systems`' predictions
    (it must succeed), then its suite run into `run_dir`; the import's output back."""
    args: list[Any] = ["import", kind, data, dbs, "--out", out]
    for name, preds in systems.items():
        args += ["-p", f"{name}={preds}"]
    result = _cli(*args, *extra)
    assert result.exit_code == 0, result.output
    run_suite(load_suite(out / "suite.yaml"), run_dir, progress=False, write_reports=False)
    return str(result.output)


@needs_wall
def test_bird_critic_sqlite(tmp_path: Path) -> None:
    _club(tmp_path / "sqlite_databases" / "club" / "club.sqlite")
    before = (tmp_path / "sqlite_databases" / "club" / "club.sqlite").read_bytes()
    data = _jsonl(tmp_path / "sqlite_500.jsonl", INSTANCES)
    preds = _preds(
        tmp_path / "preds.jsonl",
        {
            "SQLite_0": ["SELECT name FROM member WHERE country = 'Spain'"],
            "SQLite_1": ["UPDATE member SET score = 0 WHERE name = 'Bo'"],
        },
    )
    gold = _preds(tmp_path / "gold.jsonl", {i["instance_id"]: i["sol_sql"] for i in INSTANCES})
    output = _import_and_run(
        "bird-critic", data, tmp_path / "sqlite_databases", tmp_path / "suite",
        tmp_path / "run", {"model": preds, "gold": gold},
    )  # fmt: skip
    assert "efficiency" in output  # left out, and said
    model = _scores(tmp_path / "run")
    assert model["SQLite_0"]["value"] == 1.0
    assert model["SQLite_1"]["value"] == 0.0
    assert "assertion" in model["SQLite_1"]["details"]["failed"][0]["message"]
    gold_scores = _scores(tmp_path / "run", "gold")
    assert {k: v["value"] for k, v in gold_scores.items()} == {"SQLite_0": 1.0, "SQLite_1": 1.0}
    assert (tmp_path / "sqlite_databases" / "club" / "club.sqlite").read_bytes() == before


@needs_wall
def test_bird_critic_legacy_items(tmp_path: Path) -> None:
    """A `pred_sqls` item holding two statements: run by default (the field's convention),
    failed under `legacy=true` as the official SQLite harness's one `execute` fails it;
    the same statements as two items pass both ways, the first ending in a line comment
    too (its joining `;` not swallowed by the comment)."""
    _club(tmp_path / "dbs" / "club" / "club.sqlite")
    data = _jsonl(tmp_path / "sqlite.jsonl", [INSTANCES[1]])
    update = "UPDATE member SET score = score + 10 WHERE name = 'Bo'"
    systems = {"joined": [f"{update}; SELECT 1"], "apart": [f"{update};", "SELECT 1"],
               "commented": [f"{update} -- ten more;", "SELECT 1"]}  # fmt: skip
    files = {n: _preds(tmp_path / f"{n}.jsonl", {"SQLite_1": sqls}) for n, sqls in systems.items()}
    verdicts = {}
    for legacy in ("false", "true"):
        run_dir = tmp_path / f"run-{legacy}"
        _import_and_run(
            "bird-critic", data, tmp_path / "dbs", tmp_path / f"suite-{legacy}", run_dir, files,
            "--set", f"legacy={legacy}",
        )  # fmt: skip
        verdicts[legacy] = {n: _scores(run_dir, n)["SQLite_1"] for n in systems}
    values = {legacy: {n: s["value"] for n, s in v.items()} for legacy, v in verdicts.items()}
    assert values["false"] == {"joined": 1.0, "apart": 1.0, "commented": 1.0}
    assert values["true"] == {"joined": 0.0, "apart": 1.0, "commented": 1.0}
    assert "one statement" in verdicts["true"]["joined"]["explanation"]


@needs_postgres
@needs_wall
def test_livesqlbench_postgres(tmp_path: Path) -> None:
    dumps = tmp_path / "postgre_table_dumps" / "club_template"
    dumps.mkdir(parents=True)
    (dumps / "member.sql").write_text(
        "CREATE TABLE member (id int, name text, score int);\n"
        "INSERT INTO member VALUES (1, 'Ann', 70), (2, 'Bo', 90);\n"
    )
    manage_test = (
        "def test_case(pred_sqls, sol_sqls, db_name, conn):\n"
        "    rows, _ = perform_query_on_postgresql_databases(\n"
        "        'SELECT sum(score) FROM member', db_name, conn=conn)\n"
        "    assert rows[0][0] == 180, rows\n"
    )
    tasks = [
        {
            "instance_id": "club_1",
            "selected_database": "club",
            "category": "Query",
            "query": "Best score?",
            "sol_sql": ["SELECT max(score) FROM member"],
            "preprocess_sql": [],
            "clean_up_sql": [],
            "test_cases": [],
            "conditions": {"decimal": 2, "distinct": False, "order": False},
        },
        {
            "instance_id": "club_M_1",
            "selected_database": "club",
            "category": "Management",
            "query": "Add 10 to every score.",
            "sol_sql": ["UPDATE member SET score = score + 10"],
            "preprocess_sql": [],
            "clean_up_sql": [],
            "test_cases": [manage_test],
        },
    ]
    data = _jsonl(tmp_path / "livesqlbench_data.jsonl", tasks)
    preds = _preds(
        tmp_path / "preds.jsonl",
        {
            "club_1": ["SELECT score FROM member ORDER BY 1 DESC LIMIT 1"],
            "club_M_1": ["UPDATE member SET score = score + 10;"],
        },
    )
    _import_and_run(
        "livesqlbench", data, tmp_path / "postgre_table_dumps", tmp_path / "suite",
        tmp_path / "run", {"model": preds},
    )  # fmt: skip
    scores = _scores(tmp_path / "run")
    assert {k: v["value"] for k, v in scores.items()} == {"club_1": 1.0, "club_M_1": 1.0}
