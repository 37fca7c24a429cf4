"""Prompts of model systems: schemas rendered from the engines themselves, the shipped
templates and user overrides, few-shot examples, and template errors naming file and line."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from queryeval.cases import Case
from queryeval.config import SuiteConfig
from queryeval.engines import describe_schema, engine_from_context
from queryeval.engines._describe import kql_schema
from queryeval.errors import InputError
from queryeval.runner import load_suite
from queryeval.scorers import ScoringContext
from queryeval.systems import ModelSystem, builtin_prompt, case_task, load_prompt
from systems_support import ROOT, write_suite

VARIABLES = {
    "question": "How many?",
    "conversation": [],
    "schema": "CREATE TABLE t (a INT);",
    "task": "sql",
    "language": "sql",
    "dialect": "duckdb",
    "database": "db",
    "examples": [],
    "case_id": "c1",
    "tags": [],
    "metadata": {},
}


def context(suite_path: Path, tmp_path: Path) -> ScoringContext:
    return ScoringContext(load_suite(suite_path), cache_dir=tmp_path / "cache")


def test_sql_schemas_are_the_engines_ddl(tmp_path: Path) -> None:
    ctx = context(ROOT / "examples" / "sql" / "suite.yaml", tmp_path)
    try:
        duck = describe_schema(engine_from_context(ctx, "sales"))
        lite = describe_schema(engine_from_context(ctx, "sales_sqlite"))
    finally:
        ctx.close()
    tables = ["customers", "orders", "order_items", "products", "sensor_readings"]
    for ddl in (duck, lite):
        assert all(f"CREATE TABLE {t}" in ddl for t in tables)
    assert "order_id INTEGER PRIMARY KEY" in duck and "DECIMAL(10,2)" in duck
    assert "order_id INTEGER PRIMARY KEY" in lite
    # the DDL is real: it builds the same tables in an empty database
    con = sqlite3.connect(":memory:")
    con.executescript(lite)
    assert {r[0] for r in con.execute("SELECT name FROM sqlite_master")} == set(tables)


def test_sqlalchemy_schemas_keep_keys(tmp_path: Path) -> None:
    db = tmp_path / "shop.sqlite"
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE a (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
        "CREATE TABLE b (id INTEGER PRIMARY KEY, a_id INTEGER REFERENCES a(id));"
    )
    con.close()
    suite = SuiteConfig.model_validate(
        {
            "name": "s",
            "cases": "x",
            "systems": [{"name": "p", "predictions": "p.jsonl"}],
            "databases": {"shop": {"engine": "sqlalchemy", "url": f"sqlite:///{db}"}},
        }
    )
    ctx = ScoringContext(suite, tmp_path / "cache")
    try:
        ddl = describe_schema(engine_from_context(ctx, "shop"))
    finally:
        ctx.close()
    assert "CREATE TABLE a" in ddl and "PRIMARY KEY (id)" in ddl
    assert "FOREIGN KEY(a_id) REFERENCES a (id)" in ddl


def test_kql_schemas_use_kusto_types_and_say_the_clock(tmp_path: Path) -> None:
    ctx = context(ROOT / "examples" / "kql" / "suite.yaml", tmp_path)
    try:
        text = describe_schema(engine_from_context(ctx, "logs"))
    finally:
        ctx.close()
    assert "Logs (Timestamp: datetime, Level: string, Service: string" in text
    assert "DurationMs: real, StatusCode: long" in text
    assert "now() is 2024-06-01T12:00:00" in text
    assert kql_schema({"tables": {"T": {"x": "dynamic", "y": "DECIMAL(18,3)"}}}) == (
        "T (x: dynamic, y: decimal)"
    )


def test_shipped_templates_render_every_task() -> None:
    for task in ("sql", "kql", "cypher", "weaviate", "sdmx", "answer"):
        messages = builtin_prompt(task).render({**VARIABLES, "task": task})
        assert [m["role"] for m in messages] == ["system", "user"]
        assert messages[1]["content"].endswith("Question: How many?")
    turns = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    examples = [{"question": "Q1?", "output": "SELECT 1"}]
    rendered = builtin_prompt("sql").render(
        {**VARIABLES, "examples": examples, "conversation": turns}
    )
    sql = rendered[1]["content"]
    assert (
        sql.index("CREATE TABLE t")
        < sql.index("Q1?")
        < sql.index("user: hi")
        < sql.index("Question: How many?")
    )
    assert "```sql\nSELECT 1\n```" in sql


def test_user_templates_with_and_without_blocks(tmp_path: Path) -> None:
    plain = tmp_path / "plain.j2"
    plain.write_text("Schema: {{ schema }}\nQ: {{ question }}")
    assert load_prompt(plain).render(VARIABLES) == [
        {"role": "user", "content": "Schema: CREATE TABLE t (a INT);\nQ: How many?"}
    ]
    blocks = tmp_path / "blocks.j2"
    blocks.write_text(
        "{% block system %}Be {{ dialect }}.{% endblock %}"
        "{% block user %}{{ question }}{% endblock %}"
    )
    assert load_prompt(blocks).render(VARIABLES) == [
        {"role": "system", "content": "Be duckdb."},
        {"role": "user", "content": "How many?"},
    ]


def test_template_errors_name_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.j2"
    bad.write_text("line one\n{% if question %}\nno end")
    with pytest.raises(InputError) as err:
        load_prompt(bad)
    assert err.value.path == str(bad) and err.value.line == 3
    unknown = tmp_path / "unknown.j2"
    unknown.write_text("{{ questoin }}")
    with pytest.raises(InputError, match=r"unknown variable.*questoin"):
        load_prompt(unknown)
    sandboxed = tmp_path / "sandboxed.j2"
    sandboxed.write_text("{{ question.__class__.__mro__ }}")
    with pytest.raises(Exception, match=r"unsafe|__class__"):
        load_prompt(sandboxed).render(VARIABLES)


def cases_of(questions: list[str]) -> list[Case]:
    return [
        Case.model_validate(
            {
                "id": f"c{i}",
                "conversation": [
                    {
                        "content": q,
                        "target": {"query": {"text": f"SELECT {i}", "database": "sales"}},
                    }
                ],
            }
        )
        for i, q in enumerate(questions)
    ]


def test_few_shot_examples_never_show_the_case_itself(tmp_path: Path) -> None:
    questions = ["A?", "B?", "C?", "D?", "A?"]  # c4 asks what c0 asks
    cases = cases_of(questions)
    path = write_suite(
        tmp_path,
        {"name": "gpt", "model": {"model": "m", "api_key_env": None}, "examples": {"count": 3}},
    )
    suite = load_suite(path)
    system = ModelSystem(suite.systems[0], suite, where="systems[0]", cases=cases)
    assert system.examples is not None
    for case in cases:
        task = case_task(case, suite, suite.systems[0])
        shown = system.examples.for_case(case, task)
        assert len(shown) == 3
        assert all(ex["question"] != case.question for ex in shown)
        assert shown == system.examples.for_case(case, task)  # the same in every run
        assert all(ex["output"].startswith("SELECT ") for ex in shown)
    # outputs are each example's gold
    shown = system.examples.for_case(cases[1], case_task(cases[1], suite, suite.systems[0]))
    assert {ex["output"] for ex in shown} <= {"SELECT 0", "SELECT 2", "SELECT 3", "SELECT 4"}


def test_the_task_comes_from_the_gold_or_the_database(tmp_path: Path) -> None:
    suite = load_suite(ROOT / "examples" / "kql" / "suite.yaml")
    case = Case.model_validate(
        {"id": "k", "conversation": [{"content": "n?", "target": {"query": "Logs | count"}}]}
    )
    assert case_task(case, suite, None).task == "kql"  # the only database is a KQL one
    answer = Case.model_validate(
        {"id": "a", "conversation": [{"content": "n?", "target": {"answer": "Paris"}}]}
    )
    assert case_task(answer, None, None).task == "answer"
    weaviate = Case.model_validate(
        {
            "id": "w",
            "conversation": [
                {"content": "n?", "target": {"weaviate_query": {"target_collection": "A"}}}
            ],
        }
    )
    assert case_task(weaviate, None, None).task == "weaviate"
