"""BIRD-CRITIC (SQLite, PostgreSQL) and LiveSQLBench side by side: the official harnesses'
own code (`evaluation/src/single_instance_eval_{sqlite,postgresql}.py` of
bird-bench/BIRD-CRITIC-1, `evaluation/src/evaluation.py` of bird-bench/livesqlbench,
unchanged) and queryeval (`import bird-critic` / `import livesqlbench`, by default and with
`legacy=true`, then a run), on the same synthetic instances and predictions, verdict by
verdict.

LiveSQLBench's harness takes `--db_host` / `--db_port`: it runs against a server as below,
`psql` & co. from the server's folder, once per prediction (over the instances having it).

SQLite: the harness runs in a folder holding `sqlite_databases_test/club/club.sqlite` and
the `club_template.sqlite` it resets it from; it imports `load_jsonl` and `split_field`
from a `utils` module its repository does not ship: a one-line `utils.py` gives it the
repository's own two functions of those names (from `postgresql_utils.py`).

BIRD-CRITIC's PostgreSQL harness expects its Docker image: a server `bird_critic_postgresql:5432`, a
superuser `root` (password 123123), a database `<db>` and its `<db>_template` (the dumps
loaded, schemas `test_schema`, `test_schema_2`, extensions `hstore`, `citext`). Here:
a PostgreSQL server started by queryeval (`PostgresServer`, 127.0.0.1) gets that role and
those databases; the harness runs unchanged, once per (instance, prediction), in a fresh
`python` whose `postgresql_utils.DEFAULT_DB_CONFIG` is pointed at that server (host, port:
its only setting) and whose `psql` / `dropdb` / `createdb` (which it calls with `-h
bird_critic_postgresql -p 5432` to reset the database from its template after each
instance) are two-line wrappers giving the server's address instead. psycopg2 (the
harness's driver, not a queryeval dependency) comes from a folder, the harnesses from their
repositories:

    git clone https://github.com/bird-bench/BIRD-CRITIC-1 BIRD-CRITIC-1
    git clone https://github.com/bird-bench/livesqlbench livesqlbench
    .venv/bin/pip install --target PG2LIB psycopg2-binary tqdm
    .venv/bin/python bench/bench_bird_critic.py --psycopg2 PG2LIB \
        --official BIRD-CRITIC-1 --livesqlbench livesqlbench  (checkouts or git dirs)

Each is required (`--dialect sqlite` or `postgresql` needs no `--livesqlbench`,
`--dialect livesqlbench` no `--official`).

Prints each verdict pair, the count of equal ones, wall and CPU seconds and the load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

SEED = """\
CREATE TABLE member (id int PRIMARY KEY, name text, country text, score int, joined date,
                     fee numeric(6,2));
INSERT INTO member VALUES (1, 'Ann', 'France', 70, '2021-03-01', 10.50),
  (2, 'Bo', 'Spain', 90, '2022-07-15', 12.00), (3, 'Ed', 'Spain', 55, '2020-01-20', 8.25),
  (4, 'Cy', 'Italy', 80, '2023-11-02', 10.50);
"""
# BIRD-CRITIC PostgreSQL test functions: `test_case(pred_sqls, sol_sqls, db_name, conn)`
EX = """def test_case(pred_sqls, sol_sqls, db_name, conn):
    pred_sqls = remove_distinct(pred_sqls)
    sol_sqls = remove_distinct(sol_sqls)
    result = ex_base(pred_sqls, sol_sqls, db_name, conn)
    assert result == 1, f"ex_base returned {result} but expected 1."
"""
SCORES = """def test_case(pred_sqls, sol_sqls, db_name, conn):
    rows, _ = perform_query_on_postgresql_databases(
        "SELECT name, score FROM member ORDER BY id", db_name, conn=conn)
    assert rows == [('Ann', 70), ('Bo', 100), ('Ed', 65), ('Cy', 80)], rows
"""
AUDIT = """def test_case(pred_sqls, sol_sqls, db_name, conn):
    rows, _ = perform_query_on_postgresql_databases("SELECT note FROM audit", db_name, conn=conn)
    assert rows == [('checked',)], rows
