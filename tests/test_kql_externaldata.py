"""`externaldata` on the embedded KQL engine: URLs a database maps to local files read as
Kusto reads them (the examples of Kusto's `externaldata` docs, with the files they
describe), any other URL refused as the evaluator's, a mapping to a missing file a
configuration error."""

from __future__ import annotations

import datetime as dt
import gzip
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("duckdb_kql")

from queryeval.config import DatabaseConfig
from queryeval.engines import Limits, build_engine, database_problem
from queryeval.engines._kql import KqlEngine
from queryeval.engines._kql_externaldata import ExternalData, find, synthetic_rows

NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
BLOB = "https://storageaccount.blob.core.windows.net/storagecontainer"
STORE = "https://mycompanystorage.blob.core.windows.net"
PARTS = [f"{STORE}/archivedproducts/2019/01/0{d}/part-0000{d}.csv.gz?...SAS..." for d in (1, 2, 3)]
EVENTS = f"{STORE}/events/2020/09/01/part-0000.json?...SAS..."
# the JSON file of the docs' multijson example (records spanning several lines)
EVENTS_JSON = """{
  "timestamp": "2019-01-01 10:00:00.238521",
  "data": {
    "tenant": "e1ef54a6-c6f2-4389-836e-d289b37bcfe0",
    "method": "RefreshTableMetadata"
  }
}
{
  "timestamp": "2019-01-01 10:00:01.845423",
  "data": {
    "tenant": "9b49d0d7-b3e6-4467-bb35-fa420a25d324",
    "method": "GetFileList"
  }
}
"""
MAPPING = (
    '[{"Column":"Timestamp","Properties":{"Path":"$.timestamp"}},'
    '{"Column":"TenantId","Properties":{"Path":"$.data.tenant"}},'
    '{"Column":"MethodName","Properties":{"Path":"$.data.method"}}]'
)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("externaldata")
    out = {}
    (folder / "users.txt").write_text("alice\n\nbob\r\n")  # TXT: empty lines skipped
    out[f"{BLOB}/users.txt"] = folder / "users.txt"
    (folder / "data.csv").write_text(
        '2024-01-01T10:00:00Z,Login\n2024-01-02 11:30:00+01:00,"Log, out"\n2024-01-03,Out\n'
    )
    out[f"{BLOB}/data.csv"] = folder / "data.csv"
    days = [
        'Timestamp,ProductId,ProductDescription\n2019-01-01,p1,"a ""red"" one"\n2019-01-01,p2,x\n',
        "Timestamp,ProductId,ProductDescription\n2019-01-02,p1,y\n",
        "Timestamp,ProductId,ProductDescription\n2019-01-03,p1,z\n2019-01-03,p3,w\n",
    ]
    for i, (url, text) in enumerate(zip(PARTS, days, strict=True)):
        path = folder / f"part{i}.csv.gz"
        path.write_bytes(gzip.compress(text.encode()))
        out[url.split("?")[0]] = path  # matched without the SAS token
    (folder / "events.json").write_text(EVENTS_JSON)
    out[EVENTS] = folder / "events.json"
    (folder / "bad.csv").write_text("a,1\nb\n")
    out["https://x/bad.csv"] = folder / "bad.csv"
    return out


@pytest.fixture(scope="module")
def kql(files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[KqlEngine]:
    import duckdb

    path = tmp_path_factory.mktemp("db") / "users.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE Users (UserID VARCHAR, Age BIGINT)")
    con.execute("INSERT INTO Users VALUES ('alice', 30), ('carol', 40), ('bob', 50)")
    con.close()
    engine = KqlEngine("users", path, Limits(timeout_s=30), "users", NOW, ExternalData(files))
    yield engine
    engine.close()


def rows(engine: KqlEngine, query: str) -> list[tuple[object, ...]]:
    run = engine.execute(query)
    assert run.outcome.kind == "ok", run.outcome.message
    assert run.result is not None
    return sorted(run.result.rows, key=repr)


def test_the_docs_txt_example_filters_a_table_by_the_ids_in_a_file(kql: KqlEngine) -> None:
    # no format given: detected from the extension (the docs: "the detected data format is TXT")
    query = (f'Users | where UserID in ((externaldata (UserID:string) [\n  @"{BLOB}/users.txt;'
             'managed_identity=..."\n  ]))')  # fmt: skip
    assert find(query)[0].format == "txt"
    assert rows(kql, query) == [("alice", 30), ("bob", 50)]


def test_the_docs_csv_files_example_reads_every_gzip_part(kql: KqlEngine) -> None:
    urls = ",\n  ".join(f'h@"{url}"' for url in PARTS)
    query = (f"externaldata(Timestamp:datetime, ProductId:string, ProductDescription:string)\n"
             f'[\n  {urls}\n]\nwith(format="csv", ignoreFirstRecord=true)\n'
             "| summarize count() by ProductId")  # fmt: skip
    assert rows(kql, query) == [("p1", 3), ("p2", 1), ("p3", 1)]
    quoted = rows(
        kql, query.replace("| summarize count() by ProductId", "| where ProductId == 'p1'")
    )
    assert (dt.datetime(2019, 1, 1), "p1", 'a "red" one') in quoted  # RFC 4180 quotes


