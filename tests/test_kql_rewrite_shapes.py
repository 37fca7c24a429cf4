"""Issue 28, session 6: query shapes of the community corpora that the embedded KQL engine
refused (`union *` over a wide database, `make-series ... in range(...)`, `evaluate pivot`).
Each expected value comes from Kusto's documentation, never from the engine's own output;
each assertion failed before the change (a refusal, or another column set)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import duckdb
import pytest

from kql_support import rows
from queryeval.engines import Limits
from queryeval.engines._kql import KqlEngine
from queryeval.engines._kql_rewrite_kusto import wildcard_unions

NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
WIDE = 70  # tables beyond the A and B below: more than MAX_UNION_INPUTS (64) in all


@pytest.fixture(scope="module")
def kql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KqlEngine]:
    path = tmp_path_factory.mktemp("shapes") / "t.duckdb"
    con = duckdb.connect(str(path))
    con.execute("BEGIN TRANSACTION")  # one commit: a commit a table takes seconds under load
    con.execute("CREATE TABLE Net (Device VARCHAR, Url VARCHAR, Ts TIMESTAMP)")
    con.executemany(
        "INSERT INTO Net VALUES (?, ?, ?)",
        [
            ("d1", "a", dt.datetime(2024, 5, 1, 8)),
            ("d1", "b", dt.datetime(2024, 5, 1, 9)),
            ("d2", "a", dt.datetime(2024, 5, 2, 9)),
        ],
    )
    # `a` a long in A and a string in B; `type` (B) and `Type` (A, Wn) differ only in case
    con.execute("CREATE TABLE A (a BIGINT, Type VARCHAR)")
    con.execute("INSERT INTO A VALUES (1, 'x'), (2, 'y')")
    con.execute("CREATE TABLE B (a VARCHAR, b BIGINT, type INTEGER)")
    con.execute("INSERT INTO B VALUES ('s', 5, 7)")
    for i in range(WIDE):
        con.execute(f"CREATE TABLE W{i:02d} AS SELECT 'w' AS Type, {i}::BIGINT AS n")
    con.execute("COMMIT")
    con.close()
    engine = KqlEngine("shapes", path, Limits(timeout_s=60), "shapes", NOW)
    yield engine
    engine.close()


def _union(kql: KqlEngine, query: str) -> tuple[list[str], list[tuple[object, ...]]]:
    """`query` as the engine runs it (its wildcard unions expanded from the catalog first,
    `KqlEngine._run`), and as `wildcard_unions` writes it: the same answer."""
    columns, got = rows(kql, query)
    written = rows(kql, wildcard_unions(query, kql.cached_schema()["tables"]))
    assert written[0] == columns and sorted(written[1], key=str) == sorted(got, key=str)
    return columns, got


def test_union_star_names_columns_by_type_and_counts_every_table(kql: KqlEngine) -> None:
    # Hunting-Queries-Detection-Rules TheArtOfKnowingYourData.md: `union withsource=TableName
    # * | summarize TotalEvents = count() by TableName` over a 693-table schema was refused
    # ("a union of 693 inputs"). Kusto's union docs: the outer union has one column per name
    # and type, a name with several types suffixed `_` and its type (a_long, a_string);
    # withsource names each row's table.
    counted = _union(kql, "union withsource=T * | where T != 'Net' | summarize n = count() by T")
    assert sorted(counted[1]) == sorted(
        [("A", 2), ("B", 1)] + [(f"W{i:02d}", 1) for i in range(WIDE)]
    )
    columns, got = _union(kql, "union A, B* | take 10")
    assert set(columns) == {"a_long", "Type", "a_string", "b", "type"}
    assert sorted(
        ((r[columns.index("a_long")], r[columns.index("a_string")]) for r in got), key=str
    ) == [(1, None), (2, None), (None, "s")]


def test_union_star_keeps_only_the_columns_a_summarize_reads(kql: KqlEngine) -> None:
    # `union * | summarize count() by Type` (the same file): `Type` of A and the Wn tables,
    # null for the rows of Net and B (which have no `Type`; B's `type` is another column:
    # Kusto's names are case-sensitive).
    _, got = _union(kql, "union * | summarize n = count() by Type | order by Type asc")
    assert sorted(got, key=str) == sorted([("x", 1), ("y", 1), ("w", WIDE), (None, 4)], key=str)


def test_make_series_in_range_bins_with_bin_and_includes_stop(kql: KqlEngine) -> None:
    # Sentinel-Queries Identity-VisualizeConditionalAccessFailures.kql: `make-series ... on
    # TimeGenerated in range(start, end, 12h)` was refused. Kusto's make-series docs,
    # alternate syntax: the stop value is inclusive and the axis is binned with bin(), so a
    # start of 2024-04-30 12:00 gives a first bin at 2024-04-30 00:00, and the stop
    # 2024-05-02 09:00 is in the last one.
    query = ("Net | make-series n = count() default = 0 on Ts in range(datetime(2024-04-30 12:00),"
             " datetime(2024-05-02 09:00), 1d)")  # fmt: skip
    columns, got = rows(kql, query)
    assert columns == ["n", "Ts"]
    assert got[0][0] == [0, 2, 1]
    assert [str(t)[:10] for t in got[0][1]] == ["2024-04-30", "2024-05-01", "2024-05-02"]


def test_evaluate_pivot_counts_each_value_as_a_column(kql: KqlEngine) -> None:
    # Sentinel-Queries DCA-PivotTableAdminOperations.kql: `evaluate pivot(ActionType, count(),
    # UserPrincipalName)`. Kusto's pivot docs: a column per unique value of the pivoted
    # column, each cell the count of its rows (0 where none), by the listed columns (by
    # default every other input column). The docs leave the value columns' order open:
    # compared by name, as the default scorer matches columns.
    columns, got = rows(kql, "Net | evaluate pivot(Url, count(), Device)")
    assert sorted(columns) == ["Device", "a", "b"] and columns[0] == "Device"
    by_device = {r[0]: dict(zip(columns, r, strict=True)) for r in got}
    assert by_device == {"d1": {"Device": "d1", "a": 1, "b": 1},
                         "d2": {"Device": "d2", "a": 1, "b": 0}}  # fmt: skip
    columns, got = rows(kql, "Net | project Device, Url | evaluate pivot(Device)")
    assert sorted(columns) == ["Url", "d1", "d2"]
    assert sorted(
        tuple(dict(zip(columns, r, strict=True))[c] for c in ("Url", "d1", "d2")) for r in got
    ) == [
        ("a", 1, 1),
        ("b", 1, 0),
    ]


def test_table_as_a_column_name(kql: KqlEngine) -> None:
    # Sentinel-Queries LAQuery-FindQueryStats.kql: `mv-apply table = toscalar(tablenames) to
    # typeof(string) on (where QueryText contains ['table']) | summarize count() by ['table']`
    # (valid for Kusto.Language; duckdb-kql's grammar read `table` only as table()). The
    # mv-apply docs: each array element against the row, the rows the subquery keeps.
    query = ("Net | mv-apply table = dynamic(['a', 'x']) to typeof(string) on (where Url == table)"
             " | summarize n = count() by ['table']")  # fmt: skip
    assert rows(kql, query) == (["table", "n"], [("a", 2)])


def test_mv_apply_with_a_nested_mv_apply(kql: KqlEngine) -> None:
    # Sentinel-Queries Audit-DetectAdvancedAuditingDisabled.kql: `mv-apply tr = targetResources
    # on (extend ... | mv-apply mp = tr.modifiedProperties on (where ... | extend ...))` was
    # refused. The mv-apply docs: each row's array expanded into a subtable, the subquery
    # applied to it, the results unioned; a nested mv-apply of row-wise operators keeps, per
    # element, the inner elements its where keeps.
    query = """print r = dynamic([{"n": "a", "p": [{"d": "x", "v": 1}, {"d": "y", "v": 2}]},
                                   {"n": "b", "p": [{"d": "x", "v": 3}]}])
    | mv-apply tr = r on (extend name = tostring(tr.n)
        | mv-apply mp = tr.p on (where mp.d == "x" | extend v = tolong(mp.v)))
    | project name, v"""
    assert sorted(rows(kql, query)[1]) == [("a", 1), ("b", 3)]


def test_union_star_reading_every_column_past_the_limit_is_refused_by_count(
    kql: KqlEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `union * | take 10` may show every column of every table: past MAX_WILDCARD_COLUMNS
    # columns in all it is refused (unsupported, the evaluator's), decided by the count of
    # columns (here 145 > 100), never by a time (was: run to the query's CPU limit).
    from queryeval.engines import _kql_rewrite_kusto

    monkeypatch.setattr(_kql_rewrite_kusto, "MAX_WILDCARD_COLUMNS", 100)
    run = kql.execute("union * | where isnotnull(n) | take 10")
    assert run.outcome.kind == "unsupported"
    assert "columns in all) whose every column the query may read" in run.outcome.message
