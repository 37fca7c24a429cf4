"""`import_text2cypher`: rows in the `neo4j/text2cypher-2024v1` format (question, schema,
cypher, data_source, instance_id, database_reference_alias), written here as Parquet, JSONL
and CSV, become a suite of Cypher cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from queryeval.errors import InputError
from queryeval.importers import ImportRequest as Request
from queryeval.importers.text2cypher import import_text2cypher
from queryeval.runner import load_suite, run_suite

ROWS: list[dict[str, Any]] = [
    {
        "question": "How many movies are there?",
        "schema": "Node properties:\n- **Movie**\n  - `title`: STRING",
        "cypher": "MATCH (m:Movie) RETURN count(m)",
        "data_source": "neo4jLabs_synthetic_gpt4o",
        "instance_id": "instance_id_1",
        "database_reference_alias": "neo4jlabs_demo_db_movies",
    },
    {
        "question": "Which users asked the most questions?",
        "schema": "Node properties:\n- **User**\n  - `name`: STRING",
        "cypher": "MATCH (u:User)-[:ASKED]->(q) RETURN u.name, count(q) AS n ORDER BY n DESC",
        "data_source": "hf_dataset",
        "instance_id": "instance_id_2",
        "database_reference_alias": None,
    },
]


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def cases_of(suite_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (suite_dir / "cases.jsonl").read_text().splitlines()]


def test_parquet_rows_become_cypher_cases(tmp_path: Path) -> None:
    src = write_parquet(tmp_path / "test-00000-of-00001.parquet", ROWS)
    report = import_text2cypher([src], tmp_path / "suite")
    assert (len(report.cases), list(report.predictions)) == (2, ["gold"])
    cases = cases_of(tmp_path / "suite")
    first = cases[0]
    assert first["id"] == "instance_id_1"
    assert first["conversation"][0]["content"] == ROWS[0]["question"]
    assert first["conversation"][0]["target"]["query"] == {
        "language": "cypher",
        "text": ROWS[0]["cypher"],
    }
    assert first["metadata"]["schema"] == ROWS[0]["schema"]
    assert first["metadata"]["database_reference_alias"] == "neo4jlabs_demo_db_movies"
    assert first["tags"] == ["neo4jLabs_synthetic_gpt4o", "neo4jlabs_demo_db_movies", "db:movies"]
    assert cases[1]["tags"] == ["hf_dataset"]
    assert any("neo4j_url" in note for note in report.notes)
    suite = load_suite(tmp_path / "suite" / "suite.yaml")
    suite.settings.cache_dir = str(tmp_path / "cache")
    result = run_suite(suite, tmp_path / "run", progress=False, write_reports=False)
    assert result.summary["systems"]["gold"]["scorers"]["bleu"]["mean"] == pytest.approx(1.0)


def test_predictions_in_the_rows_make_a_system(tmp_path: Path) -> None:
    rows = [
        {**ROWS[0], "prediction": "MATCH (m:Movie) RETURN count(*)"},
        {**ROWS[1], "prediction": ROWS[1]["cypher"]},
    ]
    src = tmp_path / "model-x.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = import_text2cypher([src], tmp_path / "suite")
    assert list(report.predictions) == ["model-x"]
    suite = load_suite(tmp_path / "suite" / "suite.yaml")
    suite.settings.cache_dir = str(tmp_path / "cache")
    result = run_suite(suite, tmp_path / "run", progress=False, write_reports=False)
    scorers = result.summary["systems"]["model-x"]["scorers"]
    assert scorers["exact_match"]["mean"] == 0.5
    assert 0.5 < scorers["bleu"]["mean"] < 1.0


def test_with_a_server_the_aliases_become_databases(tmp_path: Path) -> None:
    src = write_parquet(tmp_path / "rows.parquet", ROWS)
    import_text2cypher([src], tmp_path / "suite", neo4j_url="neo4j+s://demo.neo4jlabs.com:7687")
    suite = yaml.safe_load((tmp_path / "suite" / "suite.yaml").read_text())
    db = suite["databases"]["neo4jlabs_demo_db_movies"]
    assert db["engine"] == "neo4j" and db["url"] == "neo4j+s://demo.neo4jlabs.com:7687"
    assert db["options"]["database"] == db["options"]["user"] == "movies"
    assert suite["preset"] == "text2cypher_execution" and "scorers" not in suite
    loaded = load_suite(tmp_path / "suite" / "suite.yaml")
    assert (loaded.scorers[0].name, loaded.scorers[0].required) == ("execution_match", True)
    cases = cases_of(tmp_path / "suite")
    assert cases[0]["conversation"][0]["target"]["query"]["database"] == "neo4jlabs_demo_db_movies"
    assert "database" not in cases[1]["conversation"][0]["target"]["query"]
    load_suite(tmp_path / "suite" / "suite.yaml")  # a valid suite (nothing is contacted)


def test_csv_rows_and_duplicate_ids(tmp_path: Path) -> None:
    src = tmp_path / "rows.csv"
    src.write_text(
        "question,schema,cypher,instance_id\n"
        "Count nodes,,MATCH (n) RETURN count(n),a\n"
        '"Names, sorted",,"MATCH (n) RETURN n.name ORDER BY n.name",a\n'
    )
    import_text2cypher([src], tmp_path / "suite")
    cases = cases_of(tmp_path / "suite")
    assert [c["id"] for c in cases] == ["a", "a-2"]
    assert cases[1]["conversation"][0]["content"] == "Names, sorted"
    assert "schema" not in cases[0]["metadata"]


@pytest.mark.parametrize(
    ("rows", "match", "line"),
    [
        ([ROWS[0], {**ROWS[1], "cypher": ""}], "no cypher", 2),
        ([{**ROWS[0], "question": None}], "no question", 1),
        ([ROWS[0], {**ROWS[1], "question": 42}], "question must be text", 2),
        ([ROWS[0], ["not", "a", "row"]], "expected a row object", 2),
    ],
)
def test_bad_rows_name_the_file_and_the_line(
    tmp_path: Path, rows: list[Any], match: str, line: int
) -> None:
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=match) as err:
        import_text2cypher([src], tmp_path / "out")
    assert (err.value.path, err.value.line) == (str(src), line)
    assert not (tmp_path / "out").exists()


def test_unreadable_sources_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "rows.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(InputError, match="Parquet") as err:
        import_text2cypher([bad], tmp_path / "out")
    assert err.value.path == str(bad)
    with pytest.raises(InputError, match="no such file"):
        import_text2cypher([tmp_path / "missing.parquet"], tmp_path / "out")
    other = tmp_path / "rows.txt"
    other.write_text("x")
    with pytest.raises(InputError, match=r"expected a \.jsonl"):
        import_text2cypher([other], tmp_path / "out")


def test_build_for_queryeval_import(tmp_path: Path) -> None:
    from queryeval.importers import text2cypher

    src = write_parquet(tmp_path / "rows.parquet", ROWS)
    preds = tmp_path / "m.jsonl"
    preds.write_text(json.dumps({"instance_id": "instance_id_2", "cypher": "MATCH (u) RETURN u"}))
    request = Request([src], tmp_path / "out", [("m", preds)], {"neo4j_url": "bolt://x:7687"})
    built = text2cypher.build(request)
    assert built.predictions == {
        "m": [{"case_id": "instance_id_2", "query": "MATCH (u) RETURN u", "language": "cypher"}]
    }
    assert built.databases["neo4jlabs_demo_db_movies"]["url"] == "bolt://x:7687"
    with pytest.raises(InputError, match="unknown option"):
        text2cypher.build(Request([src], tmp_path / "out", options={"url": "x"}))


# --- neo4j-labs/text2cypher's files as published ------------------------------------------------
# datasets/synthetic_*_demodbs/text2cypher_<model>.csv: question, cypher, type, database and the
# repository's checks of the cypher; text2cypher_schemas.csv: database, schema, structured_schema.
# Two models' files hold the same questions (no ids); a question may repeat on one database.

REPO_COLUMNS = ["question", "cypher", "type", "database", "syntax_error", "timeout",
                "returns_results", "false_schema"]  # fmt: skip
GPT4TURBO = [
    ["What are the top 5 movies by runtime?",
     "MATCH (m:Movie)\nWHERE m.runtime > 120\nRETURN m.title, m.runtime\n"
     "ORDER BY m.runtime DESC\nLIMIT 5",
     "Simple Retrieval Queries", "movies", "False", "False", "True", ""],
    ["Which 3 users asked the most?", "MATCH (u:User)-[:ASKED]->(q)\nRETURN u, count(q) AS n",
     "Verbose query", "buzzoverflow", "False", "False", "True", ""],
    ["Which 3 users asked the most?", "MATCH (u:User)-[:ASKED]->(q:Question)\nRETURN u.name",
     "Simple Aggregation Queries", "buzzoverflow", "False", "False", "False", ""],
    ["Who wrote the most articles?", "MATCH (p:Person)-[:AUTHORED]->(a) RETURN p, count(a",
     "Complex Retrieval Queries", "companies", "True", "False", "False", "AUTHORED"],
]  # fmt: skip
OPUS = [  # another model's answers to some of the same questions, in its own order
    ["Which 3 users asked the most?", "MATCH (u:User)-[:ASKED]->(q:Question)  RETURN u.name",
     "Simple Aggregation Queries", "buzzoverflow", "False", "False", "True", ""],
    ["What are the top 5 movies by runtime?", "MATCH (m:Movie) RETURN m.title LIMIT 5",
     "Simple Retrieval Queries", "movies", "False", "False", "True", ""],
]  # fmt: skip
SCHEMAS = [
    ["movies", "Node properties:\n- **Movie**\n  - `runtime`: INTEGER", "{'node_props': {}}"],
    ["buzzoverflow", "Node properties:\n- **User**\n  - `name`: STRING", "{}"],
]


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    import csv

    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def repo_files(tmp: Path) -> tuple[Path, Path, Path]:
    turbo = write_csv(tmp / "text2cypher_gpt4turbo.csv", REPO_COLUMNS, GPT4TURBO)
    opus = write_csv(tmp / "text2cypher_claudeopus.csv", REPO_COLUMNS, OPUS)
    schemas = write_csv(
        tmp / "text2cypher_schemas.csv", ["database", "schema", "structured_schema"], SCHEMAS
    )
    return turbo, opus, schemas


def test_the_repository_csv_keeps_every_column(tmp_path: Path) -> None:
    turbo, _, schemas = repo_files(tmp_path)
    report = import_text2cypher([turbo, schemas], tmp_path / "suite")
    cases = cases_of(tmp_path / "suite")
    assert len({c["id"] for c in cases}) == 4  # no ids in the file: one per row
    first, broken = cases[0], cases[3]
    assert first["metadata"]["text2cypher"] == {
        "type": "Simple Retrieval Queries", "database": "movies", "syntax_error": "False",
        "timeout": "False", "returns_results": "True", "false_schema": "",
    }  # fmt: skip
    assert first["tags"] == ["type:Simple Retrieval Queries", "db:movies"]
    assert first["metadata"]["schema"] == SCHEMAS[0][1]  # from text2cypher_schemas.csv
    assert "schema" not in broken["metadata"]  # companies: no schema in the file
    assert broken["tags"] == [
        "type:Complex Retrieval Queries",
        "db:companies",
        "gold:syntax_error",
        "gold:no_results",
        "gold:false_schema",
    ]
    assert "gold:no_results" in cases[2]["tags"]
    assert any("1 row(s) whose gold the file marks syntax_error" in n for n in report.notes)
    assert any("no schema text for database(s) companies" in n for n in report.notes)


def test_a_second_models_csv_pairs_by_question_and_database(tmp_path: Path) -> None:
    from queryeval.importers import text2cypher

    turbo, opus, _ = repo_files(tmp_path)
    built = text2cypher.build(Request([turbo], tmp_path / "out", [("opus", opus)]))
    ids = [c["id"] for c in built.cases]
    by_case = {r["case_id"]: r["query"] for r in built.predictions["opus"]}
    # the repeated question: the row of the same type answers the case of that type
    assert by_case == {ids[2]: OPUS[0][1], ids[0]: OPUS[1][1]}
    assert list(built.predictions) == ["opus"]
    assert any("2 of 4 case(s) paired" in n for n in built.notes)
    assert not any("the system 'gold'" in n for n in built.notes)


def test_rows_left_out_are_counted_and_a_file_for_other_questions_refused(
    tmp_path: Path,
) -> None:
    from queryeval.importers import text2cypher

    turbo, _, _ = repo_files(tmp_path)
    new = ["What is new?", "RETURN 1", "", "movies", "", "", "", ""]
    # a model's file with more questions than the cases, one asked twice (the real opus file
    # asks two questions twice that the gpt4turbo file asks once)
    more = write_csv(tmp_path / "more.csv", REPO_COLUMNS, [OPUS[1], new, OPUS[1]])
    built = text2cypher.build(Request([turbo], tmp_path / "out", [("m", more)]))
    assert [r["query"] for r in built.predictions["m"]] == [OPUS[1][1]]
    assert any("1 row(s) ask a question no case asks (first at line 3)" in n for n in built.notes)
    assert any("1 row(s) ask a question again" in n and "line 4" in n for n in built.notes)
    other = write_csv(tmp_path / "other.csv", REPO_COLUMNS, [new])
    with pytest.raises(InputError, match="no case asks this question") as err:
        text2cypher.build(Request([turbo], tmp_path / "out", [("m", other)]))
    assert (err.value.path, err.value.line) == (str(other), 2)
    wrong_db = write_csv(
        tmp_path / "db.csv", REPO_COLUMNS, [[*OPUS[1][:3], "twitter", *OPUS[1][4:]]]
    )
    with pytest.raises(InputError, match="on database 'twitter'"):
        text2cypher.build(Request([turbo], tmp_path / "out", [("m", wrong_db)]))


def test_a_default_import_has_a_verdict(tmp_path: Path) -> None:
    turbo, opus, schemas = repo_files(tmp_path)
    from queryeval.importers import run_import

    request = Request([turbo, schemas], tmp_path / "suite", [("opus", opus), ("turbo", turbo)])
    run_import("text2cypher", request)
    data = yaml.safe_load((tmp_path / "suite" / "suite.yaml").read_text())
    assert data["preset"] == "text2cypher_translation"
    suite = load_suite(tmp_path / "suite" / "suite.yaml")
    suite.settings.cache_dir = str(tmp_path / "cache")
    result = run_suite(suite, tmp_path / "run", progress=False, write_reports=False)
    turbo_entry = result.summary["systems"]["turbo"]
    assert turbo_entry["pass_rate"] == 1.0 and turbo_entry["no_verdict"] == 0
    opus_entry = result.summary["systems"]["opus"]
    # one exact answer (whitespace aside), one different, two questions it did not answer
    assert opus_entry["pass_rate"] == 0.25 and opus_entry["no_verdict"] == 0
    assert 0 < opus_entry["scorers"]["bleu"]["mean"] < 0.5
