"""`queryeval import spider`: Spider, test-suite variants, SParC interactions, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from benchmark_files import DEV, PREDICTIONS, make_db, spider_folder, write
from queryeval.cli import app
from queryeval.runner import load_suite, run_suite

runner = CliRunner()


def cli(*args: str | Path) -> Any:
    return runner.invoke(app, [str(a) for a in args])


def records(run_dir: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if "case_id" in record:
            out[record["case_id"]] = record["scores"]
    return out


def test_spider_import_run_selftest(tmp_path: Path) -> None:
    """The README's three commands: `queryeval import spider`, `run`, `selftest`."""
    folder = spider_folder(tmp_path)
    preds = write(tmp_path / "preds.txt", "\n".join(PREDICTIONS) + "\n")
    out = tmp_path / "suite"
    result = cli("import", "spider", folder, "--predictions", f"model={preds}", "--out", out)
    assert result.exit_code == 0, result.output
    suite_file = tmp_path / "suite" / "suite.yaml"
    data = yaml.safe_load(suite_file.read_text())
    assert data["preset"] == "spider"
    assert set(data["databases"]) == {"concert", "concert@concert_1.sqlite"}
    cases = [
        json.loads(x) for x in (tmp_path / "suite" / "cases.jsonl").read_text().split("\n") if x
    ]
    assert [c["id"] for c in cases] == ["0000", "0001", "0002", "0003"]
    assert [c["conversation"][-1]["content"] for c in cases] == [d["question"] for d in DEV]
    assert cases[0]["tags"][0] == "hardness:easy"
    assert cases[3]["tags"][0] == "hardness:medium"  # GROUP BY and two select columns
    assert cases[0]["metadata"]["variants"] == ["concert@concert_1.sqlite"]
    preds_written = (tmp_path / "suite" / "predictions" / "model.jsonl").read_text()
    assert "ignored after a TAB" not in preds_written  # the official reader splits at TAB

    result = cli("run", suite_file, "--out", tmp_path / "run", "--no-progress")
    assert result.exit_code == 0, result.output
    assert "by hardness" in result.output  # the console report's breakdown
    scores = records(tmp_path / "run")
    ex = {cid: s["execution_match"]["value"] for cid, s in scores.items()}
    # another alias: right (names are ignored); right on the main database but not on the
    # test-suite variant: wrong; the wrong order under a top-level ORDER BY: wrong
    assert ex == {"0000": 1.0, "0001": 0.0, "0002": 0.0, "0003": 1.0}
    assert "variant concert@concert_1.sqlite" in scores["0001"]["execution_match"]["explanation"]
    assert scores["0001"]["results_f1"]["value"] == 1.0  # F1 on the main database
    assert scores["0003"]["spider_exact_match"]["value"] == 1.0
    assert scores["0000"]["spider_exact_match"]["value"] == 0.0  # count(singer_id) != count(*)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    agg = summary["systems"]["model"]["scorers"]["spider_exact_match"]
    assert "by_hardness" in json.dumps(agg)
    assert {p.name for p in (tmp_path / "run").iterdir()} >= {"report.html", "report.xlsx"}

    result = cli("selftest", suite_file, "--cache-dir", tmp_path / "cache")
    assert result.exit_code == 0, result.output


def test_spider_legacy_preset_and_no_variants(tmp_path: Path) -> None:
    folder = spider_folder(tmp_path)
    preds = write(tmp_path / "model.txt", "\n".join(PREDICTIONS) + "\n")
    out = tmp_path / "suite"
    result = cli(
        "import",
        "spider",
        folder,
        "--out",
        out,
        "-p",
        preds,
        "--set",
        "preset=spider_legacy",
        "--set",
        "test_suite=false",
    )
    assert result.exit_code == 0, result.output
    data = yaml.safe_load((out / "suite.yaml").read_text())
    assert list(data["databases"]) == ["concert"]
    match = next(s for s in data["scorers"] if s["name"] == "execution_match")
    assert match["options"]["rule"] == "spider_legacy"
    run = run_suite(load_suite(out / "suite.yaml"), tmp_path / "run", progress=False)
    ex = {cid: s["execution_match"]["value"] for cid, s in records(run.out_dir).items()}
    assert ex == {"0000": 1.0, "0001": 1.0, "0002": 0.0, "0003": 1.0}


