"""`import_nl2kql`: NL2KQL pairs (JSONL / CSV) and schemas (each accepted JSON form), written
here, become a suite whose queries run on duckdb-kql over empty tables built from the schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from queryeval.errors import InputError
from queryeval.importers import ImportRequest as Request
from queryeval.importers.nl2kql import import_nl2kql
from queryeval.runner import load_suite, run_suite

KUSTO_SCHEMA = {
    "Databases": {
        "Security": {
            "Name": "Security",
            "Tables": {
                "DeviceLogonEvents": {
                    "Name": "DeviceLogonEvents",
                    "OrderedColumns": [
                        {"Name": "Timestamp", "Type": "System.DateTime", "CslType": "datetime"},
                        {"Name": "DeviceName", "Type": "System.String", "CslType": "string"},
                        {"Name": "ActionType", "Type": "System.String", "CslType": "string"},
                        {"Name": "LogonId", "Type": "System.Int64", "CslType": "long"},
                        {"Name": "IsLocalAdmin", "Type": "System.SByte", "CslType": "bool"},
                        {"Name": "Duration", "Type": "System.TimeSpan", "CslType": "timespan"},
                        {"Name": "Extra", "Type": "System.Object", "CslType": "dynamic"},
                    ],
                },
                "AlertInfo": {
                    "Name": "AlertInfo",
                    "OrderedColumns": [
                        {"Name": "AlertId", "CslType": "string"},
                        {"Name": "Severity", "CslType": "string"},
                        {"Name": "Score", "CslType": "real"},
                    ],
                },
            },
        }
    }
}
PAIRS = [
    {
        "id": "e1",
        "nlq": "Failed logons in the last day",
        "kql": "DeviceLogonEvents | where Timestamp > ago(1d) and ActionType == 'LogonFailed'",
        "difficulty": "Easy",
        "prediction": "DeviceLogonEvents | where ActionType == 'LogonFailed'",
    },
    {
        "id": "h1",
        "nlq": "Logons per device",
        "kql": "DeviceLogonEvents | summarize Logons = count() by DeviceName",
        "difficulty": "Hard",
        "prediction": "DeviceLogonEvnts | count",  # a table that does not exist
    },
    {
        "id": "h2",
        "nlq": "High alerts with their score",
        "kql": "AlertInfo | where Severity == 'High' | project AlertId, Score",
        "difficulty": "hard",
        "prediction": "AlertInfo | where Severity == 'High' | project Score, AlertId",
    },
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run(suite_dir: Path, tmp: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    suite = load_suite(suite_dir / "suite.yaml")
    suite.settings.cache_dir = str(tmp / "cache")
    result = run_suite(suite, tmp / "run", progress=False, write_reports=False)
    lines = (tmp / "run" / "results.jsonl").read_text().splitlines()
    return result.summary, [json.loads(line) for line in lines]


def test_kusto_schema_export_and_jsonl_pairs_run_on_empty_tables(tmp_path: Path) -> None:
    pairs = write_jsonl(tmp_path / "defender.jsonl", PAIRS)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(KUSTO_SCHEMA))
    report = import_nl2kql([pairs, schema], tmp_path / "suite")
    assert (len(report.cases), list(report.predictions)) == (3, ["defender"])
    fixture = tmp_path / "suite" / "databases" / "Security"
    ddl = (fixture / "schema.sql").read_text()
    assert '"Timestamp" TIMESTAMP' in ddl and '"Duration" INTERVAL' in ddl
    assert '"Extra" JSON' in ddl and '"IsLocalAdmin" BOOLEAN' in ddl
    assert (fixture / "AlertInfo.csv").read_text() == "AlertId,Severity,Score\n"
    cases = [json.loads(x) for x in (tmp_path / "suite" / "cases.jsonl").read_text().splitlines()]
    assert cases[0]["tags"] == ["easy"] and cases[2]["tags"] == ["hard"]
    assert cases[1]["conversation"][0]["target"]["query"]["database"] == "Security"

    summary, records = run(tmp_path / "suite", tmp_path)
    by_case = {r["case_id"]: r["scores"] for r in records}
    assert by_case["e1"]["executes"]["value"] == 1.0  # valid on the schema, no rows
    assert by_case["h1"]["executes"]["value"] == 0.0  # unknown table: the system's fault
    assert by_case["h2"]["execution_match"]["value"] == 1.0  # same columns, permuted
    assert summary["systems"]["defender"]["scorers"]["executes"]["mean"] == pytest.approx(2 / 3)


def test_every_gold_runs_on_its_tables(tmp_path: Path) -> None:
    rows = [{k: v for k, v in p.items() if k != "prediction"} for p in PAIRS]
    pairs = write_jsonl(tmp_path / "pairs.jsonl", rows)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(KUSTO_SCHEMA))
    report = import_nl2kql([pairs, schema], tmp_path / "suite")
    assert list(report.predictions) == ["gold"]
    summary, _ = run(tmp_path / "suite", tmp_path)
    assert summary["systems"]["gold"]["scorers"]["executes"]["mean"] == 1.0


@pytest.mark.parametrize(
    ("schema", "typed"),
    [
        (
            {
                "tables": [
                    {
                        "name": "Logs",
                        "columns": [
                            {"name": "Level", "type": "string"},
                            {"name": "Ms", "type": "long"},
                        ],
                    }
                ]
            },
            True,
        ),
        ([{"name": "Logs", "columns": {"Level": "string", "Ms": "long"}}], True),
        ({"Logs": {"Level": "string", "Ms": "long"}}, True),
        ({"1": {"name": "Logs", "description": "d", "columns": ["Level", "Ms"]}}, False),
    ],
    ids=["tables-list", "bare-list", "mapping", "names-only"],
)
def test_each_schema_form_builds_the_tables(tmp_path: Path, schema: Any, typed: bool) -> None:
    csv = tmp_path / "pairs.csv"
    csv.write_text("question,kql\nHow many errors?,Logs | where Level == 'Error' | count\n")
    path = tmp_path / "logs.json"
    path.write_text(json.dumps(schema))
    report = import_nl2kql([csv, path], tmp_path / "suite")
    ddl = (tmp_path / "suite" / "databases" / "logs" / "schema.sql").read_text()
    assert 'CREATE TABLE "Logs" ("Level" VARCHAR' in ddl
    if typed:
        assert '"Ms" BIGINT' in ddl
    else:
        assert '"Ms" VARCHAR' in ddl and report.notes  # no types: string, and said so
    summary, _ = run(tmp_path / "suite", tmp_path)
    assert summary["systems"]["gold"]["scorers"]["executes"]["mean"] == 1.0


def test_several_databases_need_the_record_to_name_one(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    a.write_text(json.dumps({"T": {"x": "int"}}))
    b = tmp_path / "b.json"
    b.write_text(json.dumps({"U": {"y": "int"}}))
    pairs = write_jsonl(
        tmp_path / "p.jsonl",
        [{"question": "q", "kql": "T | count", "db": "a"}, {"question": "q", "kql": "U | count"}],
    )
    with pytest.raises(InputError, match="names no database") as err:
        import_nl2kql([pairs, a, b], tmp_path / "out")
    assert (err.value.path, err.value.line) == (str(pairs), 2)


@pytest.mark.parametrize(
    ("rows", "schema", "match", "line"),
    [
        ([{"question": "q"}], {"T": {"x": "int"}}, "no KQL", 1),
        ([{"kql": "T"}, {"nlq": 5, "kql": "T"}], {"T": {"x": "int"}}, "no question", 1),
        (
            [{"question": "q", "kql": "T"}, {"nlq": 5, "kql": "T"}],
            {"T": {"x": "int"}},
            "nlq must be text",
            2,
        ),
        (
            [{"question": "q", "kql": "T", "database": "X"}],
            {"T": {"x": "int"}},
            "unknown database",
            1,
        ),
        ([{"question": "q", "kql": "T"}], {"T": {"x": "varchar2"}}, "unknown column type", None),
        ([{"question": "q", "kql": "T"}], {"T": {}}, "at least one column", None),
        ([{"question": "q", "kql": "T"}], {"../T": {"x": "int"}}, "cannot name a fixture", None),
    ],
)
def test_bad_input_names_the_file_and_the_place(
    tmp_path: Path, rows: list[dict[str, Any]], schema: Any, match: str, line: int | None
) -> None:
    pairs = write_jsonl(tmp_path / "pairs.jsonl", rows)
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    with pytest.raises(InputError, match=match) as err:
        import_nl2kql([pairs, path], tmp_path / "out")
    if line is not None:
        assert (err.value.path, err.value.line) == (str(pairs), line)
    else:
        assert err.value.path == str(path) and err.value.where
    assert not (tmp_path / "out").exists()


def test_bad_json_line_is_named(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"question": "q", "kql": "T"}\n{oops\n')
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"T": {"x": "int"}}))
    with pytest.raises(InputError, match="not valid JSON") as err:
        import_nl2kql([pairs, schema], tmp_path / "out")
    assert (err.value.path, err.value.line) == (str(pairs), 2)
    with pytest.raises(InputError, match="no schema file"):
        import_nl2kql([pairs], tmp_path / "out")


def test_build_for_queryeval_import(tmp_path: Path) -> None:
    from queryeval.importers import nl2kql

    rows = [{k: v for k, v in p.items() if k != "prediction"} for p in PAIRS]
    pairs = write_jsonl(tmp_path / "pairs.jsonl", rows)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(KUSTO_SCHEMA))
    preds = write_jsonl(
        tmp_path / "m.jsonl", [{"id": "e1", "kql": "DeviceLogonEvents | take 1"}, {"id": "h1"}]
    )
    out = tmp_path / "suite"
    request = Request([pairs, schema], out, [("model", preds)], {"now": "2025-01-01T00:00:00Z"})
    built = nl2kql.build(request)
    assert list(built.predictions) == ["model"]
    assert built.predictions["model"][1] == {"case_id": "h1", "error": "no prediction"}
    assert built.databases["Security"]["options"]["now"] == "2025-01-01T00:00:00Z"
    assert (out / "databases" / "Security" / "schema.sql").exists()
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "zz", "kql": "T"}])
    with pytest.raises(InputError, match="unknown case 'zz'") as err:
        nl2kql.build(Request([pairs, schema], out, [("m", bad)]))
    assert (err.value.path, err.value.line) == (str(bad), 1)
    with pytest.raises(InputError, match="unknown option"):
        nl2kql.build(Request([pairs, schema], out, options={"neo4j_url": "x"}))


# --- the NL2KQL repository's own files, as published ------------------------------------------
# data/evaluation_datasets/<Part>_Evaluation.jsonl: {"context", "baseline"} (some rows add a
# "Data source"); data/schema/<Part>_Schema.json: [{"Database", "Tables": [{"Columns": [{"Type",
# "Name"}], "Table"}], "Functions": []}], types as .NET names (and "Boolean", "Double").


def nl2kql_schema(database: str, tables: dict[str, list[tuple[str, str]]]) -> list[Any]:
    return [
        {
            "Database": database,
            "Tables": [
                {"Columns": [{"Type": t, "Name": n} for n, t in cols], "Table": table}
                for table, cols in tables.items()
            ],
            "Functions": [],
        }
    ]


DEFENDER = nl2kql_schema(
    "DB",
    {
        "DeviceEvents": [("Timestamp", "System.DateTime"), ("ActionType", "System.String"),
                         ("DeviceId", "System.String"), ("IsAdmin", "Boolean")],
        "AlertInfo": [("AlertId", "System.String"), ("Severity", "System.String"),
                      ("Score", "Double"), ("Count", "System.Int64")],
    },
)  # fmt: skip
SENTINEL = nl2kql_schema(
    "cybersecuritysoc",
    {
        "SecurityIncident": [("TimeGenerated", "System.DateTime"),
                             ("IncidentNumber", "System.Int32"), ("Severity", "System.String"),
                             ("IsActive", "System.SByte"), ("Extra", "System.Object")],
    },
)  # fmt: skip
DEFENDER_ROWS = [
    {"context": "Count device events of the past week",
     "baseline": "DeviceEvents\n| where Timestamp > ago(7d)\n| count"},
    {"Data source": "NL2KQL - Security Co-Pilot.xlsx - NLKQL pairs",
     "context": "High alerts", "baseline": "AlertInfo\n| where Severity == \"High\""},
]  # fmt: skip
SENTINEL_ROWS = [
    {"Data source": "NL2KQL sentinel survey cleaned.xlsx - survey part 1",
     "context": "Incidents per severity",
     "baseline": "SecurityIncident \n| where TimeGenerated > ago(365d) \n"
                 "| summarize Count=dcount(IncidentNumber) by Severity"},
]  # fmt: skip


def repository(tmp: Path) -> list[Path]:
    evaluation = tmp / "data" / "evaluation_datasets"
    schema = tmp / "data" / "schema"
    evaluation.mkdir(parents=True)
    schema.mkdir(parents=True)
    (schema / "Defender_Schema.json").write_text(json.dumps(DEFENDER, indent=2))
    (schema / "Sentinel_Schema.json").write_text(json.dumps(SENTINEL, indent=2))
    return [
        write_jsonl(evaluation / "Defender_Evaluation.jsonl", DEFENDER_ROWS),
        write_jsonl(evaluation / "Sentinel_Evaluation.jsonl", SENTINEL_ROWS),
        schema / "Defender_Schema.json",
        schema / "Sentinel_Schema.json",
    ]


def test_the_repository_files_as_published(tmp_path: Path) -> None:
    report = import_nl2kql(repository(tmp_path), tmp_path / "suite")
    assert list(report.databases) == ["DB", "cybersecuritysoc"]
    ddl = (tmp_path / "suite" / "databases" / "DB" / "schema.sql").read_text()
    assert '"IsAdmin" BOOLEAN' in ddl and '"Score" DOUBLE' in ddl and '"Count" BIGINT' in ddl
    soc = (tmp_path / "suite" / "databases" / "cybersecuritysoc" / "schema.sql").read_text()
    assert '"IsActive" BOOLEAN' in soc and '"Extra" JSON' in soc
    cases = [json.loads(x) for x in (tmp_path / "suite" / "cases.jsonl").read_text().splitlines()]
    # each evaluation file goes with the schema file of its name
    assert [c["metadata"]["database"] for c in cases] == ["DB", "DB", "cybersecuritysoc"]
    assert cases[0]["conversation"][0]["target"]["query"]["text"] == DEFENDER_ROWS[0]["baseline"]
    assert cases[2]["metadata"]["nl2kql"] == {"Data source": SENTINEL_ROWS[0]["Data source"]}
    assert cases[2]["tags"] == [f"source:{SENTINEL_ROWS[0]['Data source']}", "db:cybersecuritysoc"]
    assert "nl2kql" not in cases[0]["metadata"] and cases[0]["tags"] == ["db:DB"]
    summary, _ = run(tmp_path / "suite", tmp_path)
    assert summary["systems"]["gold"]["scorers"]["executes"]["mean"] == 1.0


def test_a_models_answers_pair_by_question(tmp_path: Path) -> None:
    from queryeval.importers import nl2kql

    sources = repository(tmp_path)
    answers = write_jsonl(
        tmp_path / "model.jsonl",
        [
            {"context": "Incidents per severity", "prediction": "SecurityIncident | count"},
            {"context": "  High alerts ", "database": "DB", "prediction": "AlertInfo | take 1"},
        ],
    )
    built = nl2kql.build(Request(sources, tmp_path / "out", [("model", answers)]))
    ids = [c["id"] for c in built.cases]
    assert built.predictions == {
        "model": [
            {"case_id": ids[2], "query": "SecurityIncident | count", "language": "kql"},
            {"case_id": ids[1], "query": "AlertInfo | take 1", "language": "kql"},
        ]
    }
    row = {"context": "High alerts", "database": "cybersecuritysoc", "kql": "T"}
    wrong = write_jsonl(tmp_path / "w.jsonl", [row])
    with pytest.raises(InputError, match="no case asks this question on database") as err:
        nl2kql.build(Request(sources, tmp_path / "out", [("m", wrong)]))
    assert (err.value.path, err.value.line) == (str(wrong), 1)
