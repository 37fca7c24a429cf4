"""Tasks scored by tests (`task_tests`) on disposable copies, on SQLite, DuckDB and
PostgreSQL: UPDATE / INSERT / CREATE VIEW tasks, failing tests named, hostile statements
refused or bounded as the system's failures, the evaluator's broken test functions
unscored, and the user's database unchanged (checksums before and after)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from queryeval.cases import Attempt, Case, Output
from queryeval.config import ScorerConfig
from queryeval.engines import transaction_control
from queryeval.scorers import build_scorer, score_case
from task_support import KINDS, ClubContext, checksum, club_engine, needs_postgres, needs_wall

TASKS = yaml.safe_load("""
raise-spain:
  tests:
  - query: SELECT name, score FROM member WHERE country = 'Spain' ORDER BY name
    rows: [[Bo, 100], [Ed, 65]]
  - name: others unchanged
    condition: SELECT sum(score) = 150 FROM member WHERE country <> 'Spain'
add-member:
  tests:
  - query: SELECT name, country, score FROM member WHERE id = 5
    rows: [[Di, Chile, 0]]
  - condition: SELECT count(*) = 5 FROM member
spain-view:
  setup: ["UPDATE member SET score = 1 WHERE id = 1"]
  tests:
  - query: SELECT name FROM spain ORDER BY name
    rows: [[Bo], [Ed]]
  - name: setup ran first
    condition: SELECT score = 1 FROM member WHERE id = 1
""")
RIGHT = {
    "raise-spain": "UPDATE member SET score = score + 10 WHERE country = 'Spain'",
    "add-member": "INSERT INTO member VALUES (5, 'Di', 'Chile', 0)",
    "spain-view": "CREATE VIEW spain AS SELECT * FROM member WHERE country = 'Spain'",
}
WRONG = {
    "raise-spain": "UPDATE member SET score = score + 10",
    "add-member": "INSERT INTO member VALUES (5, 'Di', 'Chile', 0), (6, 'Al', 'Peru', 1)",
    "spain-view": "CREATE VIEW spain AS SELECT * FROM member",
}
_ENDLESS = (
    "WITH RECURSIVE c(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM c) "
    "INSERT INTO member SELECT g + 100, 'x', 'y', g FROM c"
)
_SPIN = (
    "CREATE FUNCTION spin() RETURNS int AS $$ BEGIN LOOP END LOOP; END $$ "
    "LANGUAGE plpgsql; SELECT spin()"
)
# hostile statements: (engines they are meant for, text); each must fail, the original kept
HOSTILE = [
    ("sqlite duckdb", "ATTACH DATABASE '{outside}' AS o; CREATE TABLE o.t (a int)"),
    ("sqlite", "VACUUM INTO '{outside}'"),
    ("sqlite", "PRAGMA writable_schema = ON"),
    ("duckdb postgres", "COPY member TO '{outside}'"),
    ("postgres", "COPY member TO PROGRAM 'touch {outside}'"),
    ("postgres", "CREATE EXTENSION dblink"),
    ("postgres", "ALTER ROLE CURRENT_USER SUPERUSER"),
    ("postgres", "CREATE ROLE intruder SUPERUSER"),
    ("postgres", "SET ROLE queryeval_admin; DELETE FROM member"),
    ("postgres", "DROP DATABASE {database}"),
    ("sqlite", _ENDLESS),
    ("duckdb", "INSERT INTO member SELECT g + 100, 'x', 'y', g FROM range(1000000000) t(g)"),
    ("postgres", "INSERT INTO member SELECT g + 100, 'x', 'y', g FROM generate_series(1, 1e10) g"),
    ("postgres", _SPIN),
]


def _case(name: str, task: dict[str, Any]) -> Case:
    target = {"task": {"database": "club", **task}}
    turn = {"role": "user", "content": name, "target": target}
    return Case.model_validate({"id": name, "conversation": [turn]})


def _score(engine: Any, case: Case, text: str, **options: Any) -> Any:
    scorer = build_scorer(ScorerConfig(name="task_tests", options=options))
    return score_case(scorer, case, Output(attempts=[Attempt(query=text)]), ClubContext(engine))


@pytest.fixture(scope="module", params=KINDS)
def engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    built = club_engine(request.param, tmp_path_factory.mktemp(request.param))
    yield built
    built.close()


def test_tasks_right_and_wrong(engine: Any) -> None:
    before = checksum(engine)
    wrongs = {}
    for name, task in TASKS.items():
        right = _score(engine, _case(name, task), RIGHT[name])
        assert (right.value, right.details["metrics"]) == (1.0, {"tests_passed": 1.0}), right
        wrong = wrongs[name] = _score(engine, _case(name, task), WRONG[name])
        assert wrong.value == 0.0 and wrong.status == "ok" and wrong.details["failed"], wrong
        assert 0.0 <= wrong.details["metrics"]["tests_passed"] < 1.0
        assert all(f["message"] for f in wrong.details["failed"])
    named = wrongs["raise-spain"]
    assert [f["name"] for f in named.details["failed"]] == ["others unchanged"]
    assert named.details["metrics"]["tests_passed"] == 0.5
    assert checksum(engine) == before
    # the read-only engine still refuses the same write
    assert engine.execute(RIGHT["raise-spain"]).outcome.kind == "refused"


def test_hostile_statements_fail_and_the_original_stays(engine: Any, tmp_path: Path) -> None:
    """Each hostile statement fails on the copy (refused by its sandbox, or stopped at the
    time limit), nothing is written outside it, the copy's data is intact; one of them
    scored is the system's failure; the original is unchanged."""
    from queryeval.engines import disposable_copy

    kind = "sqlite" if type(engine).__name__.startswith("SQLite") else (
        "duckdb" if type(engine).__name__.startswith("DuckDB") else "postgres")  # fmt: skip
    before = checksum(engine)
    tried = []
    with disposable_copy(engine) as copy:
        for engines, text in HOSTILE:
            if kind not in engines.split():
                continue
            outside = tmp_path / f"outside-{len(tried)}"
            text = text.format(outside=outside, database=getattr(engine, "database", ""))
            step = copy.run(text, system=True)
            assert step.kind in {"refused", "syntax", "timeout", "resource_limit"}, (text, step)
            assert not outside.exists(), text
            tried.append(step.kind)
            assert copy.run("SELECT count(*) FROM member").rows == [(4,)], text
    assert len(tried) >= 3 and "timeout" in tried and "refused" in tried
    score = _score(engine, _case("raise-spain", TASKS["raise-spain"]), HOSTILE[0][1].format(
        outside=tmp_path / "x", database=""))  # fmt: skip
    assert score.status == "ok" and score.value == 0.0 and score.failure_reason, score
    assert checksum(engine) == before
    if getattr(engine, "server", None) is not None:  # each copy's database and role dropped
        with engine.server.admin() as conn:
            left = conn.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE 'task\\_%' UNION ALL "
                "SELECT rolname FROM pg_roles WHERE rolname LIKE 'task\\_%'"
            ).fetchall()
        assert left == []


