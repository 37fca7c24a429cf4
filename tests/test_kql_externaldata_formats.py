"""How `externaldata` reads a file, against Kusto's docs ("Data formats supported for
ingestion", "Ingestion mappings", JSON and CSV mapping, scalar data types): the formats named
by an extension, zip compression, JSON mapping paths, TXT mappings. Reads the
files directly (no engine)."""

from __future__ import annotations

import datetime as dt
import io
import json
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("duckdb_kql")

from queryeval.engines._kql_externaldata import find, read_rows
from queryeval.engines._kql_rewrite import KqlRefused


def rows_of(query: str, path: Path) -> list[tuple[object, ...]]:
    return read_rows(find(query)[0], [path])


def test_a_format_named_by_its_extension_is_that_format_not_csv(tmp_path: Path) -> None:
    # the formats' table: .parquet is Parquet, .log W3CLOGFILE (neither read: refused)
    (tmp_path / "a").write_text("x,1\n")
    for ext, fmt in (("parquet", "parquet"), ("log", "w3clogfile"), ("avro", "avro")):
        query = f'externaldata (s:string, n:long) ["https://x/data.{ext}"]'
        assert find(query)[0].format == fmt
        with pytest.raises(KqlRefused, match=fmt):
            rows_of(query, tmp_path / "a")
    # no extension (or only a compression one): the default, CSV
    assert find('externaldata (s:string) ["https://x/data.zip"]')[0].format == "csv"


def test_a_zip_compressed_file_is_read_and_an_archive_of_several_refused(tmp_path: Path) -> None:
    # "MyData.csv.zip indicates a blob or file formatted as CSV, compressed with zip"
    def zipped(**members: str) -> Path:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, text in members.items():
                archive.writestr(name, text)
        path = tmp_path / f"{len(members)}.zip"
        path.write_bytes(buffer.getvalue())
        return path

    query = 'externaldata (s:string, n:long) ["https://x/MyData.csv.zip"]'
    assert rows_of(query, zipped(a="x,1\ny,2\n")) == [("x", 1), ("y", 2)]
    with pytest.raises(KqlRefused, match="zip archive of 2 files"):
        rows_of(query, zipped(a="x,1\n", b="y,2\n"))
    (tmp_path / "latin1.csv").write_bytes("caf\xe9,1\n".encode("latin-1"))
    with pytest.raises(KqlRefused):  # not UTF-8: refused, never an engine error
        rows_of(query, tmp_path / "latin1.csv")


def test_json_mapping_paths_as_the_json_mapping_docs_define_them(tmp_path: Path) -> None:
    (tmp_path / "e.json").write_text(
        json.dumps({"Property name with space": "v", "Obj": {"Property": 1}}) + "\n"
    )
    mapping = ('[{"Column": "a", "Properties": {"Path": "$.Obj.Property"}},'
               '{"Column": "b", "Properties": {"Path": "$.[\\\'Property name with space\\\']"}},'
               '{"Column": "c", "Properties": {"Path": "fixed"}}]')  # fmt: skip
    query = ("externaldata (a:long, b:string, c:string) [\"https://x/e.json\"] "
             f"with (ingestionMapping='{mapping}')")  # fmt: skip
    # "If the value doesn't start with $ it's interpreted as a constant value"
    assert rows_of(query, tmp_path / "e.json") == [(1, "v", "fixed")]
    # a mapping that leaves a declared column out: not documented, refused (was the field
    # of the same name, as with no mapping at all)
    partial = query.replace("c:string", "c:string, Obj:dynamic")
    with pytest.raises(KqlRefused, match="does not map column 'Obj'"):
        rows_of(partial, tmp_path / "e.json")


def test_json_records_split_at_line_feeds_only(tmp_path: Path) -> None:
    # "JSON objects delimited by \n or \r\n": a U+2028 inside a string value is no delimiter
    (tmp_path / "s.json").write_text('{"s": "a\u2028b"}\r\n{"s": "c"}\n', newline="")
    query = 'externaldata (s:string) ["https://x/s.json"]'
    assert rows_of(query, tmp_path / "s.json") == [("a\u2028b",), ("c",)]


def test_a_txt_mapping_of_ordinal_0_and_constants(tmp_path: Path) -> None:
    # CSV mapping docs: "For TXT and RAW formats, only Ordinal 0 can be mapped"
    (tmp_path / "ips.txt").write_text("10.0.0.1\n10.0.0.2\n")
    mapping = ('[{"Column": "Ip", "Properties": {"Ordinal": "0"}},'
               '{"Column": "Feed", "Properties": {"ConstValue": "ipsum"}}]')  # fmt: skip
    query = ('externaldata (Ip:string, Feed:string) ["https://x/ips.txt"] '
             f"with (ingestionMapping='{mapping}')")  # fmt: skip
    assert rows_of(query, tmp_path / "ips.txt") == [("10.0.0.1", "ipsum"), ("10.0.0.2", "ipsum")]
    with pytest.raises(KqlRefused, match="Ordinal 0"):
        rows_of(query.replace('"Ordinal": "0"', '"Ordinal": "1"'), tmp_path / "ips.txt")
    # "either of" Ordinal and ConstValue ("When ConstValue ... Ordinal must be unset"); a
    # Column the schema does not declare
    with pytest.raises(KqlRefused, match="several of"):
        rows_of(query.replace('"ConstValue": "ipsum"', '"ConstValue": "a", "Ordinal": "0"'),
                tmp_path / "ips.txt")  # fmt: skip
    with pytest.raises(KqlRefused, match="not declared"):
        rows_of(query.replace('"Column": "Feed"', '"Column": "Nope"'), tmp_path / "ips.txt")


def test_a_timespan_field_in_the_days_hours_minutes_seconds_form(tmp_path: Path) -> None:
    # the timespan type's form days.hours:minutes:seconds: 25:00:00 is not of it (what Kusto
    # makes of it is not documented), refused rather than read as 25 hours
    (tmp_path / "t.csv").write_text("1.02:03:04.5\n")
    query = 'externaldata (t:timespan) ["https://x/t.csv"]'
    assert rows_of(query, tmp_path / "t.csv") == [(dt.timedelta(days=1, seconds=7384.5),)]
    (tmp_path / "t.csv").write_text("25:00:00\n")
    with pytest.raises(KqlRefused, match="hours over 23"):
        rows_of(query, tmp_path / "t.csv")