"""
VIEW = """def test_case(pred_sqls, sol_sqls, db_name, conn):
    rows, _ = perform_query_on_postgresql_databases(
        "SELECT name FROM spain ORDER BY name", db_name, conn=conn)
    assert rows == [('Bo',), ('Ed',)], rows
"""
BONUS = """def test_case(pred_sqls, sol_sqls, db_name, conn):
    assert check_sql_function_usage(pred_sqls, ["CREATE OR REPLACE"]) == 1, "not replaced"
    rows, _ = perform_query_on_postgresql_databases("SELECT bonus(90)", db_name, conn=conn)
    assert rows[0][0] == 99, rows
"""
BUGGY = """def test_case(pred_sqls, sol_sqls, db_name, conn):
    rows, _ = perform_query_on_postgresql_databases("SELECT 1", db_name, conn=conn)
    assert rowz == [(1,)]
"""
SPAIN = "SELECT name FROM member WHERE country = 'Spain'"
RAISE = "UPDATE member SET score = score + 10 WHERE country = 'Spain'"
FUNC = "CREATE {} FUNCTION bonus(s int) RETURNS int AS $$ SELECT {} $$ LANGUAGE sql"


def _raise_task(test: str, **fields: Any) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The Spanish members' raise checked by `test`, and its predictions: right, wrong,
    an error, two statements in one item, two items (each half the raise)."""
    task = {**fields, "query": "Give Spanish members 10 more points.", "sol_sql": [RAISE],
            "test_cases": [test]}  # fmt: skip
    half = RAISE.replace("10", "5")
    return task, {
        "right": [RAISE],
        "wrong": ["UPDATE member SET score = score + 10"],
        "error": ["UPDATE member SET scor = scor + 10"],
        "multi": [RAISE + "; SELECT 1"],
        "items": [half, half],
    }


# instance id -> (fields, {prediction name: pred_sqls})
INSTANCES: dict[str, tuple[dict[str, Any], dict[str, list[str]]]] = {
    "PG_0": (
        {"query": "Names of Spanish members?", "sol_sql": [SPAIN], "test_cases": [EX]},
        {
            "right": [SPAIN + " ORDER BY name DESC"],
            "distinct": ["SELECT DISTINCT name FROM member WHERE country = 'Spain'"],
            "wrong": ["SELECT name FROM member"],
            "error": ["SELECT nam FROM member"],
            "multi": ["SELECT 1; " + SPAIN],
        },
    ),
    "PG_1": (
        {
            "query": "Who joined after 2021, and when?",
            "sol_sql": ["SELECT name, joined FROM member WHERE joined > '2021-01-01'"],
            "test_cases": [EX],
        },
        {
            "right": ["SELECT name, joined::text FROM member WHERE joined > date '2021-01-01'"],
            "wrong": ["SELECT name, joined FROM member WHERE joined > '2020-01-01'"],
            "error": ["SELECT name, joined FROM member WHERE joined > 'soon'"],
        },
    ),
    "PG_2": (
        {
            "query": "Fees by country?",
            "sol_sql": ["SELECT country, sum(fee) FROM member GROUP BY country"],
            "test_cases": [EX],
        },
        {
            "right": ["SELECT country, sum(fee)::float FROM member GROUP BY 1"],
            "rounded": ["SELECT country, round(sum(fee), 1) FROM member GROUP BY 1"],
            "wrong": ["SELECT country, avg(fee) FROM member GROUP BY 1"],
        },
    ),
    "PG_3": _raise_task(SCORES),
    "PG_4": (
        {
            "query": "Write 'checked' in the audit.",
            "preprocess_sql": ["CREATE TABLE audit (note text)"],
            "sol_sql": ["INSERT INTO audit VALUES ('checked')"],
            "clean_up_sql": ["DROP TABLE audit"],
            "test_cases": [AUDIT],
        },
        {
            "right": ["INSERT INTO audit VALUES ('checked')"],
            "wrong": ["INSERT INTO audit VALUES ('checked'), ('checked')"],
            "error": ["INSERT INTO audits VALUES ('checked')"],
        },
    ),
    "PG_5": (
        {
            "query": "A view of the Spanish members.",
            "sol_sql": ["CREATE VIEW spain AS SELECT * FROM member WHERE country = 'Spain'"],
            "test_cases": [VIEW],
        },
        {
            "right": ["CREATE VIEW spain AS SELECT name FROM member WHERE country = 'Spain'"],
            "wrong": ["CREATE VIEW spain AS SELECT * FROM member"],
            "error": ["CREATE VIEW spain AS SELECT * FROM members"],
        },
    ),
    "PG_6": (
        {
            "query": "The bonus must be 10% of the score.",
            "preprocess_sql": [FUNC.format("", "s + 1")],
            "issue_sql": [FUNC.format("OR REPLACE", "s + 10")],
            "sol_sql": [FUNC.format("OR REPLACE", "s + s / 10")],
            "test_cases": [BONUS],
        },
        {
            "right": [FUNC.format("OR REPLACE", "s + s / 10")],
            "wrong": [FUNC.format("OR REPLACE", "s + 10")],
            "dropped": ["DROP FUNCTION bonus(int)", FUNC.format("", "s + s / 10")],
            "error": [FUNC.format("OR REPLACE", "s + t / 10")],
        },
    ),
    "PG_7": (
        {
            "query": "Count members.",
            "sol_sql": ["SELECT count(*) FROM member"],
            "test_cases": [BUGGY],
        },
        {"right": ["SELECT count(*) FROM member"]},
    ),
    "PG_9": (
        {
            "query": "Names of Spanish members?",
            "sol_sql": [SPAIN],
            "test_cases": [
                "import re\n"
                + EX.replace(
                    "    pred_sqls = remove_distinct",
                    "    assert re.search('spain', pred_sqls[0], re.I)\n    pred_sqls = "
                    "remove_distinct",
                )
            ],
        },  # a top-level import, unseen officially
        {"right": [SPAIN]},
    ),
    "PG_8": (
        {"query": "Best score?", "sol_sql": ["SELECT max(score) FROM member"], "test_cases": []},
        {"right": ["SELECT max(score) FROM member"], "wrong": ["SELECT min(score) FROM member"]},
    ),
}