def test_gold_file_alone_and_an_existing_suite_is_kept(tmp_path: Path) -> None:
    folder = spider_folder(tmp_path, variant=False)
    out = tmp_path / "suite"
    gold = folder / "dev_gold.sql"
    assert cli("import", "spider", gold, folder / "database", "--out", out).exit_code == 0
    data = yaml.safe_load((out / "suite.yaml").read_text())
    assert data["systems"] == [{"name": "gold", "predictions": "predictions/gold.jsonl"}]
    again = cli("import", "spider", gold, folder / "database", "--out", out)
    assert again.exit_code == 2 and "--overwrite" in again.output


def sparc_folder(root: Path) -> Path:
    folder = root / "sparc"
    make_db(folder / "database" / "concert" / "concert.sqlite")
    interactions = [
        {
            "database_id": "concert",
            "interaction": [
                {"utterance": "List the singers.", "query": "SELECT name FROM singer"},
                {
                    "utterance": "Only the French ones.",
                    "query": "SELECT name FROM singer WHERE country = 'FR'",
                },
            ],
        },
        {
            "database_id": "concert",
            "interaction": [
                {"utterance": "How many concerts?", "query": "SELECT count(*) FROM concert"},
            ],
        },
    ]
    write(folder / "dev.json", json.dumps(interactions))
    return folder


def test_sparc_interactions_become_conversations(tmp_path: Path) -> None:
    folder = sparc_folder(tmp_path)
    preds = write(
        tmp_path / "p.txt",
        "SELECT name FROM singer\nSELECT name FROM singer\n\nSELECT count(*) FROM concert\n",
    )
    out = tmp_path / "suite"
    result = cli("import", "sparc", folder, "--out", out, "-p", preds)
    assert result.exit_code == 0, result.output
    cases = [json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()]
    assert [c["id"] for c in cases] == ["i0000-t1", "i0000-t2", "i0001-t1"]
    second = cases[1]
    assert [t["content"] for t in second["conversation"]] == [
        "List the singers.",
        "Only the French ones.",
    ]
    assert "turn:2" in second["tags"]
    run = run_suite(load_suite(out / "suite.yaml"), tmp_path / "run", progress=False)
    ex = {cid: s["execution_match"]["value"] for cid, s in records(run.out_dir).items()}
    assert ex == {"i0000-t1": 1.0, "i0000-t2": 0.0, "i0001-t1": 1.0}
    summary = json.loads((run.out_dir / "summary.json").read_text())
    agg = summary["systems"]["p"]["scorers"]["execution_match"]["aggregate"]
    assert agg["interactions"] == {"count": 2, "all_turns_exact": 0.5, "left_out": 0}


@pytest.mark.parametrize(
    ("predictions", "message", "line"),
    [
        ("SELECT 1\n\nSELECT 2\n", "1 prediction(s) here, expected 2", 1),
        ("SELECT 1\nSELECT 1\n", "1 interaction(s) of predictions, expected 2", None),
    ],
)
def test_sparc_predictions_that_do_not_line_up(
    tmp_path: Path, predictions: str, message: str, line: int | None
) -> None:
    folder = sparc_folder(tmp_path)
    preds = write(tmp_path / "p.txt", predictions)
    result = cli("import", "sparc", folder, "--out", tmp_path / "suite", "-p", preds)
    assert result.exit_code == 2
    assert str(preds) + (f":{line}" if line else "") in result.output
    assert message in result.output
    assert not (tmp_path / "suite" / "suite.yaml").exists()


