"""Issue 28, community corpora: constructs of real-world KQL (Sentinel and Defender hunting
repositories) that the embedded engine refused or answered differently from Kusto. Each test
is grounded in Kusto's documentation (its examples and rules) or in the result type
Microsoft's Kusto.Language gives the query; each fails on the engine before the change.
No Node needed."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from kql_support import rows
from queryeval.engines import Engine, Limits
from queryeval.engines._kql import KqlEngine
from queryeval.engines._kql_case import CaseIndex, decode_column, separate_case
from queryeval.engines._kql_rewrite import KqlRefused

NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def kql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    path = tmp_path_factory.mktemp("community") / "t.duckdb"
    con = duckdb.connect(str(path))
    # two Sentinel tables whose caller address columns differ only in case (as AzureActivity's
    # CallerIpAddress and another log's CallerIPAddress do)
    con.execute("CREATE TABLE Activity (TimeGenerated TIMESTAMP, CallerIpAddress VARCHAR, "
                "Type VARCHAR)")  # fmt: skip
    con.execute("INSERT INTO Activity VALUES ('2024-05-01', '10.0.0.1', 'Activity')")
    con.execute("CREATE TABLE Storage (TimeGenerated TIMESTAMP, CallerIPAddress VARCHAR, "
                "Type VARCHAR, IpAddress VARCHAR)")  # fmt: skip
    con.execute("INSERT INTO Storage VALUES ('2024-05-02', '10.0.0.2', 'Storage', '10.9.9.9')")
    con.execute("CREATE TABLE Audit (Id BIGINT, TargetResources JSON)")
    con.execute("""INSERT INTO Audit VALUES (1, '[{"displayName": "pol", "modifiedProperties": """
                """[{"newValue": "a"}, {"newValue": "b"}]}]')""")  # fmt: skip
    con.execute("CREATE TABLE Names (x VARCHAR, n BIGINT)")
    con.executemany("INSERT INTO Names VALUES (?, ?)", [("a", 1), ("a", 2), (None, 3), ("b", 3)])
    con.close()
    engine = KqlEngine("community", path, Limits(timeout_s=60), "community", NOW)
    yield engine
    engine.close()


# -- columns whose names differ only in case ---------------------------------------------------
# Kusto: "Entity names are case-sensitive" (learn.microsoft.com/kusto/query/schema-entities/
# entity-names): CallerIpAddress and CallerIPAddress are two columns; a union has both.


def test_union_keeps_case_variants_apart(kql: Engine) -> None:
    # duckdb-kql merged them: every row had the other table's address too
    columns, got = rows(kql, "union Activity, Storage | project Type, CallerIpAddress, "
                             "CallerIPAddress | order by Type asc")  # fmt: skip
    assert columns == ["Type", "CallerIpAddress", "CallerIPAddress"]
    assert got == [("Activity", "10.0.0.1", None), ("Storage", None, "10.0.0.2")]


def test_union_star_with_case_variants_runs(kql: Engine) -> None:
    # duckdb-kql refused `union *` here ("differ only in case"), a schema error of the query
    query = ("union * | where TimeGenerated > ago(60d) | summarize count() by CallerIpAddress "
             "| order by CallerIpAddress asc")  # fmt: skip
    columns, got = rows(kql, query)
    assert columns == ["CallerIpAddress", "count_"]
    assert got == [(None, 1), ("10.0.0.1", 1)]


def test_extend_of_a_case_variant_is_a_new_column(kql: Engine) -> None:
    columns, got = rows(kql, 'Storage | extend IPAddress = "x" | project IPAddress, IpAddress')
    assert columns == ["IPAddress", "IpAddress"]
    assert got == [("x", "10.9.9.9")]


def test_case_variants_where_names_are_data_are_refused(kql: Engine) -> None:
    run = kql.execute("union Activity, Storage | extend b = pack_all()")
    assert run.outcome.kind == "unsupported"
    assert "differ only in case" in run.outcome.message
    run = kql.execute("union Activity, Storage | project-keep CallerIp*")  # a wildcard list
    assert "differ only in case" in run.outcome.message
    # a multiplication in `project` reads no names (reprise99's Data-TableSizePerMDEDevice:
    # `['Size per Entry'] = 1.0 * Size / Entries`): one row per table (union operator docs)
    query = ("union withsource=T Activity, Storage | summarize n = count() by T "
             "| project T, s = 1.0 * n | order by T asc")  # fmt: skip
    assert rows(kql, query) == (["T", "s"], [("Activity", 1.0), ("Storage", 1.0)])


