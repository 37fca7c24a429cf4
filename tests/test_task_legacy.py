"""`task_tests` with `legacy` (the official BIRD-CRITIC harnesses' execution, quirks
included, cross-checked side by side by bench/bench_bird_critic.py) against the default
(the field's convention): how a test function's source is run, which helpers it sees, how
statements are split, and an instance without test cases on PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from queryeval.engines import run_python_test, split_statements
from queryeval.importers.bird_critic import task_case
from task_support import club_engine, needs_wall

_HEAD = "def test_case(pred_sqls, sol_sqls, db, conn, conditions=None):\n"


@pytest.fixture(scope="module")
def sqlite_copy(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from queryeval.engines import disposable_copy

    engine = club_engine("sqlite", tmp_path_factory.mktemp("legacy"))
    with disposable_copy(engine) as copy:
        yield copy
    engine.close()


def _run(copy: Any, source: str, legacy: bool) -> tuple[str, str]:
    return run_python_test(source, copy.access(), pred_sqls=["SELECT 1"], sol_sqls=[],
                           conditions={}, legacy=legacy, exceptions="fail")  # fmt: skip


@needs_wall
def test_legacy_exec_and_names(sqlite_copy: Any) -> None:
    """As the official harness's `exec(code, globals, locals)`: a source's top-level import
    is not seen inside `test_case`, and a SQLite test finds no PostgreSQL helper; by default
    the source is a module and every helper is there."""
    imports = "import re\n" + _HEAD + "    assert re.search('select', pred_sqls[0], re.I)\n"
    other = _HEAD + "    perform_query_on_postgresql_databases('SELECT 1', db, conn=conn)\n"
    own = _HEAD + "    rows, _ = perform_query_on_sqlite_databases('SELECT 2', db, conn=conn)\n"
    own += "    assert rows == [(2,)] and date(2020, 1, 1).year == 2020\n"
    for source in (imports, other):
        assert _run(sqlite_copy, source, legacy=False) == ("passed", "")
        status, message = _run(sqlite_copy, source, legacy=True)
        assert status == "failed" and message.startswith("NameError"), message
    assert _run(sqlite_copy, own, legacy=True) == ("passed", "")


def test_statements_split_without_comment_pieces() -> None:
    """A comment after the last semicolon is no statement (a test function would run it
    and find no rows)."""
    assert split_statements("SELECT 1; -- done", "sqlite") == ["SELECT 1"]
    assert split_statements("SELECT 1; /* a */ ; SELECT ';' -- b", "postgres") == [
        "SELECT 1",
        "SELECT ';' -- b",
    ]
    assert split_statements("-- nothing", "sqlite") == []


def test_untested_instance_legacy_postgres() -> None:
    """An instance without test cases: by default the soft-EX test; as the official
    PostgreSQL harness (legacy), solved when the prediction runs (a true condition)."""
    item = {"instance_id": "PG_1", "sol_sql": ["SELECT 1"], "test_cases": []}
    where = Path("x.jsonl")
    default = task_case(item, where, 1, database="d", question="q", default_test=False)
    assert "ex_base" in default["conversation"][0]["target"]["task"]["tests"][0]["python"]
    legacy = task_case(item, where, 1, database="d", question="q", default_test=False,
                       untested_runs=True)  # fmt: skip
    assert legacy["conversation"][0]["target"]["task"]["tests"] == [
        {"name": "no test cases: the prediction ran", "condition": "SELECT true"}
    ]


def test_livesqlbench_legacy_import(tmp_path: Path) -> None:
    """`import livesqlbench --set legacy=true`: the scorer runs as the official
    evaluation.py; a Management task without test cases is solved when the prediction
    runs, a Query task keeps the soft-EX test with its conditions."""
    import json

    from queryeval.importers import ImportRequest, importer

    dumps = tmp_path / "postgre_table_dumps" / "club_template"
    dumps.mkdir(parents=True)
    (dumps / "member.sql").write_text("CREATE TABLE member (id int);\n")
    tasks = [
        {"instance_id": "club_1", "selected_database": "club", "category": "Query",
         "sol_sql": ["SELECT 1"], "conditions": {"order": False}},
        {"instance_id": "club_M_1", "selected_database": "club", "category": "Management",
         "sol_sql": ["UPDATE member SET id = 1"], "test_cases": []},
    ]  # fmt: skip
    data = tmp_path / "livesqlbench_data.jsonl"
    data.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    for legacy in ("false", "true"):
        request = ImportRequest(sources=[data, tmp_path / "postgre_table_dumps"],
                                out=tmp_path / legacy, options={"legacy": legacy})  # fmt: skip
        suite = importer("livesqlbench").build(request)
        options = suite.suite["scorers"][0]["options"]
        tests = {c["id"]: c["conversation"][0]["target"]["task"]["tests"] for c in suite.cases}
        assert "ex_base" in tests["club_1"][0]["python"]
        if legacy == "true":
            assert options["legacy"] is True
            assert tests["club_M_1"][0]["condition"] == "SELECT true"
        else:
            assert "legacy" not in options and "ex_base" in tests["club_M_1"][0]["python"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--dialect", "sqlite"], "--official is required"),
        (["--dialect", "livesqlbench"], "--livesqlbench is required"),
        (["--dialect", "sqlite", "--official", "/no/such/repo"], "no such folder"),
    ],
)
def test_bench_asks_for_the_official_repositories(
    monkeypatch: Any, capsys: Any, tmp_path: Path, args: list[str], expected: str
) -> None:
    """bench/bench_bird_critic.py assumes no folder of one machine: the harnesses'
    repositories are required arguments, a missing one said with how to get it (exit 2)."""
    import importlib.util
    import sys

    monkeypatch.setattr(sys, "path", list(sys.path))  # the script puts src/ in front
    path = Path(__file__).resolve().parents[1] / "bench" / "bench_bird_critic.py"
    spec = importlib.util.spec_from_file_location("bench_bird_critic_args", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    with pytest.raises(SystemExit) as stop:
        bench.main(["--psycopg2", str(tmp_path), *args])
    assert stop.value.code == 2
    message = capsys.readouterr().err
    assert expected in message and "git clone https://github.com/bird-bench/" in message
