"""Issue 28: queries where the embedded KQL engine (duckdb-kql plus queryeval's rewrites) gave
a result other than Kusto's, or failed only once the tables held rows. Each test is grounded
in Kusto's documentation (the docs' own example and output, MicrosoftDocs/dataexplorer-docs)
or in the result type Microsoft's Kusto.Language analyzer gives the query; each fails on the
engine before the fix. No Node needed."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import duckdb
import pytest

from kql_support import rows
from queryeval.engines import Engine, Limits
from queryeval.engines._kql import KqlEngine

NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def kql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    path = tmp_path_factory.mktemp("kusto") / "t.duckdb"
    con = duckdb.connect(str(path))
    # SigninLogs' ResultType is a string: "0" for success, error codes, and text
    con.execute("CREATE TABLE SigninLogs (TimeGenerated TIMESTAMP, UserPrincipalName VARCHAR, "
                "ResultType VARCHAR, IPAddress VARCHAR)")  # fmt: skip
    con.executemany(
        "INSERT INTO SigninLogs VALUES (?, ?, ?, ?)",
        [
            (dt.datetime(2024, 5, 1, 8), "ann", "0", "10.0.0.1"),
            (dt.datetime(2024, 5, 1, 9), "bob", "50126", "10.0.0.2"),
            (dt.datetime(2024, 5, 2, 9), "cid", "Other", "203.0.113.9"),
        ],
    )
    con.execute("CREATE TABLE Blocked (IPAddress VARCHAR)")
    con.executemany("INSERT INTO Blocked VALUES (?)", [("10.0.0.2",), ("198.51.100.1",)])
    con.execute("CREATE TABLE Dns (Ts TIMESTAMP, DNSName VARCHAR, Ttl BIGINT)")
    con.executemany(
        "INSERT INTO Dns VALUES (?, ?, ?)",
        [
            (dt.datetime(2024, 5, 1), "Host.A", 30),
            (dt.datetime(2024, 5, 2), "host.a", 10),
            (dt.datetime(2024, 5, 3), "host.b", 20),
        ],
    )
    con.execute("CREATE TABLE Longs (x BIGINT, s VARCHAR)")
    con.execute("INSERT INTO Longs VALUES (1, 'l')")
    con.execute("CREATE TABLE Ints (x INTEGER)")
    con.execute("INSERT INTO Ints VALUES (2)")
    con.close()
    engine = KqlEngine("kusto", path, Limits(timeout_s=60), "kusto", NOW)
    yield engine
    engine.close()


_SERIES_DATA = """let data=datatable(timestamp:datetime, metric: real)
[
  datetime(2016-12-31T06:00), 50,
  datetime(2017-01-01), 4,
  datetime(2017-01-02), 3,
  datetime(2017-01-03), 4,
  datetime(2017-01-03T03:00), 6,
  datetime(2017-01-05), 8,
  datetime(2017-01-05T13:40), 13,
  datetime(2017-01-06), 4,
  datetime(2017-01-07), 3,
  datetime(2017-01-08), 8,
  datetime(2017-01-08T21:00), 8,
  datetime(2017-01-09), 2,
  datetime(2017-01-09T12:00), 11,
  datetime(2017-01-10T05:00), 5,
];
let interval = 1d;
let stime = datetime(2017-01-01);
let etime = datetime(2017-01-10);
data
"""


def test_make_series_of_no_rows_gives_no_row(kql: Engine) -> None:
    """make-series-operator.md, "make-series on an empty input": `data | take 0 |
    make-series avg(metric) default=1.0 on timestamp from stime to etime step interval |
    count` answers Count 0 (the engine answered 1: summarize's one row over nothing)."""
    query = (_SERIES_DATA + "| take 0\n| make-series avg(metric) default=1.0 on timestamp "
             "from stime to etime step interval\n| count")  # fmt: skip
    assert rows(kql, query) == (["Count"], [(0,)])
    assert rows(kql, query.rsplit("|", 1)[0]) == (["avg_metric", "timestamp"], [])


def test_mv_expand_of_the_series_axis_gives_datetimes(kql: Engine) -> None:
    """make-series-operator.md's example output: the axis `timestamp` is an array of the
    bins' datetimes (2017-01-01 ... 2017-01-09) beside avg_metric [4, 3, 5, 0, 10.5, 4, 3,
    8, 6.5]; `mv-expand` of both gives one row per bin holding that datetime (the engine
    gave the text '2017-01-01 00:00:00')."""
    query = (_SERIES_DATA + "| make-series avg(metric) on timestamp from stime to etime step "
             "interval | mv-expand avg_metric, timestamp")  # fmt: skip
    columns, result = rows(kql, query)
    assert columns == ["avg_metric", "timestamp"]
    assert [r[1] for r in result] == [dt.datetime(2017, 1, d) for d in range(1, 10)]
    assert [r[0] for r in result] == [4.0, 3.0, 5.0, 0.0, 10.5, 4.0, 3.0, 8.0, 6.5]


def test_union_withsource_over_views_names_the_views_and_splits_the_types(kql: Engine) -> None:
    """union-operator.md: `union withsource=TableName View_1, View_2` of `print x=1` and
    `print x=toint(2)` is TableName View_1/View_2 with columns x_long and x_int; with a
    third view of `x_long=3` the first becomes x_long1 (the engine named the sources
    union_arg0/1 and merged both x into one column)."""
    views = "let View_1 = view () { print x=1 };\nlet View_2 = view () { print x=toint(2) };\n"
    assert rows(kql, views + "union withsource=TableName View_1, View_2") == (
        ["TableName", "x_long", "x_int"],
        [("View_1", 1, None), ("View_2", None, 2)],
    )
    query = views + "let View_3 = view () { print x_long=3 };\n"
    query += "union withsource=TableName View_1, View_2, View_3"
    assert rows(kql, query) == (
        ["TableName", "x_long1", "x_int", "x_long"],
        [("View_1", 1, None, None), ("View_2", None, 2, None), ("View_3", None, None, 3)],
    )


def test_union_of_tables_whose_column_types_differ(kql: Engine) -> None:
    """The same rule for tables (Kusto.Language's result type of `union Longs, Ints`:
    x_long:long, s:string, x_int:int), piped or not."""
    expected = (["x_long", "s", "x_int"], [(1, "l", None), (None, None, 2)])
    assert rows(kql, "union Longs, Ints | order by s desc") == expected
    assert rows(kql, "Longs | union Ints | order by s desc") == expected
    columns, _ = rows(kql, "union withsource=T Longs, Ints")
    assert columns == ["T", "x_long", "s", "x_int"]


def test_arg_min_star_keeps_an_input_column_its_by_alias_hides(kql: Engine) -> None:
    """Kusto.Language's result type of `T | summarize arg_min(Ts, *) by DNSName =
    tolower(DNSName)` is DNSName, Ts, DNSName1, Ttl: the input DNSName is kept, renamed (the
    engine dropped it)."""
    columns, result = rows(
        kql, "Dns | summarize arg_min(Ts, *) by DNSName = tolower(DNSName) | order by DNSName asc"
    )
    assert columns == ["DNSName", "Ts", "DNSName1", "Ttl"]
    assert result == [
        ("host.a", dt.datetime(2024, 5, 1), "Host.A", 30),
        ("host.b", dt.datetime(2024, 5, 3), "host.b", 20),
    ]


def test_a_string_column_compared_with_a_number_on_rows(kql: Engine) -> None:
    """`SigninLogs | where ResultType == 0` is valid (Kusto.Language: no diagnostic, the
    comparison a bool) and compares the text "0": the engine failed on the first row whose
    ResultType is not a number ('Other')."""
    assert rows(kql, "SigninLogs | where ResultType == 0 | project UserPrincipalName") == (
        ["UserPrincipalName"],
        [("ann",)],
    )
    _, result = rows(kql, "SigninLogs | where 0 != ResultType | project UserPrincipalName")
    assert sorted(result) == [("bob",), ("cid",)]
    query = "SigninLogs | where ResultType in (0, 50126) | project UserPrincipalName"
    assert rows(kql, query) == (["UserPrincipalName"], [("ann",), ("bob",)])
    _, result = rows(kql, query.replace(" in (", " !in ("))
    assert result == [("cid",)]


def test_in_a_let_table_of_a_makelist_on_rows(kql: Engine) -> None:
    """in-operator docs: with a tabular expression `in` takes its first column; a dynamic
    array there (`summarize makelist(IPAddress)`) stands for its elements (the idiom of
    community Sentinel rules). The engine failed casting each IPAddress to JSON."""
    query = ("let bad = Blocked | summarize makelist(IPAddress);\n"
             "SigninLogs | where IPAddress in (bad) | project UserPrincipalName")  # fmt: skip
    assert rows(kql, query) == (["UserPrincipalName"], [("bob",)])
    _, result = rows(kql, query.replace(" in (", " !in ("))
    assert sorted(result) == [("ann",), ("cid",)]


def test_in_a_let_dynamic_list_is_the_lists_elements(kql: Engine) -> None:
    """in-operator docs: a dynamic array in the list stands for its elements. A scalar
    `let L = dynamic([...])` is no table (the rewrite above once read it as one and every
    such query of the community corpora failed translating)."""
    query = ('let bad = dynamic(["10.0.0.2", "198.51.100.1"]);\n'
             "SigninLogs | where IPAddress in~ (bad) | project UserPrincipalName")  # fmt: skip
    assert rows(kql, query) == (["UserPrincipalName"], [("bob",)])


def test_a_regex_group_name_with_a_space_on_rows(kql: Engine) -> None:
    """A named group whose name holds a space is valid in Kusto's regex (Kusto.Language: no
    diagnostic; extract returns a string) and extract reads groups by number; DuckDB's RE2
    rejected the name on the first row."""
    query = ("SigninLogs | where UserPrincipalName matches regex @'(?<first name>^[ab])' "
             "| extend o = extract(@'(?<first octet>\\d+)\\.', 1, IPAddress) "
             "| project UserPrincipalName, o")  # fmt: skip
    assert rows(kql, query) == (["UserPrincipalName", "o"], [("ann", "10"), ("bob", "10")])


def test_a_scalar_function_with_let_statements_runs_or_is_unsupported(kql: Engine) -> None:
    """`let f = (a:long) { let b = a * 2; b + 1 }; print f(3)` is valid KQL (Kusto.Language:
    print_0:long): its lets inlined, 7; a let holding a pipeline is an engine gap,
    `unsupported` (the evaluator's), never `engine_error`."""
    assert rows(kql, "let f = (a:long) { let b = a * 2; b + 1 }; print f(3)") == (
        ["print_0"], [(7,)])  # fmt: skip
    run = kql.execute("let f = (a:long) { let m = toscalar(Dns | count); m + a }; print f(3)")
    assert run.outcome.kind == "unsupported", run.outcome
    # a tabular body with statements still runs
    query = "let f = (n:long) { let m = n * 2; Dns | where Ttl > m }; f(6) | count"
    assert rows(kql, query) == (["Count"], [(2,)])


def test_a_count_of_200_million_range_rows_is_cheap(kql: Engine) -> None:
    """`range x from 1 to 200000000 step 1 | count` (Kusto.Language: Count:long): range
    includes its end, so 200,000,000; the engine materialised the rows and hit its memory
    limit (the system's `resource_limit`)."""
    assert rows(kql, "range x from 1 to 200000000 step 1 | count") == (["Count"], [(200000000,)])
    assert rows(kql, "range x from 10 to 1 step -3 | summarize count()") == (
        ["count_"],
        [(4,)],  # 10, 7, 4, 1
    )
    assert rows(kql, "range x from 1 to 0 step 1 | count") == (["Count"], [(0,)])