def test_a_table_storing_two_spellings_keeps_them_apart(tmp_path: Path) -> None:
    # Kusto: "Entity names are case-sensitive": two columns (KQLAdvancedHunting's and
    # Bert-JanP's IdentityInfo queries name AccountUpn, Sentinel's schema has AccountUPN too);
    # the later spelling stored under the case scheme's encoded name
    con = duckdb.connect(str(tmp_path / "t.duckdb"))
    con.execute('CREATE TABLE Info (AccountUPN VARCHAR, "AccountUpn__qe1" VARCHAR, n BIGINT)')
    con.execute("INSERT INTO Info VALUES ('UPPER@x', 'lower@x', 1)")
    con.execute("CREATE TABLE Logons (AccountUpn VARCHAR)")
    con.execute("INSERT INTO Logons VALUES ('lower@x'), ('other@x')")
    con.close()
    kql = KqlEngine("info", tmp_path / "t.duckdb", Limits(timeout_s=60), "info", NOW)
    assert rows(kql, "Info | project AccountUpn, AccountUPN") == (
        ["AccountUpn", "AccountUPN"], [("lower@x", "UPPER@x")])  # fmt: skip
    assert rows(kql, "Info | take 1")[0] == ["AccountUPN", "AccountUpn", "n"]
    query = ("Logons | join kind=inner (Info | summarize arg_max(n, *) by AccountUpn) "
             "on AccountUpn | project AccountUpn, AccountUPN")  # fmt: skip
    assert rows(kql, query) == (["AccountUpn", "AccountUPN"], [("lower@x", "UPPER@x")])
    run = kql.execute("Info | extend b = pack_all()")  # the encoded name would show
    assert run.outcome.kind == "unsupported" and "differ only in case" in run.outcome.message
    kql.close()


def test_case_scheme_leaves_other_queries_alone() -> None:
    index = CaseIndex({"A": ["IpAddress"], "B": ["Name"]})
    assert not index.might_collide("B | where Name == 'x'")
    assert index.might_collide("A | extend IPAddress = 1")
    assert separate_case("B | take 1", {"A": ["IpAddress"], "B": ["Name"]}) is None
    assert decode_column("IPAddress__qe1") == "IPAddress"
    with pytest.raises(KqlRefused):
        separate_case("A | where 'IPAddress' != '' | extend IPAddress = 1",
                      {"A": ["IpAddress"]})  # fmt: skip


# -- externaldata: the evaluator runs offline ---------------------------------------------------


def test_externaldata_is_refused_as_the_evaluators(kql: Engine) -> None:
    # externaldata reads rows from a storage URL at query time (Kusto's docs, "externaldata
    # operator"): an offline evaluator cannot; unsupported (unscored), never empty rows
    run = kql.execute('let Bad = externaldata(Ip: string)[@"https://example.org/ips.csv"] '
                      'with (format="csv"); Names | where x in (Bad)')  # fmt: skip
    assert run.outcome.kind == "unsupported"
    assert "externaldata reads its rows from a URL" in run.outcome.message


# -- functions ------------------------------------------------------------------------------------


def test_translate_docs_examples(kql: Engine) -> None:
    # the docs' examples: translate("abc", "x", "abc") == "xxx", translate("abc", "", "ab")
    # == "", translate("krasp", "otsku", "spark") == "kusto"
    _, got = rows(kql, 'print a = translate("abc", "x", "abc"), b = translate("abc", "", "ab"), '
                       'c = translate("krasp", "otsku", "spark")')  # fmt: skip
    assert got == [("xxx", "", "kusto")]


def test_string_size_is_bytes(kql: Engine) -> None:
    # string_size: "the size, in bytes, of the input string" (docs: string_size("hello") 5);
    # strlen counts characters
    _, got = rows(kql, 'print string_size("hello"), string_size("héllo"), strlen("héllo")')
    assert got == [(5, 6, 5)]


def test_ingestion_time_is_null_without_a_policy(kql: Engine) -> None:
    # docs: "If the table doesn't have IngestionTime policy defined (enabled), the returned
    # value is null" - a DuckDB table records no ingestion time
    columns, got = rows(kql, "Names | where n == 1 | extend t = ingestion_time()")
    assert columns == ["x", "n", "t"] and got == [("a", 1, None)]


