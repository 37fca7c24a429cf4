"""Issue 28, session 7: `union *` / `search` over every table, as the engine runs them (its
wildcards expanded from the catalog before the case scheme, `KqlEngine._run`). Expected
values from Kusto's docs (union, coalesce, entity names) and Kusto.Language's union binding;
each assertion failed before the change (a refusal, or another outcome)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from kql_support import kql_engine, rows
from queryeval.engines import _kql_rewrite as rewrite
from queryeval.engines._kql import KqlEngine
from queryeval.engines._kql_case import separate_case

NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def kql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KqlEngine]:
    with kql_engine(
        tmp_path_factory.mktemp("wildcards") / "t.duckdb",
        "BEGIN TRANSACTION",
        # a table named `Operation` (as Log Analytics has), and a table with a column
        # `Operation` (OfficeActivity's); their caller address columns differ only in case
        "CREATE TABLE Operation (Type VARCHAR, OperationName VARCHAR, CallerIpAddress VARCHAR)",
        "INSERT INTO Operation VALUES ('Operation', 'Ingest', '10.0.0.1')",
        "CREATE TABLE Office (Type VARCHAR, Operation VARCHAR, CallerIPAddress VARCHAR)",
        "INSERT INTO Office VALUES ('Office', 'FileAccessed', '10.0.0.2')",
        # a table with `type` and `Type` (DeviceEtw's): the later stored under its encoded name
        'CREATE TABLE Etw (type VARCHAR, "Type__qe1" VARCHAR)',
        "INSERT INTO Etw VALUES ('t', 'Etw'), ('t', 'Etw')",
        # a table with a column `TableName` (ADXTableDetails')
        "CREATE TABLE Details (TableName VARCHAR, Type VARCHAR)",
        "INSERT INTO Details VALUES ('Office', 'Details')",
        "COMMIT",
        name="wildcards",
        timeout_s=60,
        now=NOW,
    ) as engine:
        yield engine


def test_a_table_name_in_a_row_operator_is_read_as_a_column(kql: KqlEngine) -> None:
    # Hunting-Queries-Detection-Rules TheArtOfKnowingYourData.md: `union * | extend Action =
    # coalesce(Operation, OperationName, ...)` was refused ("read from Operation other than
    # as a union leg or a pipeline head"). Inside an operator the name is read in the row's
    # scope: the column `Operation` (a table is no scalar argument). coalesce's docs: the
    # first value that is not null (nor an empty string); names are case-sensitive, so
    # CallerIpAddress and CallerIPAddress are two columns.
    query = ("union * | extend Action = coalesce(Operation, OperationName), "
             "Ip = coalesce(CallerIpAddress, CallerIPAddress) | where isnotempty(Action) "
             "| project Type, Action, Ip | order by Type asc")  # fmt: skip
    assert rows(kql, query) == (
        ["Type", "Action", "Ip"],
        [("Office", "FileAccessed", "10.0.0.2"), ("Operation", "Ingest", "10.0.0.1")],
    )


def test_union_star_reads_a_spelling_stored_encoded_as_spelled(kql: KqlEngine) -> None:
    # union docs: one column per name and type; Etw's `Type` (stored encoded beside `type`)
    # is the `Type` of the other tables
    query = "union * | summarize n = count() by Type | order by Type asc"
    assert rows(kql, query)[1] == [("Details", 1), ("Etw", 2), ("Office", 1), ("Operation", 1)]


def test_union_withsource_naming_a_column_of_an_input_is_refused(kql: KqlEngine) -> None:
    # Kusto.Language's union: the withsource column, then the inputs' columns: two columns
    # `TableName`, and which one `by TableName` reads is not documented (was: the query's
    # `schema` error, from the engine's own rewrite)
    run = kql.execute("union withsource=TableName * | summarize n = count() by TableName")
    assert run.outcome.kind == "unsupported"
    assert "has a column TableName" in run.outcome.message
    query = "union withsource=Source * | summarize n = count() by Source | order by Source asc"
    assert rows(kql, query)[1] == [("Details", 1), ("Etw", 2), ("Office", 1), ("Operation", 1)]


def test_case_separation_reads_the_tree_a_fixed_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a union of hundreds of tables, each read under a renaming leg: the query's tree is
    # walked a fixed number of times, not once per table (was one walk per leg: 345 walks
    # of a 693-leg union, tens of seconds of CPU)
    tables = {f"T{i:03d}": ["Ip", "n"] for i in range(300)} | {"U": ["IP"]}
    query = "union " + ", ".join(tables) + " | project Ip, IP"
    walks = 0
    walk = rewrite._walk

    def counted(node: object) -> Iterator[object]:
        nonlocal walks
        walks += 1
        return walk(node)

    monkeypatch.setattr(rewrite, "_walk", counted)
    separated = separate_case(query, tables)
    assert separated is not None
    assert separated.text.count("project-rename Ip__qe1 = Ip") == 300
    assert walks <= 8


def test_an_inspected_input_leaves_out_the_lets_it_does_not_read() -> None:
    # Sentinel-Queries LAQuery-FindQueryStats.kql: `let tablenames = search * | summarize
    # make_set($table); LAQueryLogs | mv-apply ...`: the mv-apply's input (LAQueryLogs) was
    # inspected with the 693-table union of its unread `let` in front (tens of seconds of CPU)
    seen: list[str] = []

    class Recorder:
        def columns(self, query: str, functions: tuple[str, ...]) -> list[tuple[str, str]]:
            seen.append(query)
            return [("x", "VARCHAR")]

        def bag_slots(self, query: str, functions: tuple[str, ...],
                      column: str) -> list[tuple[str, list[str]]]:  # fmt: skip
            return []

    wide = ", ".join(f"(T{i:03d} | project S = 'T{i:03d}')" for i in range(200))
    query = (f"let a = 1;\nset truncationmaxrecords = 5;\nlet big = union {wide};\n"
             "let f = (n: long) { T | take n };\nlet b = T | where x == a;\n"
             "b | mv-apply y = z on (where y == 1)")  # fmt: skip
    tree = rewrite.parsed(query)
    q = rewrite._Query(query, tree, Recorder())
    mv_apply = next(n for n in rewrite._walk(tree) if rewrite._kind(n) == "MvapplyOperator")
    q.columns_before(mv_apply, "mv-apply")
    assert seen == ["let a = 1;\nset truncationmaxrecords = 5;\n"
                    "let f = (n: long) { T | take n };\nlet b = T | where x == a;\nb "]  # fmt: skip
