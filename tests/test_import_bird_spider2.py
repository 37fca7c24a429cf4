"""`queryeval import bird` (and mini-dev) and `queryeval import spider2` on files the tests
write in those formats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from benchmark_files import make_db, write
from queryeval.cli import app
from queryeval.runner import load_suite, run_suite

runner = CliRunner()
SEP = "\t----- bird -----\t"


def cli(*args: str | Path) -> Any:
    return runner.invoke(app, [str(a) for a in args])


def scores(run_dir: Path, scorer: str = "execution_match") -> dict[str, float | None]:
    out = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if "case_id" in record:
            out[record["case_id"]] = record["scores"][scorer]["value"]
    return out


BIRD_DEV = [
    {
        "question_id": 0,
        "db_id": "concert",
        "question": "French singers?",
        "evidence": "French refers to country = 'FR'",
        "SQL": "SELECT name FROM singer WHERE country = 'FR'",
        "difficulty": "simple",
    },
    {
        "question_id": 1,
        "db_id": "concert",
        "question": "Countries of singers?",
        "evidence": "",
        "SQL": "SELECT country FROM singer",
        "difficulty": "moderate",
    },
    {
        "question_id": 2,
        "db_id": "concert",
        "question": "Singer ids and names?",
        "evidence": "",
        "SQL": "SELECT singer_id, name FROM singer",
        "difficulty": "challenging",
    },
    {
        "question_id": 3,
        "db_id": "concert",
        "question": "Singers from Mars?",
        "evidence": "",
        "SQL": "SELECT name FROM singer WHERE country = 'MARS'",
        "difficulty": "simple",
    },
]


def bird_folder(root: Path) -> Path:
    folder = root / "bird"
    make_db(folder / "dev_databases" / "concert" / "concert.sqlite")
    write(folder / "dev.json", json.dumps(BIRD_DEV))
    return folder


def test_bird_import_run_with_difficulty_and_evidence(tmp_path: Path) -> None:
    folder = bird_folder(tmp_path)
    preds = {
        "0": f"SELECT name FROM singer WHERE country = 'FR' ORDER BY name DESC{SEP}concert",
        "1": f"SELECT DISTINCT country FROM singer{SEP}concert",  # duplicates collapse
        "2": f"SELECT name, singer_id FROM singer{SEP}concert",  # columns swapped
        "3": 0,  # not a string: no query
    }
    pred_file = write(tmp_path / "predict_dev.json", json.dumps(preds))
    out = tmp_path / "suite"
    result = cli("import", "bird", folder, "--out", out, "-p", f"gpt={pred_file}")
    assert result.exit_code == 0, result.output
    cases = [json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()]
    assert cases[0]["tags"][0] == "difficulty:simple"
    assert cases[0]["metadata"]["evidence"].startswith("French")
    run = run_suite(load_suite(out / "suite.yaml"), tmp_path / "run", progress=False)
    # bird: a set of rows, columns by position; a missing prediction fails
    assert scores(run.out_dir) == {"0": 1.0, "1": 1.0, "2": 0.0, "3": 0.0}
    summary = json.loads((run.out_dir / "summary.json").read_text())
    tags = json.dumps(summary["systems"]["gpt"])
    assert "difficulty:simple" in tags and "difficulty:challenging" in tags

    legacy = tmp_path / "legacy"
    result = cli(
        "import",
        "bird",
        folder,
        "--out",
        legacy,
        "-p",
        f"gpt={pred_file}",
        "--set",
        "preset=bird_legacy",
    )
    assert result.exit_code == 0, result.output
    run = run_suite(load_suite(legacy / "suite.yaml"), tmp_path / "run2", progress=False)
    assert scores(run.out_dir) == {"0": 1.0, "1": 1.0, "2": 0.0, "3": 0.0}


def test_bird_mini_dev_jsonl_and_gold_file(tmp_path: Path) -> None:
    folder = tmp_path / "mini"
    make_db(folder / "dev_databases" / "concert" / "concert.sqlite")
    write(folder / "mini_dev_sqlite.jsonl", "\n".join(json.dumps(d) for d in BIRD_DEV[:2]))
    gold = (
        "SELECT name FROM singer WHERE country = 'US'\tconcert\n"
        "SELECT country FROM singer\tconcert\n"
    )
    write(folder / "mini_dev_sqlite_gold.sql", gold)
    # mini-dev: a value without the separator is the SQL itself
    preds = write(
        tmp_path / "p.json",
        json.dumps({"0": "SELECT name FROM singer WHERE country = 'US'", "1": "x"}),
    )
    result = cli("import", "bird", folder, "--out", tmp_path / "suite", "-p", preds)
    assert result.exit_code == 0, result.output
    run = run_suite(load_suite(tmp_path / "suite" / "suite.yaml"), tmp_path / "r", progress=False)
    assert scores(run.out_dir) == {"0": 1.0, "1": 0.0}  # the gold file's SQL is what counts


def test_bird_bad_input(tmp_path: Path) -> None:
    folder = bird_folder(tmp_path)
    out = tmp_path / "suite"
    short = write(tmp_path / "p.json", json.dumps({"0": "SELECT 1"}))
    result = cli("import", "bird", folder, "--out", out, "-p", short)
    assert result.exit_code == 2 and "1 predictions, but 4 examples" in result.output
    listed = write(tmp_path / "l.json", json.dumps(["SELECT 1"]))
    result = cli("import", "bird", folder, "--out", out, "-p", listed)
    assert result.exit_code == 2 and str(listed) in result.output
    write(folder / "dev.json", json.dumps([{"db_id": "concert", "question": "q"}]))
    result = cli("import", "bird", folder, "--out", out)
    assert result.exit_code == 2 and "item 0" in result.output and "'SQL'" in result.output


def spider2_folder(root: Path) -> Path:
    base = root / "spider2-lite"
    make_db(base / "resource" / "databases" / "spider2-localdb" / "concert.sqlite")
    examples = [
        {"instance_id": "local001", "db": "concert", "question": "Names and ages?"},
        {"instance_id": "local002", "db": "concert", "question": "Concerts per year?"},
        {"instance_id": "bq001", "db": "x", "question": "cloud only"},
    ]
    write(base / "spider2-lite.jsonl", "\n".join(json.dumps(e) for e in examples))
    gold = base / "evaluation_suite" / "gold"
    write(
        gold / "spider2lite_eval.jsonl",
        "\n".join(
            json.dumps(e)
            for e in [
                {"instance_id": "local001", "condition_cols": [0], "ignore_order": True},
                {"instance_id": "local002", "condition_cols": [], "ignore_order": False},
            ]
        ),
    )
    write(gold / "exec_result" / "local001.csv", "name,age\nAnn,31\nBob,25\nCid,40\n")
    write(gold / "exec_result" / "local002_a.csv", "year,n\n2019,1\n2020,2\n")
    write(gold / "exec_result" / "local002_b.csv", "year,n\n2019,1.0\n2020,2.0\n")
    return base


def test_spider2_local_import_and_official_rule(tmp_path: Path) -> None:
    base = spider2_folder(tmp_path)
    preds = tmp_path / "sql"
    # only condition column 0 (names) counts, in any order, beside extra columns
    write(preds / "local001.sql", "SELECT singer_id, name FROM singer ORDER BY name DESC")
    # in order, numbers within 0.01; _a and _b are alternatives
    write(preds / "local002.sql", "SELECT year, count(*) * 1.001 FROM concert GROUP BY year")
    out = tmp_path / "suite"
    result = cli("import", "spider2", base, "--out", out, "-p", f"m={preds}")
    assert result.exit_code == 0, result.output
    assert "1 non-local instance(s) skipped" in result.output
    cases = [json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()]
    assert [c["id"] for c in cases] == ["local001", "local002"]
    assert len(cases[1]["conversation"][0]["target"]) == 2  # _a and _b
    data = yaml.safe_load((out / "suite.yaml").read_text())
    assert data["scorers"][1]["options"]["rule"] == "spider2_legacy"
    run = run_suite(load_suite(out / "suite.yaml"), tmp_path / "run", progress=False)
    assert scores(run.out_dir) == {"local001": 1.0, "local002": 1.0}

    write(
        preds / "local002.sql",
        "SELECT year, count(*) FROM concert GROUP BY year ORDER BY year DESC",
    )
    (preds / "local001.sql").unlink()  # a missing file is a missing prediction
    result = cli("import", "spider2", base, "--out", out, "-p", f"m={preds}", "--overwrite")
    assert result.exit_code == 0, result.output
    run = run_suite(load_suite(out / "suite.yaml"), tmp_path / "run3", progress=False)
    assert scores(run.out_dir) == {"local001": 0.0, "local002": 0.0}


def test_spider2_bad_input(tmp_path: Path) -> None:
    base = spider2_folder(tmp_path)
    write(base / "evaluation_suite" / "gold" / "exec_result" / "local001.csv", "a,b\n1\n")
    result = cli("import", "spider2", base, "--out", tmp_path / "suite")
    assert result.exit_code == 2 and "local001.csv:2" in result.output
    result = cli("import", "spider2", tmp_path / "suite", "--out", tmp_path / "s2")
    assert result.exit_code == 2