@needs_wall
def test_python_test_functions(engine: Any) -> None:
    """A benchmark's test function: passing, failing (assertion, named), and the
    evaluator's own trouble (a loop, unbounded memory, the network) unscored; under the
    official rule a function raising anything is a failing test."""
    passing = (
        "def test_case(pred_sqls, sol_sqls, db, conn, conditions=None):\n"
        "    sql = ['SELECT count(*) FROM member']\n"
        "    rows, err, timeout = execute_queries(sql, db, conn)\n"
        "    assert not err and rows[0][0] == 5, rows\n"
    )
    bodies = {
        "loops": "    while True:\n        pass\n",
        "allocates": "    x = []\n    while True:\n        x.append(' ' * 2**20)\n",
        "connects": "    import socket\n    socket.create_connection(('93.184.215.14', 80), 3)\n",
    }
    case = _case("py", {"tests": [{"name": "five", "python": passing}]})
    assert _score(engine, case, RIGHT["add-member"]).value == 1.0
    if getattr(engine, "server", None) is not None:  # two statements: the last one's rows
        sql = "['SELECT 1; SELECT count(*) FROM member']"
        last = f"    rows, _, _ = execute_queries({sql}, db, conn)\n"
        multi = _case("py", {"tests": [{"python": passing.split("\n")[0] + "\n" + last +
                                        "    assert rows == [(5,)], rows\n"}]})  # fmt: skip
        assert _score(engine, multi, RIGHT["add-member"]).value == 1.0  # as psycopg2 gives
    if type(engine).__name__ != "SQLiteEngine":
        return  # the child's verdicts and limits do not depend on the engine: once, on SQLite
    failing = _score(engine, case, "DELETE FROM member WHERE id = 1")
    assert failing.value == 0.0 and failing.details["failed"][0]["name"] == "five"
    for what, body in bodies.items():
        source = "def test_case(pred_sqls, sol_sqls, db, conn, conditions=None):\n" + body
        broken = _case("py", {"tests": [{"python": source}]})
        score = _score(engine, broken, RIGHT["add-member"], python_timeout_s=1,
                       python_memory="512MiB")  # fmt: skip
        assert score.status == "unscored" and score.details.get("evaluator_error"), (what, score)
    raises = _case("py", {"tests": [{"python": "def test_case(*a, **k):\n    1 / 0\n"}]})
    official = _score(engine, raises, RIGHT["add-member"], python_exceptions="fail")
    assert official.value == 0.0 and "ZeroDivisionError" in official.explanation


def test_evaluator_setup_failure_is_unscored(engine: Any) -> None:
    case = _case("bad-setup", {"setup": ["UPDATE no_such_table SET a = 1"],
                               "tests": [{"condition": "SELECT 1 = 1"}]})  # fmt: skip
    score = _score(engine, case, RIGHT["add-member"])
    assert score.status == "unscored" and "setup" in score.explanation


def test_transaction_control_found() -> None:
    assert transaction_control("UPDATE t SET a = 1; COMMIT") == "COMMIT"
    assert transaction_control("DO $$ BEGIN COMMIT; END $$") is None  # inside a body
    assert transaction_control("select ';'; end") == "END"
    assert transaction_control("ROLLBACK TO SAVEPOINT s; PREPARE TRANSACTION 'x'") == (
        "PREPARE TRANSACTION"
    )


@needs_postgres
def test_user_server_rolled_back(tmp_path: Path) -> None:
    """A user's server (a URL, no template): one transaction rolled back; a COMMIT in the
    statements is refused; the database unchanged."""
    from queryeval.engines._postgres import PostgresEngine
    from queryeval.engines._postgres_server import ADMIN

    fixture = club_engine("postgres", tmp_path)
    before = checksum(fixture)
    server = fixture.server
    user = PostgresEngine("club", fixture.limits, "x", server.conninfo(fixture.database, ADMIN))
    case = _case("raise-spain", TASKS["raise-spain"])
    assert _score(user, case, RIGHT["raise-spain"]).value == 1.0
    commit = _score(user, case, RIGHT["raise-spain"] + "; COMMIT")
    assert commit.failure_reason == "refused" and "COMMIT" in commit.explanation
    assert _score(user, case, "UPDATE member SET score = 0; DROP DATABASE postgres").value == 0.0
    assert checksum(fixture) == before
    user.close()
