"""Real-world KQL on the embedded engine: queryeval's rewrites and added functions give the
results Kusto gives (hand-computed here, or from Kusto's documentation), and what duckdb-kql
would answer wrongly is refused or fixed. No Node needed."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from kql_support import rows
from queryeval.engines import Engine, Limits
from queryeval.engines._kql import KqlEngine
from queryeval.engines._kql_rewrite import KqlRefused, rewrite_kql
from queryeval.languages.kql import decode_string

NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
# 130 distinct names, 3 of them twice; a group key; numbers 1..10 for percentiles
ROWS = [(f"n{i:03d}", i % 2, i) for i in range(130)] + [("n000", 0, 0), ("n001", 1, 1)]


@pytest.fixture(scope="module")
def kql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    path = tmp_path_factory.mktemp("kql") / "t.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE T (Name VARCHAR, G BIGINT, V BIGINT)")
    con.executemany("INSERT INTO T VALUES (?, ?, ?)", ROWS)
    con.execute("CREATE TABLE E (Ts TIMESTAMP, Dev VARCHAR, Ok BOOLEAN, Doc VARCHAR, D JSON)")
    con.executemany(
        "INSERT INTO E VALUES (?, ?, ?, ?, ?)",
        [
            (dt.datetime(2024, 1, 1, 0, 0), "a", True, '["x","y"]', '{"k": [1, 2]}'),
            (dt.datetime(2024, 1, 1, 1, 30), "a", False, '["z"]', '{"k": [3]}'),
            (dt.datetime(2024, 1, 2, 0, 0), "b", True, "[]", None),
        ],
    )
    con.close()
    engine = KqlEngine("t", path, Limits(timeout_s=30), "t", NOW)
    yield engine
    engine.close()


def refused(engine: Engine, query: str) -> str:
    run = engine.execute(query)
    assert run.outcome.kind == "unsupported", (run.outcome.kind, run.outcome.message)
    return run.outcome.message


# -- deprecated aggregates and maxSize -----------------------------------------------------------


def test_makeset_is_make_set_capped_at_128_named_set(kql: Engine) -> None:
    columns, result = rows(kql, "T | summarize makeset(Name)")
    assert columns == ["set_Name"]
    (values,) = result[0]
    assert len(values) == 128 and len(set(values)) == 128
    assert set(values) <= {f"n{i:03d}" for i in range(130)}


def test_make_set_and_make_list_honour_max_size(kql: Engine) -> None:
    columns, result = rows(
        kql,
        "T | where V < 10 | summarize s = make_set(Name, 3), "
        "l = make_list(V, 2), make_list(V) by G | order by G asc",
    )
    assert columns == ["G", "s", "l", "list_V"]
    for g, s, lst, full in result:
        assert len(s) == 3 and len(set(s)) == 3 and len(lst) == 2
        expected = [v for _, gg, v in ROWS if gg == g and v < 10]
        assert sorted(full) == sorted(expected)
        assert set(lst) <= set(expected)


def test_makelist_keeps_duplicates_and_caps_at_128(kql: Engine) -> None:
    _, result = rows(kql, "T | summarize makelist(Name)")
    assert len(result[0][0]) == 128


def test_make_set_if_and_make_list_if(kql: Engine) -> None:
    columns, result = rows(
        kql, "T | where V < 6 | summarize make_set_if(Name, V > 2), x = make_list_if(V, G == 1)"
    )
    assert columns == ["set_Name", "x"]
    (names, odd), *_ = result
    assert sorted(names) == ["n003", "n004", "n005"]
    assert sorted(odd) == [1, 1, 3, 5]  # n001 appears twice


def test_percentiles_split_into_named_percentiles(kql: Engine) -> None:
    columns, result = rows(
        kql,
        "T | where V between (1 .. 10) and Name != 'n001' or V == 1 "
        "| summarize percentiles(V, 50, 90)",
    )
    # values 1, 1, 2, ..., 10 (eleven values): nearest-rank 50th is the 6th = 5, 90th the
    # 10th (ceil(9.9)) = 9
    assert columns == ["percentile_V_50", "percentile_V_90"]
    assert result == [(5, 9)]
    columns, _ = rows(kql, "T | summarize (p1, p2) = percentiles(V, 25, 75.5) by G")
    assert columns == ["G", "p1", "p2"]


def test_argmax_and_argmin_keep_their_deprecated_names(kql: Engine) -> None:
    columns, result = rows(kql, "T | summarize argmax(V, Name) by G | order by G asc")
    assert columns == ["G", "max_V", "max_V_Name"]
    assert result == [(0, 128, "n128"), (1, 129, "n129")]
    columns, result = rows(kql, "T | summarize argmin(V, *)")
    assert columns == ["min_V", "min_V_Name", "min_V_G"]
    assert result[0][0] == 0 and result[0][1] == "n000"


# -- operators ---------------------------------------------------------------------------------


def test_mv_expand_of_unnamed_todynamic_is_named_after_its_column(kql: Engine) -> None:
    columns, result = rows(kql, "E | project Dev, Doc | mv-expand todynamic(Doc) to typeof(string)")
    assert columns == ["Dev", "Doc"]
    assert sorted((d, x) for d, x in result if x is not None) == [
        ("a", "x"),
        ("a", "y"),
        ("a", "z"),
    ]
    columns, result = rows(kql, "E | project Dev, D | mv-expand parse_json(D).k to typeof(long)")
    assert columns == ["Dev", "D", "D_k"]
    assert sorted(x for *_, x in result if x is not None) == [1, 2, 3]


def test_project_reorder_puts_listed_columns_first(kql: Engine) -> None:
    columns, _ = rows(kql, "E | project-reorder Ok, D*, Ts")
    assert columns == ["Ok", "Dev", "Doc", "D", "Ts"]  # wildcard matches in input order
    assert "asc" in refused(kql, "E | project-reorder Dev asc")


def test_make_series_fills_the_missing_bins_with_the_default(kql: Engine) -> None:
    columns, result = rows(
        kql,
        "let width = 12h; E | make-series n = count(), o = countif(Ok) default = -1 on Ts "
        "from datetime(2024-01-01) to datetime(2024-01-02 12:00) step width by Dev "
        "| order by Dev asc",
    )
    # bins 01-01 00:00, 12:00, 01-02 00:00; a: rows at 00:00 (ok) and 01:30; b: 01-02 00:00
    assert columns == ["Dev", "n", "o", "Ts"]
    bins = [dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 12), dt.datetime(2024, 1, 2)]
    assert result == [("a", [2, 0, 0], [1, -1, -1], bins), ("b", [0, 0, 1], [-1, -1, 1], bins)]
    columns, _ = rows(kql, "E | make-series count() on Ts from ago(1000d) to now() step 1d")
    assert columns == ["count_", "Ts"]
    # `name=func(x)`, which duckdb-kql's grammar splits, and let-bound bounds
    columns, result = rows(
        kql,
        "let t0 = datetime(2024-01-01); let t1 = datetime(2024-01-03); let w = 1d; "
        "E | extend v = iff(Ok, 1, 0) | make-series s=sum(v) on Ts from t0 to t1 step w",
    )
    assert columns == ["s", "Ts"] and result[0][0] == [1, 1]
    assert "kind=nonempty" in refused(
        kql, "E | make-series kind=nonempty count() on Ts from ago(9d) to now() step 1d"
    )
    assert "from" in refused(kql, "E | make-series count() on Ts step 1d")
    # no row at all for an input of no rows (tests/test_kql_kusto_results.py: Kusto's docs)
    assert rows(
        kql, "E | where Dev == 'z' | make-series count() on Ts from ago(9d) to now() step 1d"
    ) == (["count_", "Ts"], [])


def test_count_of_a_predicate_is_countif_named_count_column(kql: Engine) -> None:
    columns, result = rows(kql, "E | summarize count(Ok), n = count(Dev == 'a')")
    assert columns == ["count_Ok", "n"] and result == [(2, 2)]
    _, result = rows(kql, "E | summarize n = count(isnotempty(Dev)), m = count(not(Ok))")
    assert result == [(3, 1)]


@pytest.mark.parametrize(
    "query",
    [
        "T | summarize count(V)",  # a long column: not valid KQL (Kusto.Language: bool expected)
        "E | summarize count(Dev)",
        "T | summarize count(V + 1)",
        "T | summarize count(1)",
        "T | summarize count(tolower(Name))",
    ],
)
def test_count_of_a_value_that_is_not_a_bool_is_refused(kql: Engine, query: str) -> None:
    """countif would count the non-zero (non-empty) values: an answer for invalid KQL."""
    assert "not" in refused(kql, query)


def test_take_of_a_let_bound_count(kql: Engine) -> None:
    _, result = rows(kql, "let n = 2; T | order by V asc | take n")
    assert [r[2] for r in result] == [0, 0]


def test_bin_at_matches_the_documented_examples(kql: Engine) -> None:
    columns, result = rows(
        kql,
        "print a = bin_at(6.5, 2.5, 7), "
        "b = bin_at(datetime(2017-05-15 10:20:00.0), 1d, datetime(1970-01-01 12:00:00.0)), "
        "c = bin_at(datetime(2017-05-17 10:20:00.0), 7d, datetime(2017-06-04 00:00:00.0))",
    )
    assert result == [(4.5, dt.datetime(2017, 5, 14, 12), dt.datetime(2017, 5, 14))]
    columns, result = rows(
        kql,
        "E | summarize n = count() by bin_at(Ts, 1d, datetime(2024-01-01 12:00)) | order by Ts asc",
    )
    assert columns == ["Ts", "n"]
    assert result == [(dt.datetime(2023, 12, 31, 12), 2), (dt.datetime(2024, 1, 1, 12), 1)]
    # a timespan fixed point: duckdb-kql bins an interval expression as a datetime
    assert "fixed point" in refused(kql, "print bin_at(time(1h), 1d, 12h)")


def test_set_functions_keep_first_occurrence_order(kql: Engine) -> None:
    _, result = rows(
        kql,
        "print u = set_union(dynamic([1, 2, 3]), dynamic([3, 4, 1])), "
        "d = set_difference(dynamic([1, 2, 3, 2]), dynamic([2])), "
        "i = set_intersect(dynamic([3, 1, 2, 3]), dynamic([2, 3]))",
    )
    assert result == [([1, 2, 3, 4], [1, 3], [3, 2])]


# -- the four wrong results of duckdb-kql 1.1 ------------------------------------------------------


def test_named_arguments_of_a_let_function_are_bound_by_name(kql: Engine) -> None:
    _, result = rows(
        kql, "let f = (a:long, b:long = 2) { a - b }; print f(b=1, a=5), f(a=5), f(a=7, 1)"
    )
    assert result == [(4, 3, 6)]
    assert "matches no parameter" in refused(
        kql, "let f = (a:long, b:long) { a - b }; print f(b=1, 2)"
    )


def test_named_arguments_of_a_builtin_bind_by_position_and_name_the_result(kql: Engine) -> None:
    # Kusto.Language binds a built-in's arguments by position whatever their names
    # (`round(precision=2, number=1.234)` is a type error there); the first one's name
    # names an unnamed result of a function named after its first argument
    columns, result = rows(kql, "E | summarize n = count() by bin(Day = Ts, 1d) | order by Day asc")
    assert columns == ["Day", "n"]
    assert result == [(dt.datetime(2024, 1, 1), 2), (dt.datetime(2024, 1, 2), 1)]
    _, result = rows(kql, "print x = strcat_delim(delimiter = '-', 'a', 'b')")
    assert result == [("a-b",)]
    assert "naming its result" in refused(kql, "print strcat_delim(delimiter = '-', 'a')")


def test_unicode_hex_and_octal_escapes_are_decoded(kql: Engine) -> None:
    _, result = rows(kql, r'print a = "caf\u00e9", b = "\x41\101", c = "\ud83d\ude00", d = @"\u"')
    assert result == [("café", "AA", "😀", "\\u")]


def test_make_list_of_objects_gives_objects(kql: Engine) -> None:
    _, result = rows(
        kql,
        "E | where Dev == 'a' | order by Ts asc "
        "| summarize l = make_list(pack('dev', Dev, 'ok', Ok)), s = make_set(D)",
    )
    lst, s = result[0]
    assert lst == [{"dev": "a", "ok": True}, {"dev": "a", "ok": False}]
    assert sorted(s, key=str) == [{"k": [1, 2]}, {"k": [3]}]


def test_base64_of_bytes_that_are_not_utf8_is_empty_and_invalid_base64_refused(
    kql: Engine,
) -> None:
    _, result = rows(
        kql,
        'print a = base64_decode_tostring("S3VzdG8="), '
        'b = base64_decode_tostring("U3RyaW5n0KHR0tGA0L7Rh9C60LA=")',
    )
    assert result == [("Kusto", "")]
    assert "not base64" in refused(kql, 'print base64_decode_tostring("abc")')


def test_between_a_datetime_and_a_timespan(kql: Engine) -> None:
    _, result = rows(kql, "E | where Ts between (datetime(2024-01-01 01:00) .. 1h) | project Dev")
    assert result == [("a",)]


def test_range_of_integers_includes_its_end(kql: Engine) -> None:
    _, result = rows(kql, "print a = range(1, 4), b = range(10, 1, -4), c = range(3, 1, 1)")
    assert result == [([1, 2, 3, 4], [10, 6, 2], [])]
    assert "range()" in refused(kql, "print range(1.5, 3, 0.5)")


def test_partition_with_top_one_is_the_row_per_key(kql: Engine) -> None:
    columns, result = rows(kql, "E | partition by Dev (top 1 by Ts) | order by Dev asc")
    assert columns == ["Ts", "Dev", "Ok", "Doc", "D"]
    assert [(r[1], r[0]) for r in result] == [
        ("a", dt.datetime(2024, 1, 1, 1, 30)),
        ("b", dt.datetime(2024, 1, 2)),
    ]
    assert "top N" in refused(kql, "E | partition by Dev (top 2 by Ts)")


def test_bag_unpack_types_its_columns_and_orders_them_by_key(kql: Engine) -> None:
    columns, result = rows(
        kql,
        "E | extend b = pack('z', Dev, 'k', D.k, 'ok', Ok) "
        "| project Ts, b | evaluate bag_unpack(b, 'p_') | order by Ts asc",
    )
    assert columns == ["Ts", "p_k", "p_ok", "p_z"]
    assert [r[1:] for r in result] == [([1, 2], True, "a"), ([3], False, "a"), (None, True, "b")]
    assert "input column" in refused(kql, "E | extend b = pack('Dev', 1) | evaluate bag_unpack(b)")


def test_make_bag_merges_the_group_top_level(kql: Engine) -> None:
    _, result = rows(kql, "E | summarize b = make_bag(pack(Dev, Ok)), e = make_bag_if(D, false)")
    assert result == [({"a": result[0][0]["a"], "b": True}, {})]
    assert result[0][0]["a"] in (True, False)


def test_tabular_let_functions_and_views(kql: Engine) -> None:
    _, result = rows(
        kql,
        "let V = view() { let d = 'a'; E | where Dev == d }; "
        "let F = (ok:bool) { E | where Ok == ok }; V | join kind=inner (F(true)) "
        "on Ts | project Dev, Ok",
    )
    assert result == [("a", True)]
    # views inside a view (innermost first), and a body that needs a rewrite itself
    _, result = rows(
        kql,
        "let V = view() { let d = 'b'; let W = view() { E | where Dev == d }; W }; "
        "let S = view() { E | summarize makeset(Dev) }; V | project Dev, s = toscalar(S)",
    )
    assert result == [("b", ["a", "b"])] or result == [("b", ["b", "a"])]
    assert "repeated let names" in refused(
        kql, "let V = view() { let d = 1; E }; let d = 2; V | take 1"
    )


def test_single_level_top_nested(kql: Engine) -> None:
    columns, result = rows(kql, "E | top-nested 1 of Dev by count()")
    assert columns == ["Dev", "aggregated_Dev"] and result == [("a", 2)]
    assert "levels" in refused(
        kql, "E | top-nested 1 of Dev by count(), top-nested 1 of Ok by count()"
    )


def test_split_indexof_extract_json_and_pack_keys(kql: Engine) -> None:
    _, result = rows(
        kql,
        "print a = split('x:y', ':', 1), b = split('x:y', ':', 4), "
        "c = indexof('abcabc', 'b', 2), d = indexof('abc', 'b', 5), "
        'e = extract_json(\'$.a.b\', \'{"a": {"b": "v"}}\'), '
        "f = extractjson(\"$['n']\", '{\"n\": 5}', typeof(long)), "
        "g = pack(strcat('k', '1'), 1)",
    )
    assert result == [(["y"], [], 4, -1, "v", 5, {"k1": 1})]


def test_join_on_a_conjunction_and_a_parenthesized_head(kql: Engine) -> None:
    _, result = rows(
        kql,
        "(E | project Dev, Ok) | join kind=inner (E | project Dev, Ok, Ts) "
        "on $left.Dev == $right.Dev and $left.Ok == $right.Ok | count",
    )
    assert result == [(3,)]


# -- the rewriter on its own -------------------------------------------------------------------


def test_queries_without_such_constructs_are_left_alone() -> None:
    query = "T | where Name has 'x' | summarize make_set(Name) by G | take 5"
    assert rewrite_kql(query).text == query
    assert rewrite_kql("T | wher").text == "T | wher"  # duckdb-kql reports the syntax error


def test_constructs_needing_input_columns_are_refused_without_an_engine() -> None:
    with pytest.raises(KqlRefused, match="input columns"):
        rewrite_kql("T | project-reorder a")


@pytest.mark.parametrize(
    ("body", "value"),
    [
        (r"a\tb", "a\tb"),
        (r"\u0041\u00E9", "Aé"),
        (r"\x41\x4a", "AJ"),
        (r"\101\60\0", "A0\0"),
        (r"\q\'\"\\", "q'\"\\"),
        (r"\ud83d\ude00", "😀"),
    ],
)
def test_kql_string_escapes_follow_kusto_language(body: str, value: str) -> None:
    assert decode_string(body) == value


def test_an_unpaired_surrogate_is_refused() -> None:
    with pytest.raises(ValueError, match="surrogate"):
        decode_string(r"\ud83d")


def test_rewrite_of_a_nested_deprecated_alias() -> None:
    out = rewrite_kql("T | summarize tostring(makeset(parsejson(a))) by b").text
    assert out == "T | summarize tostring(queryeval_make_set(parse_json(a), 128)) by b"


def test_an_unknown_path(tmp_path: Path) -> None:
    assert rewrite_kql("T | mv-expand todynamic(strcat(a, b))").text == (
        "T | mv-expand todynamic(strcat(a, b))"
    )


# -- issue 28: the real-world tail -----------------------------------------------------------------


def test_parse_with_a_pattern_that_starts_with_a_capture(kql: Engine) -> None:
    """parse-operator docs: each column captures up to the next literal, the first from the
    start; a typed column that does not convert is null, a row that does not match gives
    '' (strings) and null (typed)."""
    query = ("print s = dynamic(['v12:rest of it', 'none', ':x']) | mv-expand s to typeof(string) "
             "| parse s with word ':' tail | parse s with 'v' n:long ':' * "
             "| project word, tail, n")  # fmt: skip
    assert rows(kql, query) == (
        ["word", "tail", "n"],
        [("v12", "rest of it", 12), ("", "", None), ("", "x", None)],
    )


def test_as_without_a_later_reference_passes_the_rows_on(kql: Engine) -> None:
    assert rows(kql, "E | as Events | count") == (["Count"], [(3,)])
    # the name at the top level: `let Events = E; Events | join (Events) ...` (the as docs);
    # innerunique: one left row per Dev (a, b), the right's a x2 and b x1
    assert rows(kql, "E | as Events | join (Events) on Dev | count") == (["Count"], [(3,)])
    assert "as U" in refused(kql, "E | join (E | as U | where Dev in ((U | project Dev))) on Dev")


def test_star_predicates_and_search_test_every_column(kql: Engine) -> None:
    """`where * has "x"` is true when any column has the term (Kusto's search docs: `T |
    search "x"` is the same); a negated one needs every column."""
    assert rows(kql, "E | where * has 'a' | count") == (["Count"], [(2,)])  # Dev == 'a'
    # Doc holds "z"; `$table` first, as Kusto.Language types `T | search "x"`
    columns, result = rows(kql, "E | search 'z' | project-away D")
    assert columns == ["$table", "Ts", "Dev", "Ok", "Doc"] and len(result) == 1
    assert result[0][:3] == ("E", dt.datetime(2024, 1, 1, 1, 30), "a")
    assert "search" in refused(kql, "E | where Ok | search 'z'")
    assert rows(kql, "E | where * !has 'a' | count") == (["Count"], [(1,)])
    assert rows(kql, "E | search Dev:'a' | count") == (["Count"], [(2,)])  # Dev has 'a'
    assert "search" in refused(kql, "E | search 'a*b'")  # a regex match: not written


def test_ipv4_is_private_as_in_kusto_docs(kql: Engine) -> None:
    """ipv4-is-private-function.md's example: 10.1.2.3 true, 192.168.1.1/24 true, 127.0.0.1
    false; 202.1.2.3 false; text that is not an address null."""
    query = ("datatable(ip_string:string) ['10.1.2.3', '192.168.1.1/24', '127.0.0.1', "
             "'202.1.2.3', '172.16.0.9', '172.32.0.1', 'none'] "
             "| extend result = ipv4_is_private(ip_string)")  # fmt: skip
    _, result = rows(kql, query)
    assert [r[1] for r in result] == [True, True, False, False, True, False, None]


def test_ipv4_is_in_range_as_in_kusto_docs(kql: Engine) -> None:
    """ipv4-is-in-range-function.md: equal addresses true, 192.168.1.1 in 192.168.1.255/24
    true (the 24-bit prefix is compared), 192.168.1.6 in 192.168.1.1/24 true, 192.168.1.1 in
    192.168.2.1/24 false; null when either is not an IPv4 address."""
    query = ("datatable(a:string, r:string) ['192.168.1.1', '192.168.1.1', '192.168.1.1', "
             "'192.168.1.255/24', '192.168.1.6', '192.168.1.1/24', '192.168.1.1', "
             "'192.168.2.1/24', '10.9.8.7', '0.0.0.0/0', 'none', '10.0.0.0/8', '10.0.0.1', "
             "'10.0.0.300/8'] | extend result = ipv4_is_in_range(a, r)")  # fmt: skip
    _, result = rows(kql, query)
    assert [r[2] for r in result] == [True, True, True, False, True, None, None]
    assert kql.execute("print ipv4_is_in_range('10.0.0.1/8', '10.0.0.0/8')").outcome.kind == (
        "unsupported"  # an address with a prefix of its own: not in the docs
    )