def test_malformed_spider_inputs_exit_2_naming_file_and_place(tmp_path: Path) -> None:
    folder = spider_folder(tmp_path, variant=False)
    out = tmp_path / "suite"
    # predictions: a blank line in the middle, then too few lines
    bad = write(tmp_path / "blank.txt", "SELECT 1\n\nSELECT 2\n")
    result = cli("import", "spider", folder, "--out", out, "-p", bad)
    assert result.exit_code == 2 and f"{bad}:2" in result.output
    short = write(tmp_path / "short.txt", "SELECT 1\n")
    result = cli("import", "spider", folder, "--out", out, "-p", short)
    assert result.exit_code == 2 and "expected 4" in result.output
    # a gold line without its database
    write(folder / "dev_gold.sql", "SELECT 1\tconcert\nSELECT 2\n")
    result = cli("import", "spider", folder / "dev_gold.sql", folder / "database", "--out", out)
    assert result.exit_code == 2 and f"{folder / 'dev_gold.sql'}:2" in result.output
    # examples that are not JSON, and an example without its query
    write(folder / "dev.json", '[{"db_id": "concert",\n "question": }]')
    result = cli("import", "spider", folder / "dev.json", folder / "database", "--out", out)
    assert result.exit_code == 2 and f"{folder / 'dev.json'}:2" in result.output
    write(folder / "dev.json", json.dumps([{"db_id": "concert", "question": "q?"}]))
    result = cli("import", "spider", folder / "dev.json", folder / "database", "--out", out)
    assert result.exit_code == 2 and "item 0" in result.output and "'query'" in result.output
    # an unknown database, an unknown format, a missing source
    write(folder / "dev.json", json.dumps([{"db_id": "nope", "question": "q", "query": "x"}]))
    result = cli("import", "spider", folder / "dev.json", folder / "database", "--out", out)
    assert result.exit_code == 2 and "'nope' not found" in result.output
    assert cli("import", "nosuch", folder, "--out", out).exit_code == 2
    assert cli("import", "spider", tmp_path / "absent", "--out", out).exit_code == 2
    assert not (out / "suite.yaml").exists()


def test_formats_are_listed_without_a_central_table() -> None:
    result = cli("import", "--list")
    assert result.exit_code == 0
    for name in ("spider", "sparc", "cosql", "bird", "spider2"):
        assert name in result.output


def test_text_that_is_not_utf8_is_read_as_spider_reads_it(tmp_path: Path) -> None:
    import sqlite3

    from queryeval.engines._factory import build_engine

    db = tmp_path / "latin.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (name TEXT)")
    con.execute("INSERT INTO t VALUES (CAST(X'4AE9726F6D65' AS TEXT))")  # "Jérome" in Latin-1
    con.commit()
    con.close()
    suite = load_suite(write(tmp_path / "s.yaml", yaml.safe_dump({
        "name": "t", "cases": "c.jsonl", "systems": [{"name": "s", "predictions": "p"}],
        "databases": {"strict": {"engine": "sqlite", "path": str(db)},
                      "spider": {"engine": "sqlite", "path": str(db),
                                 "options": {"text_errors": "ignore"}}}})))  # fmt: skip
    strict = build_engine("strict", suite.databases["strict"], tmp_path, tmp_path / "cache")
    spider = build_engine("spider", suite.databases["spider"], tmp_path, tmp_path / "cache")
    assert strict.execute("SELECT name FROM t").outcome.kind != "ok"
    run = spider.execute("SELECT name FROM t")
    assert run.ok and run.result is not None and list(run.result.rows) == [("Jrome",)]
    assert strict.identity != spider.identity


def test_cosql_folder_layout(tmp_path: Path) -> None:
    folder = sparc_folder(tmp_path)
    root = tmp_path / "cosql_dataset"
    (root / "sql_state_tracking").mkdir(parents=True)
    (folder / "dev.json").rename(root / "sql_state_tracking" / "cosql_dev.json")
    (folder / "database").rename(root / "database")
    result = cli("import", "cosql", root, "--out", tmp_path / "suite")
    assert result.exit_code == 0, result.output
    data = yaml.safe_load((tmp_path / "suite" / "suite.yaml").read_text())
    assert data["name"] == "cosql-dev"
    cases = [json.loads(x) for x in (tmp_path / "suite" / "cases.jsonl").read_text().splitlines()]
    assert [c["id"] for c in cases] == ["i0000-t1", "i0000-t2", "i0001-t1"]


def test_an_unknown_option_cannot_be_honoured(tmp_path: Path) -> None:
    folder = spider_folder(tmp_path, variant=False)
    result = cli("import", "spider", folder, "--out", tmp_path / "s", "--set", "presett=spider")
    assert result.exit_code == 2 and "presett" in result.output and "preset" in result.output
    result = cli("import", "spider", folder, "--out", tmp_path / "s", "--set", "preset=bird")
    assert result.exit_code == 2 and "spider_legacy" in result.output
    result = cli("import", "spider", folder, "--out", tmp_path / "s", "--set", "timeout_s=soon")
    assert result.exit_code == 2 and "timeout_s=soon" in result.output