def test_the_docs_multijson_example_maps_paths_to_columns(kql: KqlEngine) -> None:
    query = (f"externaldata(Timestamp: datetime, TenantId: guid, MethodName: string)\n"
             f"[ h@'{EVENTS}' ]\n"
             f"with(format='multijson', ingestionMapping='{MAPPING}')")  # fmt: skip
    assert rows(kql, query) == [
        (dt.datetime(2019, 1, 1, 10, 0, 0, 238521),
         uuid.UUID("e1ef54a6-c6f2-4389-836e-d289b37bcfe0"), "RefreshTableMetadata"),
        (dt.datetime(2019, 1, 1, 10, 0, 1, 845423),
         uuid.UUID("9b49d0d7-b3e6-4467-bb35-fa420a25d324"), "GetFileList"),
    ]  # fmt: skip


def test_the_docs_first_example_in_a_let_and_a_join(kql: KqlEngine) -> None:
    source = f'externaldata (Date:datetime, Event:string)\n[h@"{BLOB}/data.csv"]'
    assert rows(kql, f"{source}\n| where strlen(Event) > 4") == [
        (dt.datetime(2024, 1, 1, 10), "Login"), (dt.datetime(2024, 1, 2, 10, 30), "Log, out")
    ]  # fmt: skip
    joined = f"let E = {source};\nUsers | extend Event = 'Login' | join kind=inner (E) on Event"
    assert [r[0] for r in rows(kql, joined)] == ["alice", "bob", "carol"]


def test_an_unmapped_url_is_refused_with_how_to_map_it(kql: KqlEngine) -> None:
    run = kql.execute('externaldata (x:string) ["https://elsewhere/x.csv"] | count')
    assert run.outcome.kind == "unsupported"
    assert "https://elsewhere/x.csv" in run.outcome.message
    assert "externaldata: {URL: path}" in run.outcome.message


def test_what_the_docs_leave_open_is_refused_never_guessed(kql: KqlEngine) -> None:
    wrong_count = kql.execute('externaldata (a:string, n:long) ["https://x/bad.csv"]')
    assert wrong_count.outcome.kind == "unsupported"
    assert "record 2 has 1 fields" in wrong_count.outcome.message
    not_a_date = kql.execute(f'externaldata (d:datetime) ["{BLOB}/users.txt"]')
    assert not_a_date.outcome.kind == "unsupported"
    assert "ISO 8601" in not_a_date.outcome.message


def test_a_row_source_gives_every_url_the_declared_schema() -> None:
    external = ExternalData(rows=synthetic_rows(lambda kind, i: i if kind == "long" else "v", 2))
    found = find('externaldata (n:long, s:string) ["https://any/where"]')[0]
    assert external.table(found).rows == ((0, "v"), (1, "v"))
    assert external.emptied().table(found).rows == ()


def test_the_option_resolves_files_and_a_missing_one_stops_the_run(tmp_path: Path) -> None:
    seed = Path(__file__).resolve().parents[1] / "examples" / "kql" / "fixtures" / "logs"
    (tmp_path / "ips.txt").write_text("10.0.0.1\n")
    options = {"now": "2024-06-01T00:00:00Z", "externaldata": {"https://x/ips.txt": "ips.txt"}}
    good = DatabaseConfig(engine="kql", fixture=str(seed), options=options)
    assert database_problem(good, tmp_path) is None
    engine = build_engine("logs", good, tmp_path, tmp_path / "cache")
    try:
        run = engine.execute('externaldata (Ip:string) ["https://x/ips.txt"]')
        assert run.result is not None and list(run.result.rows) == [("10.0.0.1",)]
        assert "externaldata=" in engine.identity  # the gold cache keys on the files
    finally:
        engine.close()
    missing = good.model_copy(update={"options": {"externaldata": {"https://x/a.csv": "no.csv"}}})
    place, message = database_problem(missing, tmp_path) or ((), "")
    assert place == ("options", "externaldata", "https://x/a.csv")
    assert "externaldata file not found" in message and str(tmp_path / "no.csv") in message


def test_columns_whose_names_differ_only_in_case_are_two_columns(kql: KqlEngine) -> None:
    # Kusto's names are case-sensitive (m4nbat's ransomware.live victims declare `country` and
    # `Country`): CSV fields map to the declared columns in order (identity mapping)
    source = f'externaldata (Event:string, event:string) [h@"{BLOB}/data.csv"]'
    run = kql.execute(f"{source}\n| where strlen(Event) > 10")
    assert run.result is not None, run.outcome.message
    assert list(run.result.columns) == ["Event", "event"]
    assert sorted(run.result.rows) == [("2024-01-01T10:00:00Z", "Login"),
                                       ("2024-01-02 11:30:00+01:00", "Log, out")]  # fmt: skip
    # naming the second spelling (DuckDB folds case: it would read the first) is refused
    run = kql.execute(f"{source}\n| where event == 'Login'")
    assert run.outcome.kind == "unsupported" and "differ only in case" in run.outcome.message
