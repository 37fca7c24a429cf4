"""Single KQL functions on the embedded engine, each against the examples of Kusto's docs
(their inputs and outputs): format_bytes, format_timespan, datetime_diff over aggregates in
`summarize`; and what cannot be Kusto's answer is refused as the evaluator's `unsupported`,
never an engine error (a scalar function with its own `let` statements, parse_user_agent)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

pytest.importorskip("duckdb_kql")

from kql_support import kql_engine
from queryeval.engines._kql import KqlEngine


@pytest.fixture(scope="module")
def kql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KqlEngine]:
    with kql_engine(
        tmp_path_factory.mktemp("kqlfn") / "t.duckdb",
        "CREATE TABLE T (Name VARCHAR, Size BIGINT)",
        "INSERT INTO T VALUES ('a', 564), ('b', 20010332)",
    ) as engine:
        yield engine


def row(engine: KqlEngine, query: str) -> tuple[object, ...]:
    run = engine.execute(query)
    assert run.outcome.kind == "ok", run.outcome.message
    assert run.result is not None
    return tuple(run.result.rows[0])


def refused(engine: KqlEngine, query: str) -> str:
    run = engine.execute(query)
    assert run.outcome.kind == "unsupported", (run.outcome.kind, run.outcome.message)
    return run.outcome.message


def test_format_bytes_gives_the_docs_outputs(kql: KqlEngine) -> None:
    query = ('print v1 = format_bytes(564), v2 = format_bytes(10332, 1), '
             'v3 = format_bytes(20010332), v4 = format_bytes(20010332, 2), '
             'v5 = format_bytes(20010332, 0, "KB")')  # fmt: skip
    assert row(kql, query) == ("564 Bytes", "10.1 KB", "19 MB", "19.08 MB", "19541 KB")
    # estimate-table-size and materialized-views-monitoring: GB with 2 digits, 0 Bytes
    assert row(kql, 'print format_bytes(1761782453926, 2, "GB"), format_bytes(0)') == (
        "1640.79 GB", "0 Bytes")  # fmt: skip
    assert row(kql, "T | summarize s = format_bytes(sum(Size))") == ("19 MB",)


def test_format_bytes_refuses_what_the_docs_leave_open(kql: KqlEngine) -> None:
    assert "last digit" in refused(kql, "print format_bytes(10240, 1)")  # "10.0 KB" or "10 KB"?
    assert "halfway" in refused(kql, "print format_bytes(1536)")  # 1.5 KB: which rounding?
    assert "units" in refused(kql, 'print format_bytes(1, 0, "kb")')


def test_format_timespan_gives_the_docs_outputs(kql: KqlEngine) -> None:
    query = ("let t = time(29.09:00:05.12345);\nprint v1=format_timespan(t, 'dd.hh:mm:ss:FF'),"
             "\nv2=format_timespan(t, 'ddd.h:mm:ss [fffffff]')")  # fmt: skip
    assert row(kql, query) == ("29.09:00:05:12", "029.9:00:05 [1234500]")
    # the format elements' table: 15.13:45:30.6170000 and 15.13:45:30.0001150
    elements = ("print format_timespan(time(15.13:45:30.617), 'd dd ddd f ff fff F FF FFF H HH "
                "m mm s ss'),\n"
                "format_timespan(time(15.13:45:30.0001150), 'fffffff FFFFFFF')")  # fmt: skip
    assert row(kql, elements) == ("15 15 015 6 61 617 6 61 617 13 13 45 45 30 30", "0001150 000115")
    assert row(kql, "print format_timespan(14d, 'd')") == ("14",)


def test_format_timespan_refuses_undocumented_forms(kql: KqlEngine) -> None:
    # "(no output)" for an F element: whether its delimiter stays is not documented
    assert "no digit" in refused(kql, "print format_timespan(time(15.13:45:30.05), 'ss.F')")
    assert "outside" in refused(kql, "print format_timespan(1d, 'dd mmm')")
    assert "negative" in refused(kql, "print format_timespan(-1d, 'd')")


def test_datetime_diff_over_aggregates_in_summarize(kql: KqlEngine) -> None:
    # the docs' examples, each pair as the max of one column (week: Kusto counts Sunday week
    # boundaries, 5; DuckDB's date_diff whole weeks, 4)
    pairs = {"year": ("2017-01-01", "2000-12-31", 17), "month": ("2017-01-01", "2015-12-30", 13),
             "week": ("2017-10-29 00:00", "2017-09-30 23:59", 5),
             "day": ("2017-10-29 00:00", "2017-09-30 23:59", 29),
             "hour": ("2017-10-31 01:00", "2017-10-30 23:59", 2),
             "minute": ("2017-10-30 23:05:01", "2017-10-30 23:00:59", 5),
             "second": ("2017-10-30 23:00:10.100", "2017-10-30 23:00:00.900", 10)}  # fmt: skip
    columns = ", ".join(f"{p}1:datetime, {p}2:datetime" for p in pairs)
    values = ", ".join(f"datetime({a}), datetime({b})" for a, b, _ in pairs.values())
    diffs = ", ".join(f"{p} = datetime_diff('{p}', max({p}1), max({p}2))" for p in pairs)
    query = f"datatable({columns}) [{values}]\n| summarize {diffs}"
    assert row(kql, query) == tuple(expected for _, _, expected in pairs.values())


def test_a_scalar_function_with_its_own_lets_runs_or_is_unsupported(kql: KqlEngine) -> None:
    # benscha's maskUpn (KQLAdvancedHunting): the lets inlined into the last expression
    query = ('let maskUpn = (upn: string) {\n    let atPos = indexof(upn, "@");\n'
             '    let localPart = iif(atPos > 0, substring(upn, 0, atPos), upn);\n'
             '    let domain = iif(atPos > 0, substring(upn, atPos), "");\n'
             '    strcat(substring(localPart, 0, 2), "***", domain)\n};\n'
             'print m = maskUpn("john.doe@contoso.com"), n = maskUpn("x")')  # fmt: skip
    assert row(kql, query) == ("jo***@contoso.com", "x***")
    # a let holding a pipeline is not inlined: the engine's gap, never an engine error
    message = refused(kql, "let f = (a:long) { let m = toscalar(T | count); m + a }; print f(3)")
    assert "let statements of its own" in message or "stored function" in message


def test_functions_whose_answers_cannot_be_kustos_are_refused_with_why(kql: KqlEngine) -> None:
    # parse_user_agent: Kusto's patterns are not published (its docs' first example)
    query = ('print useragent = "Mozilla/5.0 (Windows; U; en-US) AppleWebKit/531.9 (KHTML, '
             'like Gecko) AdobeAIR/2.5.1"\n'
             '| extend x = parse_user_agent(useragent, "browser")')  # fmt: skip
    assert "patterns are Kusto's own" in refused(kql, query)
    # series_decompose_anomalies / _forecast: the docs name the steps, not the arithmetic
    for call in ("series_decompose_anomalies(s, 1.5, -1, 'linefit')",
                 "series_decompose_forecast(s, 3)"):  # fmt: skip
        message = refused(kql, f"print s = dynamic([1, 2, 3, 40, 5, 6])\n| extend r = {call}")
        assert "cannot be reproduced exactly" in message


def test_unicode_codepoints_and_jaccard_index_give_the_docs_outputs(kql: KqlEngine) -> None:
    assert row(kql, 'print arr = unicode_codepoints_from_string("⒦⒰⒮⒯⒪")') == (
        [9382, 9392, 9390, 9391, 9386],)  # fmt: skip
    assert row(kql, 'print to_utf8("קוסטו - Kusto")') == (
        [1511, 1493, 1505, 1496, 1493, 32, 45, 32, 75, 117, 115, 116, 111],)  # fmt: skip
    query = 'print str = unicode_codepoints_to_string(unicode_codepoints_from_string("Kusto"))'
    assert row(kql, query) == ("Kusto",)
    # unicode_codepoints_to_string: values or arrays of them (alias make_string), null for a
    # value that is no code point; base64_decode_toarray's "S3VzdG8=" ('K', 'u', 's', 't', 'o')
    assert row(kql, "print unicode_codepoints_to_string(75, 117, 115, 116, 111), "
                    "make_string(dynamic([75, 117, 115, 116, 111])), "
                    "isnull(unicode_codepoints_to_string(dynamic([55296])))") == (
        "Kusto", "Kusto", True)  # fmt: skip
    assert row(kql, 'print Quine=base64_decode_toarray("S3VzdG8=")') == ([75, 117, 115, 116, 111],)
    query = "print s=dynamic([1,2,3]), t=dynamic([1,2,3,4])\n| extend j=jaccard_index(s, t)"
    assert row(kql, query)[2] == 0.75
    assert "two empty sets" in refused(kql, "print jaccard_index(dynamic([]), dynamic([]))")


def test_time_zone_conversions_give_the_docs_outputs(kql: KqlEngine) -> None:
    query = ("datatable(local_dt: datetime, tz: string)\n"
             "[ datetime(2020-02-02 20:02:20), 'US/Pacific',\n"
             "  datetime(2020-02-02 20:02:20), 'America/Chicago',\n"
             "  datetime(2020-02-02 20:02:20), 'Europe/Paris']\n"
             "| extend utc_dt = datetime_local_to_utc(local_dt, tz)")  # fmt: skip
    run = kql.execute(query)
    assert run.result is not None, run.outcome.message
    assert [r[2] for r in run.result.rows] == [dt.datetime(2020, 2, 3, 4, 2, 20),
                                               dt.datetime(2020, 2, 3, 2, 2, 20),
                                               dt.datetime(2020, 2, 2, 19, 2, 20)]  # fmt: skip
    # the DST note: 02:00 in Brussels was skipped (Kusto: 00:00 UTC; ICU alone gives 01:00)
    query = ("range Local from datetime(2022-03-27 01:00:00) to datetime(2022-03-27 04:00:00) "
             "step 1h\n| extend UTC=datetime_local_to_utc(Local, 'Europe/Brussels')\n"
             "| extend BackToLocal=datetime_utc_to_local(UTC, 'Europe/Brussels')")  # fmt: skip
    run = kql.execute(query)
    assert run.result is not None, run.outcome.message
    assert [(r[1].hour, r[2].hour) for r in run.result.rows] == [(0, 1), (0, 1), (1, 3), (2, 4)]
    query = ("print dt=datetime(2022-07-11 22:18:48.4678620)\n| extend p = "
             "datetime_utc_to_local(dt, 'US/Pacific'), c = datetime_utc_to_local(dt, "
             "'Australia/Canberra')\n| extend diff = p - c")  # fmt: skip
    assert row(kql, query)[1:] == (dt.datetime(2022, 7, 11, 15, 18, 48, 467862),
                                   dt.datetime(2022, 7, 12, 8, 18, 48, 467862),
                                   -dt.timedelta(hours=17))  # fmt: skip
    # a local time the clocks repeat is not documented
    assert "repeat" in refused(kql, "print datetime_local_to_utc(datetime(2022-10-30 02:30), "
                                    "'Europe/Brussels')")  # fmt: skip


def test_parse_path_command_line_and_xml_give_the_docs_outputs(kql: KqlEngine) -> None:
    query = ('datatable(p:string)\n[@"C:\\temp\\file.txt", @"temp\\file.txt",\n'
             '"file://C:/temp/file.txt:some.exe", @"\\\\shared\\users\\temp\\file.txt.gz",\n'
             '"/usr/lib/temp/file.txt"]\n| extend path_parts = parse_path(p)')  # fmt: skip
    run = kql.execute(query)
    assert run.result is not None, run.outcome.message
    keys = ("Scheme", "RootPath", "DirectoryPath", "DirectoryName", "Filename", "Extension",
            "AlternateDataStreamName")  # fmt: skip
    assert [tuple(r[1].values()) for r in run.result.rows] == [
        ("", "C:", "C:\\temp", "temp", "file.txt", "txt", ""),
        ("", "", "temp", "temp", "file.txt", "txt", ""),
        ("file", "C:", "C:/temp", "temp", "file.txt", "txt", "some.exe"),
        ("", "", "\\\\shared\\users\\temp", "temp", "file.txt.gz", "gz", ""),
        ("", "", "/usr/lib/temp", "temp", "file.txt", "txt", ""),
    ]
    assert all(tuple(r[1]) == keys for r in run.result.rows)
    assert "do not show" in refused(kql, 'print parse_path("file.txt")')
    assert row(kql, 'print parse_command_line("echo \\"hello world!\\"", "windows")') == (
        ["echo", "hello world!"],)  # fmt: skip
    assert "quirks" in refused(kql, 'print parse_command_line(@"a\\"" b", "windows")')
    # parse_csv: quotes escape commas, line feeds and quotes; only the first record is taken
    query = 'print parse_csv(\'aa,"b,b,b",cc,"Escaping quotes: ""Title""","line1\\nline2"\')'
    assert row(kql, query) == (["aa", "b,b,b", "cc", 'Escaping quotes: "Title"', "line1\nline2"],)
    assert row(kql, "print parse_csv('record1,a,b,c\\nrecord2,x,y,z')") == (
        ["record1", "a", "b", "c"],)  # fmt: skip
    assert "RFC 4180" in refused(kql, """print parse_csv('a"b')""")
    # parse_xml: null for text that is not XML ("" is not); XML text itself is refused
    assert row(kql, 'print isnull(parse_xml(""))') == (True,)
    assert "documented only" in refused(kql, 'print parse_xml("<e>text</e>")')


def test_the_string_form_of_a_split_is_its_json_text(kql: KqlEngine) -> None:
    # split() gives a dynamic array; its string form is its JSON text, as duckdb-kql measured
    # for tostring(dynamic([1,2])) ('[1,2]'); duckdb-kql's list gave 'x[a, b]'
    query = 'print a = strcat("x", split("a,b", ",")), b = tostring(split("a,\\"b", ","))'
    assert row(kql, query) == ('x["a","b"]', '["a","\\"b"]')
    assert row(kql, 'print tostring(dynamic([1, 2])), strcat("a", 1, true)') == ("[1,2]", "a1True")


def test_strcat_array_with_a_constant_delimiter_binds(kql: KqlEngine) -> None:
    # the docs' example; a list string form with DuckDB's volatile error() in it made the
    # delimiter, which string_agg needs constant, fail to bind (m365d-088)
    assert row(kql, 'print strcat_array(dynamic([1, 2, 3]), "->")') == ("1->2->3",)
    assert row(kql, 'print strcat_array(split("a,b", ","), "")') == ("ab",)