SQLITE_SEED = """\
CREATE TABLE member (id INTEGER PRIMARY KEY, name TEXT, country TEXT, score INT, joined TEXT,
                     fee REAL);
INSERT INTO member VALUES (1, 'Ann', 'France', 70, '2021-03-01', 10.5),
  (2, 'Bo', 'Spain', 90, '2022-07-15', 12.0), (3, 'Ed', 'Spain', 55, '2020-01-20', 8.25),
  (4, 'Cy', 'Italy', 80, '2023-11-02', 10.5);
"""


# BIRD-CRITIC SQLite test functions: `test_case(pred_sqls, sol_sqls, db_path, conn, conditions)`;
# no test cases: the official default (soft EX with `conditions`)
def _sqlite(test: str) -> str:
    """A PostgreSQL test function above as the SQLite harness calls it."""
    test = test.replace("db_name, conn)", "db_path, conn, conditions)")
    return test.replace("db_name, conn=conn", "db_path, conn=conn").replace("postgresql", "sqlite")


S_SCORES, S_AUDIT, S_VIEW, S_BUGGY = map(_sqlite, (SCORES, AUDIT, VIEW, BUGGY))
S_COALESCE = """def test_case(pred_sqls, sol_sqls, db_path, conn, conditions):
    assert check_sql_function_usage(pred_sqls, ["coalesce"]) == 1, "no COALESCE"
    assert ex_base(pred_sqls, sol_sqls, db_path, conn, conditions) == 1, "not the same rows"
"""
# the official exec's quirks: a source's top-level import is not seen inside test_case; a
# SQLite test calling the PostgreSQL helper finds no such name
S_IMPORT = """import re
def test_case(pred_sqls, sol_sqls, db_path, conn, conditions):
    assert re.search("spain", pred_sqls[0], re.I), pred_sqls
"""
S_OTHER = """def test_case(pred_sqls, sol_sqls, db_path, conn, conditions):
    rows, _ = perform_query_on_postgresql_databases("SELECT 1", db_path, conn=conn)
"""
S_AVG = "SELECT country, ROUND(AVG(fee), 2) FROM member GROUP BY country"
SQLITE_INSTANCES: dict[str, tuple[dict[str, Any], dict[str, list[str]]]] = {
    "SQLite_0": (
        {"query": "Names of Spanish members?", "sol_sql": [SPAIN], "conditions": {"order": False}},
        {
            "right": [SPAIN + " ORDER BY name DESC"],
            "distinct": ["SELECT DISTINCT name FROM member WHERE country = 'Spain'"],
            "wrong": ["SELECT name FROM member"],
            "error": ["SELECT nam FROM member"],
            "multi": ["SELECT 1; " + SPAIN],
            "comment": [SPAIN + "; -- the Spanish ones"],
        },
    ),
    "SQLite_1": (
        {
            "query": "Members by score, best first.",
            "conditions": {"order": True},
            "sol_sql": ["SELECT name FROM member ORDER BY score DESC"],
        },
        {
            "right": ["SELECT name FROM member ORDER BY score DESC, name"],
            "wrong": ["SELECT name FROM member ORDER BY score"],
        },
    ),
    "SQLite_2": (
        {"query": "Average fee by country?", "sol_sql": [S_AVG], "conditions": {"order": False}},
        {
            "right": ["SELECT country, AVG(fee) FROM member GROUP BY 1"],
            "rounded": ["SELECT country, ROUND(AVG(fee), 1) FROM member GROUP BY 1"],
            "wrong": ["SELECT country, SUM(fee) FROM member GROUP BY 1"],
        },
    ),
    "SQLite_3": _raise_task(S_SCORES),
    "SQLite_4": (
        {
            "query": "Write 'checked' in the audit.",
            "preprocess_sql": ["CREATE TABLE audit (note TEXT)"],
            "sol_sql": ["INSERT INTO audit VALUES ('checked')"],
            "clean_up_sql": ["DROP TABLE audit"],
            "test_cases": [S_AUDIT],
        },
        {
            "right": ["INSERT INTO audit VALUES ('checked')"],
            "wrong": ["INSERT INTO audit VALUES ('checked'), ('checked')"],
            "error": ["INSERT INTO audits VALUES ('checked')"],
        },
    ),
    "SQLite_5": (
        {
            "query": "A view of the Spanish members.",
            "sol_sql": ["CREATE VIEW spain AS SELECT * FROM member WHERE country = 'Spain'"],
            "test_cases": [S_VIEW],
        },
        {
            "right": ["CREATE VIEW spain AS SELECT name FROM member WHERE country = 'Spain'"],
            "wrong": ["CREATE VIEW spain AS SELECT * FROM member"],
            "multi": ["DROP VIEW IF EXISTS spain; CREATE VIEW spain AS " + SPAIN],
        },
    ),
    "SQLite_6": (
        {
            "query": "Scores, 0 where none, with COALESCE.",
            "preprocess_sql": ["UPDATE member SET score = NULL WHERE id = 3"],
            "sol_sql": ["SELECT name, COALESCE(score, 0) FROM member"],
            "test_cases": [S_COALESCE],
        },
        {
            "right": ["SELECT name, coalesce(score, 0) FROM member"],
            "ifnull": ["SELECT name, IFNULL(score, 0) FROM member"],
            "wrong": ["SELECT name, COALESCE(score, 1) FROM member"],
        },
    ),
    "SQLite_8": (
        {"query": "Names of Spanish members?", "sol_sql": [SPAIN], "test_cases": [S_IMPORT]},
        {"right": [SPAIN]},
    ),
    "SQLite_9": (
        {"query": "Names of Spanish members?", "sol_sql": [SPAIN], "test_cases": [S_OTHER]},
        {"right": [SPAIN]},
    ),
    "SQLite_7": (
        {
            "query": "Count members.",
            "sol_sql": ["SELECT count(*) FROM member"],
            "test_cases": [S_BUGGY],
        },
        {"right": ["SELECT count(*) FROM member"]},
    ),
}
# LiveSQLBench (`evaluation/src/evaluation.py` of bird-bench/livesqlbench): a Query task by the
# default soft-EX test with `conditions` (its own test_cases ignored), a Management task by
# its test cases, `test_case(pred_sqls, sol_sqls, db_name, conn)`
QUERY = {"category": "Query", "conditions": {"decimal": 2, "distinct": False, "order": False}}
MANAGE = {"category": "Management"}
DATED = SCORES.replace("    rows, _", "    assert date(2020, 1, 1).year == 2020\n    rows, _")
LIVE_INSTANCES: dict[str, tuple[dict[str, Any], dict[str, list[str]]]] = {
    "club_1": (
        {**QUERY, "query": "Names of Spanish members?", "sol_sql": [SPAIN]},
        {
            "right": [SPAIN + " ORDER BY name DESC"],
            "distinct": ["SELECT DISTINCT name FROM member WHERE country = 'Spain'"],
            "wrong": ["SELECT name FROM member"],
            "error": ["SELECT nam FROM member"],
            "multi": ["SELECT 1; " + SPAIN],
        },
    ),
    "club_2": (
        {
            **QUERY,
            "conditions": {"decimal": 2, "distinct": False, "order": True},
            "query": "Members by score, best first.",
            "sol_sql": ["SELECT name FROM member ORDER BY score DESC"],
        },
        {
            "right": ["SELECT name FROM member ORDER BY score DESC, name"],
            "wrong": ["SELECT name FROM member ORDER BY score"],
        },
    ),
    "club_3": (
        {
            **QUERY,
            "query": "Average fee by country?",
            "sol_sql": ["SELECT country, ROUND(AVG(fee), 2) FROM member GROUP BY country"],
        },
        {
            "right": ["SELECT country, AVG(fee) FROM member GROUP BY 1"],
            "rounded": ["SELECT country, ROUND(AVG(fee), 1) FROM member GROUP BY 1"],
            "wrong": ["SELECT country, SUM(fee) FROM member GROUP BY 1"],
        },
    ),
    "club_M_1": _raise_task(SCORES, **MANAGE),
    "club_M_2": (
        {
            **MANAGE,
            "query": "Give Spanish members 10 more points.",
            "sol_sql": [RAISE],
            "test_cases": [DATED],
        },  # `date` is not among the harness's globals
        {"right": [RAISE]},
    ),
    "club_M_3": (
        {**MANAGE, "query": "Give Spanish members 10 more points.", "sol_sql": [RAISE]},
        {"right": [RAISE], "wrong": ["UPDATE member SET score = 0"]},  # no test cases
    ),
    "club_M_4": (
        {
            **MANAGE,
            "query": "A view of the Spanish members.",
            "sol_sql": ["CREATE VIEW spain AS SELECT * FROM member WHERE country = 'Spain'"],
            "test_cases": [VIEW],
        },
        {
            "right": ["CREATE VIEW spain AS SELECT name FROM member WHERE country = 'Spain'"],
            "wrong": ["CREATE VIEW spain AS SELECT * FROM member"],
        },
    ),
}
DIALECTS = {"postgresql": INSTANCES, "sqlite": SQLITE_INSTANCES, "livesqlbench": LIVE_INSTANCES}

