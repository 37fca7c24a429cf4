"""`queryeval selftest` for every scorer family: each gold is scored against its own case by
the suite's scorers (Weaviate queries, query text, keyword answers, retrieval ids, executed
queries); "nothing executable" when no gold can be run, said once; a database the evaluator
cannot use reported once, exit 2; a reason many golds share printed once with their count."""

from __future__ import annotations

import csv
import json
import socket
from pathlib import Path

from typer.testing import CliRunner

from queryeval.cli import app
from queryeval.importers.gorilla import import_gorilla
from queryeval.importers.text2cypher import import_text2cypher

COLUMNS = ["question", "cypher", "type", "database", "syntax_error", "timeout",
           "returns_results", "false_schema"]  # fmt: skip


def selftest(suite: Path, tmp: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["selftest", str(suite), "--cache-dir", str(tmp / "cache")])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout


def text2cypher_csv(path: Path, cyphers: list[str]) -> Path:
    """Rows in neo4j-labs/text2cypher's CSV layout (no ids, no schema column)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for i, cypher in enumerate(cyphers):
            db = "movies" if i % 2 else "twitter"
            writer.writerow([f"Question {i}?", cypher, "Simple Retrieval Queries", db,
                             "False", "False", "True", ""])  # fmt: skip
    return path


READS = [f"MATCH (m:Movie)\nWHERE m.year > {1990 + i}\nRETURN m.title" for i in range(5)]


def test_gorilla_golds_are_scored_by_the_weaviate_scorers(tmp_path: Path) -> None:
    properties = [{"name": "price", "data_type": ["number"], "description": "d"}]
    schema = {"weaviate_collections": [{"name": "Menus", "properties": properties,
                                        "envisioned_use_case_overview": "o"}]}  # fmt: skip
    empty = dict.fromkeys(("search_query", "integer_property_filter", "text_property_filter",
                           "boolean_property_filter", "integer_property_aggregation",
                           "text_property_aggregation", "boolean_property_aggregation",
                           "groupby_property"))  # fmt: skip
    golds = [
        {**empty, "corresponding_natural_language_query": "cheap menus", "target_collection":
         "Menus", "integer_property_filter": {"property_name": "price", "operator": "<",
                                              "value": 20}},
        {**empty, "corresponding_natural_language_query": "pizza", "target_collection": "Menus",
         "search_query": "pizza"},
    ]  # fmt: skip
    query_file = tmp_path / "synthetic-weaviate-queries-with-schemas.json"
    query_file.write_text(
        json.dumps([{"query": q, "database_schema": json.dumps(schema)} for q in golds])
    )
    import_gorilla([query_file], tmp_path / "suite")
    code, out = selftest(tmp_path / "suite" / "suite.yaml", tmp_path)
    assert code == 0, out
    assert "2 gold(s) checked, 0 below full marks" in out
    assert "weaviate_ast: 2 gold(s), ceiling 1.000" in out
    assert "gorilla_legacy: 2 gold(s), ceiling 1.000" in out
    assert "without a gold" in out and "0 case(s) without a gold" in out


def test_text2cypher_without_a_server_says_nothing_executable_once(tmp_path: Path) -> None:
    rows = text2cypher_csv(tmp_path / "text2cypher_claudeopus.csv", READS)
    import_text2cypher([rows], tmp_path / "suite")
    code, out = selftest(tmp_path / "suite" / "suite.yaml", tmp_path)
    assert code == 0, out
    assert out.count("nothing executable") == 1
    assert "no database for this case" not in out
    assert "exact_match: 5 gold(s), ceiling 1.000" in out and "bleu: 5 gold(s)" in out
    assert len(out.splitlines()) <= 8  # a line per scorer, one for execution, the summary


def test_a_gold_below_full_marks_is_one_line_for_every_scorer(tmp_path: Path) -> None:
    cyphers = [*READS[:4], "MATCH (m:Movie) SET m.seen = true RETURN m"]  # a write
    rows = text2cypher_csv(tmp_path / "text2cypher_gpt4o.csv", cyphers)
    import_text2cypher([rows], tmp_path / "suite")
    code, out = selftest(tmp_path / "suite" / "suite.yaml", tmp_path)
    assert code == 1, out
    bad = [line for line in out.splitlines() if "gold_error" in line]
    assert len(bad) == 1 and "exact_match, bleu, rouge_l" in bad[0] and "write" in bad[0]
    assert "ceiling 0.800" in out


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_server_is_reported_once(tmp_path: Path) -> None:
    rows = text2cypher_csv(tmp_path / "rows.csv", READS)
    import_text2cypher([rows], tmp_path / "suite", neo4j_url=f"bolt://127.0.0.1:{_closed_port()}")
    code, out = selftest(tmp_path / "suite" / "suite.yaml", tmp_path)
    assert code == 2, out
    trouble = [line for line in out.splitlines() if line.startswith("evaluator:")]
    assert len(trouble) == 2  # one per database (twitter, movies), not one per gold
    assert (
        "database 'twitter' cannot be used" in trouble[0] and "3 gold(s) not checked" in trouble[0]
    )
    assert "2 gold(s) not checked" in trouble[1]
    assert "Traceback" not in out and len(out.splitlines()) <= 4


def write_suite(folder: Path, scorers: str, cases: list[dict[str, object]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "p.jsonl").write_text("")
    (folder / "suite.yaml").write_text(
        f"name: s\ncases: cases.jsonl\nsystems: [{{name: s, predictions: p.jsonl}}]\n"
        f"scorers: {scorers}\nreports: [json]\n"
    )
    return folder / "suite.yaml"


def answer_case(cid: str, answer: str, keywords: list[str], relevant: list[str]) -> dict:
    target = {"answer": {"text": answer, "keywords": keywords}, "relevant": relevant}
    return {"id": cid, "conversation": [{"role": "user", "content": "q", "target": target}]}


def test_keyword_answers_and_retrieval_ids_are_self_tested(tmp_path: Path) -> None:
    suite = write_suite(
        tmp_path / "rag",
        "[{name: answer, options: {evaluation_method: keyword}}, "
        "{name: retrieval, weight: 0, options: {k: 2, metric: recall}}, "
        "{name: answer, id: semantic, weight: 0, options: {evaluation_method: semantic_fixed}}]",
        [
            answer_case("a1", "Paris is the capital of France.", ["Paris", "France"], ["p1"]),
            # the gold answer lacks a keyword it expects; three relevant ids with k = 2
            answer_case("a2", "It is Berlin.", ["Berlin", "Germany"], ["p1", "p2", "p3"]),
        ],
    )
    code, out = selftest(suite, tmp_path)
    assert code == 1, out
    assert "a2 (gold 0): answer: mismatch" in out
    assert "answer: 2 gold(s), ceiling 0.500" in out
    assert "retrieval: 2 gold(s), ceiling 0.500" in out  # recall@2 of 3 ids: 2/3 at best
    assert "semantic: not self-tested" in out  # embeddings of an answer with itself: 1


def test_nothing_to_self_test_is_exit_2(tmp_path: Path) -> None:
    suite = write_suite(
        tmp_path / "s", "[bleu]", [answer_case("a1", "an answer", [], [])]
    )  # no gold query: BLEU has nothing to compare
    code, out = selftest(suite, tmp_path)
    assert code == 2, out
    assert "nothing to self-test" in out and "1 case(s) without a gold" not in out


def shop_suite(tmp_path: Path, table: str, rows: str, golds: dict[str, str]) -> Path:
    """An execution_match suite over a SQLite database `shop` of one table `item`, a case a gold."""
    import sqlite3

    db = tmp_path / "shop.sqlite"
    con = sqlite3.connect(db)
    con.execute(f"CREATE TABLE item ({table})")
    con.execute(f"INSERT INTO item VALUES {rows}")
    con.commit()
    con.close()
    cases: list[dict[str, object]] = [
        {"id": cid, "conversation": [{"role": "user", "content": "q", "target": {"query": gold}}]}
        for cid, gold in golds.items()
    ]
    suite = write_suite(tmp_path / "s", "[execution_match]", cases)
    databases = f"databases: {{shop: {{engine: sqlite, path: '{db}'}}}}\n"
    suite.write_text(
        suite.read_text().replace("cases: cases.jsonl\n", f"cases: cases.jsonl\n{databases}")
    )
    return suite


def test_golds_sharing_a_reason_are_one_line(tmp_path: Path) -> None:
    golds = {f"c{i}": f"SELECT id FROM item WHERE price > {100 + i}" for i in range(6)}
    suite = shop_suite(tmp_path, "id INTEGER, price REAL", "(1, 2.5)", golds)
    code, out = selftest(suite, tmp_path)
    assert code == 0, out  # every gold runs and matches itself; all return no rows
    flagged = [line for line in out.splitlines() if "non-discriminating:" in line]
    assert len(flagged) == 1 and flagged[0].startswith("  non-discriminating: 6 golds (c0 (gold 0)")
    assert "6 non-discriminating" in out


def test_a_gold_of_only_null_is_non_discriminating(tmp_path: Path) -> None:
    """The audit's `non_discriminating` checks, one implementation for selftest and validate:
    a gold whose result is one NULL is matched by any query returning NULL (`SELECT NULL`),
    though on empty tables it gives no rows (so the empty-tables check alone missed it)."""
    golds = {"nulls": "SELECT note FROM item WHERE id = 1", "fine": "SELECT id FROM item"}
    suite = shop_suite(tmp_path, "id INTEGER, note TEXT", "(1, NULL), (2, 'x')", golds)
    code, out = selftest(suite, tmp_path)
    assert code == 0, out  # both golds match themselves; one is flagged
    assert "non-discriminating: nulls (gold 0): only null: the gold returns only NULL" in out
    assert "fine (gold 0)" not in out and "1 non-discriminating" in out