def test_count_distinct_and_pack_dictionary(kql: Engine) -> None:
    # count_distinct: the exact number of distinct values, nulls ignored; result named
    # count_distinct_x (Kusto.Language's result type); pack_dictionary is bag_pack's old name
    columns, got = rows(kql, "Names | summarize count_distinct(x)")
    assert columns == ["count_distinct_x"] and got == [(2,)]
    _, got = rows(kql, 'print pack_dictionary("a", 1, "b", "x")')
    assert got == [({"a": 1, "b": "x"},)]


# -- syntax real queries use -------------------------------------------------------------------


def test_legacy_element_step(kql: Engine) -> None:
    # `TargetResources.[0].displayName`: Kusto.Language reads `.[0]` as the element access [0]
    _, got = rows(kql, "Audit | project a = tostring(TargetResources.[0].displayName), "
                       "b = tostring(TargetResources[0].displayName)")  # fmt: skip
    assert got == [("pol", "pol")]


def test_statement_that_is_one_parenthesized_pipeline(kql: Engine) -> None:
    # `(union isfuzzy=true (A), (B | where ...) | sort by ...)` as the whole query
    columns, got = rows(kql, "(union isfuzzy=true (Names | where n > 2), (Names | where n == 1)"
                             " | sort by n asc, x asc)")  # fmt: skip
    assert columns == ["x", "n"]
    assert got == [("a", 1), (None, 3), ("b", 3)]


def test_mv_expand_of_a_column_path_is_named_col_member(kql: Engine) -> None:
    # `mv-expand TargetResources.modifiedProperties`: Kusto.Language's result type names the
    # expanded values TargetResources_modifiedProperties (the corpus queries use that name)
    columns, got = rows(kql, "Audit | mv-expand TargetResources | mv-expand "
                             "TargetResources.modifiedProperties | project v = "
                             "tostring(TargetResources_modifiedProperties.newValue)")  # fmt: skip
    assert columns == ["v"] and sorted(got) == [("a",), ("b",)]


def test_parse_capture_name_with_spaces(kql: Engine) -> None:
    # `parse x with * '.' ['Attribute Set Name'] '_' *` (Kusto.Language: a column named
    # "Attribute Set Name"); DuckDB's RE2 refused the group name duckdb-kql gave it
    columns, got = rows(kql, "print x = 'a.b c_7' | parse x with * '.' ['Attribute Set Name'] "
                             "'_' n:long")  # fmt: skip
    assert columns == ["x", "Attribute Set Name", "n"]
    assert got == [("a.b c_7", "b c", 7)]


def test_nul_in_a_literal_argument(kql: Engine) -> None:
    # PowerShell's -EncodedCommand is UTF-16: base64_decode_tostring gives text with NULs, which
    # the hunting queries strip with replace_string(s, '\u0000', '') (Kusto's "\u0000" escape)
    decoded = 'base64_decode_tostring("YQBiAA==")'
    _, got = rows(kql, f'print a = replace_string({decoded}, "\\u0000", ""), b = strlen({decoded})')
    assert got == [("ab", 4)]


# -- a plugin whose output columns come from the data --------------------------------------------
# Kusto's docs (bag_unpack plugin): "The plugin's output schema depends on the data values,
# making it as 'unpredictable' as the data itself". The verdict is on this database: a column
# this data does not give is the query's `schema` error there, as any unknown column (a
# prediction naming a made-up key must never be left unscored: that would raise the mean), and
# a missing column in the plugin's input is the query's error too, never a refusal.


def test_bag_unpack_column_absent_from_this_data_is_the_querys_schema_error(kql: Engine) -> None:
    unpack = "Names | where n {} | extend b = bag_pack('k', x) | evaluate bag_unpack(b) "
    _, got = rows(kql, unpack.format("== 1") + "| project k")
    assert got == [("a",)]
    for query in (
        unpack.format("> 100") + "| project k",  # no row gives the key here
        unpack.format("== 1") + "| project garbage",  # a key the data never has
        unpack.format("== 1") + "| project Type",  # a column of another table (Activity)
        unpack.format("== 1") + "| where TimeGenerated > ago(1d)",
        "Names | where Typo == 1 | extend b = bag_pack('k', x) | evaluate bag_unpack(b)",
        "NoSuchTable | evaluate bag_unpack(b) | project k",
    ):
        run = kql.execute(query)
        assert run.outcome.kind == "schema", (query, run.outcome)