WRAPPER = """#!/bin/sh
# {name} as the official harness calls it (-h bird_critic_postgresql -p 5432), on our server
n=$#; prev=
for a do
  case "$prev" in -h) a=127.0.0.1 ;; -p) a={port} ;; esac
  set -- "$@" "$a"; prev=$a
done
shift $n
exec {binary} "$@"
"""
DRIVER = """import runpy, sys
sys.path.insert(0, {src!r})
import postgresql_utils
postgresql_utils.DEFAULT_DB_CONFIG.update(host="127.0.0.1", port={port})
sys.argv = ["single_instance_eval_{dialect}.py"] + sys.argv[1:]
runpy.run_path({script!r}, run_name="__main__")
"""
# the SQLite harness imports `load_jsonl`, `split_field` from a `utils` module its repository
# lacks: the same two functions of its PostgreSQL module are given under that name
UTILS = "from postgresql_utils import load_jsonl, split_field\n"


def _official_source(official: Path, into: Path) -> Path:
    """evaluation/src of the official repository (a checkout, or a bare git dir: its files
    read with `git show`)."""
    if (official / "evaluation" / "src").is_dir():
        return official / "evaluation" / "src"
    git = ["git", f"--git-dir={official}"]
    listed = subprocess.run([*git, "ls-tree", "--name-only", "HEAD", "evaluation/src/"],
                            capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    src = into / "evaluation" / "src"
    src.mkdir(parents=True)
    for name in (n for n in listed if n.endswith(".py")):
        text = subprocess.run([*git, "show", f"HEAD:{name}"], capture_output=True,
                              check=True).stdout  # fmt: skip
        (src / Path(name).name).write_bytes(text)
    return src


def _record(dialect: str, iid: str, preds: list[str]) -> dict[str, Any]:
    fields, _ = DIALECTS[dialect][iid]
    issue = ["SELECT no_such_column FROM member"]  # the issue fails the tests, as it must
    base = {"instance_id": iid, "db_id": "club", "dialect": dialect, "issue_sql": issue,
            "preprocess_sql": [], "clean_up_sql": [], "test_cases": [], **fields}  # fmt: skip
    if dialect == "livesqlbench":
        base = {k: v for k, v in base.items() if k not in ("db_id", "dialect", "issue_sql")}
        base["selected_database"] = "club"
    return {**base, "pred_sqls": preds}


def _harness(dialect: str, driver: Path, env: dict[str, str], folder: Path) -> dict[Any, bool]:
    """Each (instance, prediction) through the official single-instance script."""
    verdicts = {}
    for iid, (_, preds) in DIALECTS[dialect].items():
        for name, sqls in preds.items():
            given, out = folder / f"{iid}-{name}.jsonl", folder / f"{iid}-{name}.out.json"
            given.write_text(json.dumps(_record(dialect, iid, sqls)) + "\n")
            done = subprocess.run(
                [sys.executable, str(driver), "--jsonl_file", str(given), "--output_file",
                 str(out), "--mode", "pred"],
                env=env, cwd=folder, capture_output=True, text=True, check=False, timeout=300,
            )  # fmt: skip
            if not out.exists():
                raise SystemExit(f"the official harness wrote nothing for {iid}/{name}:\n"
                                 f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")  # fmt: skip
            verdicts[iid, name] = json.loads(out.read_text())["status"] == "success"
    return verdicts


def run_official_sqlite(src: Path, psycopg2: Path, folder: Path) -> dict[Any, bool]:
    """The official SQLite harness on `./sqlite_databases_test/club/club.sqlite` (reset
    from `club_template.sqlite` beside it, as the harness does)."""
    import sqlite3

    base = folder / "sqlite_databases_test" / "club"
    base.mkdir(parents=True)
    con = sqlite3.connect(base / "club_template.sqlite")
    con.executescript(SQLITE_SEED)
    con.close()
    (base / "club.sqlite").write_bytes((base / "club_template.sqlite").read_bytes())
    (folder / "utils.py").write_text(UTILS)
    driver = folder / "driver.py"
    script = src / "single_instance_eval_sqlite.py"
    driver.write_text(DRIVER.format(src=str(src), port=0, script=str(script), dialect="sqlite"))
    env = {**os.environ, "PYTHONPATH": f"{folder}:{psycopg2}"}
    return _harness("sqlite", driver, env, folder)


def _server(folder: Path) -> Any:
    """A server of ours as the official Docker images have it: a superuser `root`
    (password 123123), `club_template` with the dumps and the template's extras."""
    from queryeval.engines._postgres_server import PostgresServer

    folder.mkdir(parents=True)
    server = PostgresServer().start()
    with server.admin() as conn:
        conn.execute("CREATE ROLE root SUPERUSER LOGIN PASSWORD '123123'")
        conn.execute("CREATE DATABASE club_template OWNER root TEMPLATE template0")
    seed = folder / "seed.sql"
    seed.write_text("CREATE SCHEMA IF NOT EXISTS test_schema;\nCREATE SCHEMA IF NOT EXISTS "
                    "test_schema_2;\nCREATE EXTENSION IF NOT EXISTS hstore;\nCREATE "
                    "EXTENSION IF NOT EXISTS citext;\n" + SEED)  # fmt: skip
    server.psql("club_template", seed)
    return server


def run_official_postgres(src: Path, psycopg2: Path, folder: Path) -> dict[Any, bool]:
    """The official PostgreSQL harness on a server of ours (see the module docstring)."""
    server = _server(folder)
    try:
        assert server.bin_dir is not None
        with server.admin() as conn:
            conn.execute("CREATE DATABASE club OWNER root TEMPLATE club_template")
        bin_dir = folder / "bin"
        bin_dir.mkdir()
        for name in ("psql", "dropdb", "createdb"):
            path = bin_dir / name
            path.write_text(WRAPPER.format(name=name, port=server.port,
                                           binary=server.bin_dir / name))  # fmt: skip
            path.chmod(0o755)
        driver = folder / "driver.py"
        script = src / "single_instance_eval_postgresql.py"
        driver.write_text(DRIVER.format(src=str(src), port=server.port, script=str(script),
                                        dialect="postgresql"))  # fmt: skip
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
               "PYTHONPATH": str(psycopg2)}  # fmt: skip
        return _harness("postgresql", driver, env, folder)
    finally:
        server.stop()


def run_official_livesqlbench(src: Path, deps: Path, folder: Path) -> dict[Any, bool]:
    """LiveSQLBench's `evaluation.py`, unchanged (its `--db_host`, `--db_port` given), once
    per prediction over the instances that have one; psql & co. from the server's folder."""
    server = _server(folder)
    try:
        env = {**os.environ, "PATH": f"{server.bin_dir}:{os.environ['PATH']}",
               "PYTHONPATH": str(deps)}  # fmt: skip
        names = sorted({n for _, preds in LIVE_INSTANCES.values() for n in preds})
        verdicts = {}
        for name in names:
            given = folder / f"{name}.jsonl"
            records = [_record("livesqlbench", i, p[name])
                       for i, (_, p) in LIVE_INSTANCES.items() if name in p]  # fmt: skip
            given.write_text("".join(json.dumps(r) + "\n" for r in records))
            done = subprocess.run(
                [sys.executable, str(src / "evaluation.py"), "--jsonl_file", str(given),
                 "--num_threads", "1", "--logging", "true", "--db_host", "127.0.0.1",
                 "--db_port", str(server.port), "--output_dir", str(folder / "out")],
                env=env, cwd=folder, capture_output=True, text=True, check=False, timeout=600,
            )  # fmt: skip
            out = folder / "out" / name / "output_with_status.jsonl"
            if not out.exists():
                raise SystemExit(f"evaluation.py wrote nothing for {name}:\n"
                                 f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")  # fmt: skip
            for line in out.read_text().splitlines():
                record = json.loads(line)
                verdicts[record["instance_id"], name] = record["status"] == "success"
        return verdicts
    finally:
        server.stop()


def run_queryeval(dialect: str, folder: Path, legacy: bool) -> dict[Any, bool]:
    """The same instances through `queryeval import bird-critic` and a run."""
    import sqlite3

    from queryeval.importers import ImportRequest, run_import
    from queryeval.runner import load_suite, run_suite

    instances = DIALECTS[dialect]
    if dialect == "sqlite":
        databases = folder / "sqlite_databases"
        (databases / "club").mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(databases / "club" / "club.sqlite")
        con.executescript(SQLITE_SEED)
        con.close()
    else:
        databases = folder / "postgre_table_dumps"
        (databases / "club_template").mkdir(parents=True, exist_ok=True)
        (databases / "club_template" / "member.sql").write_text(SEED)
    data = folder / f"bird_critic_{dialect}.jsonl"
    data.write_text("".join(json.dumps(_record(dialect, i, [])) + "\n" for i in instances))
    names = sorted({n for _, preds in instances.values() for n in preds})
    predictions = []
    for name in names:
        path = folder / f"preds-{name}.jsonl"
        path.write_text("".join(json.dumps({"instance_id": i, "pred_sqls": p[name]}) + "\n"
                                for i, (_, p) in instances.items() if name in p))  # fmt: skip
        predictions.append((name, path))
    out = folder / f"suite-{legacy}"
    options = {"legacy": str(legacy).lower()}
    if dialect != "livesqlbench":
        options["dialect"] = dialect
    request = ImportRequest(sources=[data, databases], out=out,
                            predictions=predictions, options=options)  # fmt: skip
    run_import("livesqlbench" if dialect == "livesqlbench" else "bird-critic", request)
    run_dir = folder / f"run-{legacy}"
    run_suite(load_suite(out / "suite.yaml"), run_dir, progress=False, write_reports=False)
    verdicts = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        score = record.get("scores", {}).get("task_tests")
        if "case_id" in record and score is not None:
            verdicts[record["case_id"], record["system"]] = score.get("value") == 1.0
    return verdicts


OFFICIAL = "the bird-bench/BIRD-CRITIC-1 repository (a checkout or a git dir)"
FETCH_OFFICIAL = "git clone https://github.com/bird-bench/BIRD-CRITIC-1"
LIVE = "the bird-bench/livesqlbench repository (a checkout or a git dir)"
FETCH_LIVE = "git clone https://github.com/bird-bench/livesqlbench"
FETCH_PSYCOPG2 = "make one with `.venv/bin/pip install --target FOLDER psycopg2-binary tqdm`"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", type=Path, help=f"{OFFICIAL} ({FETCH_OFFICIAL})")
    parser.add_argument("--psycopg2", type=Path, required=True,
                        help=f"a folder holding psycopg2 ({FETCH_PSYCOPG2})")  # fmt: skip
    parser.add_argument("--livesqlbench", type=Path, help=f"{LIVE} ({FETCH_LIVE})")
    parser.add_argument("--dialect", default="all",
                        choices=["sqlite", "postgresql", "livesqlbench", "all"])  # fmt: skip
    args = parser.parse_args(argv)
    dialects = list(DIALECTS) if args.dialect == "all" else [args.dialect]
    needed = {"official": (args.official, OFFICIAL, FETCH_OFFICIAL, {"sqlite", "postgresql"}),
              "livesqlbench": (args.livesqlbench, LIVE, FETCH_LIVE, {"livesqlbench"})}  # fmt: skip
    for flag, (given, what, fetch, users) in needed.items():
        if users & set(dialects) and (given is None or not given.exists()):
            found = "is required" if given is None else f"{given}: no such folder"
            parser.error(f"--{flag} {found}: {what}; get it with `{fetch}`")
    if not args.psycopg2.is_dir():
        parser.error(f"--psycopg2 {args.psycopg2}: no such folder; {FETCH_PSYCOPG2}")
    load = os.getloadavg()
    start, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = []
    with tempfile.TemporaryDirectory(prefix="qe-bench-critic-") as tmp:
        folder = Path(tmp)
        src = _official_source(args.official.resolve(), folder / "bird-critic")
        live = _official_source(args.livesqlbench.resolve(), folder / "livesqlbench")
        runs = {"sqlite": (run_official_sqlite, src), "postgresql": (run_official_postgres, src),
                "livesqlbench": (run_official_livesqlbench, live)}  # fmt: skip
        for dialect in dialects:
            run, source = runs[dialect]
            official = run(source, args.psycopg2.resolve(), folder / f"official-{dialect}")
            ours = {legacy: run_queryeval(dialect, folder / f"qe-{dialect}-{legacy}", legacy)
                    for legacy in (False, True)}  # fmt: skip
            print(f"\n{dialect}\n{'instance':10} {'prediction':10} official queryeval legacy")
            for key, verdict in official.items():
                row = [verdict, ours[False].get(key), ours[True].get(key)]
                flags = "" if row[0] == row[1] == row[2] else "  <- differs"
                print(f"{key[0]:10} {key[1]:10} " + " ".join(f"{v!s:8}" for v in row) + flags)
            for legacy, verdicts in ours.items():
                same = sum(verdicts.get(k) == v for k, v in official.items())
                side = "queryeval legacy" if legacy else "queryeval"
                summary.append(f"{dialect}, {side}: {same} of {len(official)} verdicts equal "
                               "to the official harness's")  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
    cpu_s += own.ru_utime + own.ru_stime
    print("\n" + "\n".join(summary))
    print(f"wall {wall:.1f}s, CPU {cpu_s:.1f}s, load {load} -> {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