# -- search across tables --------------------------------------------------------------------------
# Kusto's docs ("search operator", its predicate syntax and the table of examples with their
# `where` equivalents): `search "err"` is `where * has "err"` over every table of the
# database when no source is given; `search in (T1, T2) "err"` is `union T1, T2 | where * has
# "err"`; `col:"err"` is `col has "err"`; "err*" hasprefix, "*err" hassuffix, "*err*"
# contains; `search *` every row; kind=case_sensitive makes `has` `has_cs`. The output
# starts with `$table`, the row's table (Kusto.Language's result type).


def test_search_over_every_table(kql: Engine) -> None:
    columns, got = rows(kql, 'search "10.0.0.2" | project $table, TimeGenerated')
    assert columns == ["$table", "TimeGenerated"]
    assert got == [("Storage", dt.datetime(2024, 5, 2))]
    _, got = rows(kql, "search * | summarize n = count() by $table | order by $table asc")
    assert got == [("Activity", 1), ("Audit", 1), ("Names", 4), ("Storage", 1)]


def test_search_in_tables_with_terms_and_column_terms(kql: Engine) -> None:
    query = 'search in (Names) "a" and n:"2" or x == "b" | project $table, x, n | order by n asc'
    assert rows(kql, query) == (["$table", "x", "n"], [("Names", "a", 2), ("Names", "b", 3)])
    # wildcard terms: "Stor*" hasprefix (Type "Storage"), "*tivity" hassuffix
    query = 'search in (Act*, Storage) "Stor*" or "*tivity" | project $table | order by $table asc'
    assert rows(kql, query)[1] == [("Activity",), ("Storage",)]
    _, got = rows(kql, 'search kind=case_sensitive in (Activity, Storage) "storage" | count')
    assert got == [(0,)]
    run = kql.execute('search "Sto*ge"')  # a wildcard inside: a regex match, not written
    assert run.outcome.kind == "unsupported"


# -- mv-apply of row-wise operators ------------------------------------------------------------
# Kusto's docs ("mv-apply operator"): each row is mv-expanded into a subtable, the subquery is
# applied to it, the row's columns that were not expanded are added back, and the results are
# unioned; mv-expand's docs: an empty array gives no record, null one null record. With only
# `where` / `extend` in the subquery that is mv-expand then the subquery. Column order from
# Kusto.Language's result type (T(a, arr, n)): `T | mv-apply arr on (where ... | extend y =
# 2)` is a, n, arr, y; `T | mv-apply x = arr on (project x)` is a, arr, n, x.


def test_mv_apply_with_row_wise_subquery(kql: Engine) -> None:
    query = ("Audit | extend mp = TargetResources[0].modifiedProperties, k = 1 "
             "| mv-apply mp on (where mp.newValue == 'b' | extend v = tostring(mp.newValue)) "
             "| project-away TargetResources")  # fmt: skip
    assert rows(kql, query) == (["Id", "k", "mp", "v"], [(1, 1, {"newValue": "b"}, "b")])
    query = ("Audit | mv-apply tr = TargetResources on (where tr.displayName == 'pol' "
             "| project tr) | project Id, n = tostring(tr.displayName)")  # fmt: skip
    assert rows(kql, query) == (["Id", "n"], [(1, "pol")])
    run = kql.execute("Audit | mv-apply tr = TargetResources on (summarize c = count())")
    assert run.outcome.kind == "unsupported"  # an aggregate per row: not written


def test_union_withsource_over_case_variants_names_each_table(kql: Engine) -> None:
    # Kusto's docs (union operator): withsource= adds a column naming each row's source table;
    # the case-separating legs must not turn those names into `union_arg<i>`
    query = ("union withsource=TableName Activity, Stor* | project TableName, CallerIpAddress, "
             "CallerIPAddress | order by TableName asc")  # fmt: skip
    assert rows(kql, query) == (
        ["TableName", "CallerIpAddress", "CallerIPAddress"],
        [("Activity", "10.0.0.1", None), ("Storage", None, "10.0.0.2")],
    )
    # a table read at the head of a pipeline after a comment line is a pipeline head too
    query = ("let x = 1;\n// the callers\nActivity | union Storage | project CallerIpAddress, "
             "CallerIPAddress | order by CallerIpAddress asc")  # fmt: skip
    assert rows(kql, query)[1] == [(None, "10.0.0.2"), ("10.0.0.1", None)]
