"""`queryeval import corrections`: published gold corrections attached to an import as an
overlay, with provenance (issue 32).

The fixtures are written in the published layouts, a few lines each: `bird-json` is the
corrected BIRD Dev subset of uiuc-kang-lab/text_to_sql_benchmarks (arXiv 2601.08778), a BIRD
examples list that its `text_to_sql_agents/evaluate.py` reads with `--gold data/dev/dev.json`
(`question_id`, `db_id`, `question`, `evidence`, `SQL`, `difficulty`); `sql-dir` is Spider
2.0's `gold/sql/<instance_id>.sql` folder layout."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from benchmark_files import make_db, write
from queryeval.cli import app
from queryeval.config import load_overlay, load_suite

SEP = "\t----- bird -----\t"
DEV = [
    {"question_id": 0, "db_id": "concert", "question": "French singers?", "evidence": "",
     "SQL": "SELECT name FROM singer WHERE country = 'FR'", "difficulty": "simple"},
    {"question_id": 3, "db_id": "concert", "question": "Singers from France?", "evidence": "",
     "SQL": "SELECT name FROM singer WHERE country = 'MARS'", "difficulty": "simple"},
]  # fmt: skip
# the corrected subset: item 0 as published before (no correction), item 3's gold and
# question fixed
CORRECTED = [
    {**DEV[0], "SQL": "SELECT  name FROM singer\nWHERE country = 'FR'"},
    {**DEV[1], "question": "Singers from France, country FR?",
     "SQL": "SELECT name FROM singer WHERE country = 'FR'"},
]  # fmt: skip


def cli(*args: str | Path) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def _bird(tmp_path: Path) -> Path:
    folder = tmp_path / "bird"
    if (folder / "dev.json").exists():
        return folder
    make_db(folder / "dev_databases" / "concert" / "concert.sqlite")
    write(folder / "dev.json", json.dumps(DEV))
    return folder


def _import(tmp_path: Path, corrections: Path, *sets: str, out: str = "suite") -> Any:
    args: list[str | Path] = ["import", "corrections", _bird(tmp_path), "--out", tmp_path / out]
    for s in ("base=bird", f"corrections={corrections}", *sets):
        args += ["--set", s]
    return cli(*args)


def test_bird_corrected_subset_becomes_the_suites_overlay(tmp_path: Path) -> None:
    fixed = write(tmp_path / "corrected" / "dev.json", json.dumps(CORRECTED))
    preds = write(tmp_path / "p.json", json.dumps({
        "0": f"SELECT name FROM singer WHERE country = 'FR'{SEP}concert",
        "1": f"SELECT name FROM singer WHERE country = 'FR'{SEP}concert",
    }))  # fmt: skip
    result = _import(tmp_path, fixed)
    assert result.exit_code == 0, result.output
    assert "1 gold(s) corrected" in result.output and "1 item(s) the same" in result.output
    suite_file = tmp_path / "suite" / "suite.yaml"
    assert yaml.safe_load(suite_file.read_text())["overlays"] == ["corrections.yaml"]
    (overlay,) = [load_overlay(tmp_path / "suite" / "corrections.yaml")]
    (entry,) = overlay.entries
    assert entry.case_id == "3" and not entry.proposed
    assert entry.gold is not None and (entry.gold.text, entry.gold.database) == (
        CORRECTED[1]["SQL"],
        "concert",
    )
    assert "rewrites the question" in entry.reason and "uiuc-kang-lab" in entry.source
    assert overlay.provenance["sha256"] == hashlib.sha256(fixed.read_bytes()).hexdigest()
    assert overlay.provenance["layout"] == "bird-json"
    load_suite(suite_file)  # the suite with its overlay loads

    # a run scored on both golds: the prediction right by the corrected gold only
    result = cli(
        "import", "corrections", tmp_path / "bird", "--out", tmp_path / "s2", "-p",
        f"m={preds}", "--set", "base=bird", "--set", f"corrections={fixed}",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    run = tmp_path / "run"
    result = cli("run", tmp_path / "s2" / "suite.yaml", "--out", run, "--no-progress", "--no-cache")
    assert result.exit_code in (0, 1), result.output
    result = cli("overlay", tmp_path / "s2" / "suite.yaml", run, "--cache-dir", tmp_path / "c")
    assert result.exit_code == 0, result.output
    content = json.loads((run / "overlay-corrections.json").read_text())
    assert content["overlay"]["provenance"]["sha256"] == overlay.provenance["sha256"]
    figures = content["systems"]["m"]
    assert (figures["original"]["pass_rate"], figures["overlay"]["pass_rate"]) == (0.5, 1.0)


def test_sql_dir_layout_and_proposed(tmp_path: Path) -> None:
    folder = tmp_path / "gold" / "sql"
    write(folder / "3.sql", "SELECT name FROM singer WHERE country = 'FR'\n")
    write(folder / "0.sql", DEV[0]["SQL"])  # the same as the import's gold: not listed
    result = _import(tmp_path, folder, "layout=sql-dir", "proposed=true")
    assert result.exit_code == 0, result.output
    overlay = load_overlay(tmp_path / "suite" / "corrections.yaml")
    assert [e.case_id for e in overlay.entries] == ["3"] and overlay.applied == {}


def test_bad_corrections_are_exit_2_naming_the_place(tmp_path: Path) -> None:
    wrong_db = write(tmp_path / "a.json", json.dumps([{**CORRECTED[1], "db_id": "other"}]))
    result = _import(tmp_path, wrong_db, out="a")
    assert result.exit_code == 2 and "item 0" in result.output and "other" in result.output
    unknown = write(tmp_path / "b.json", json.dumps([{**CORRECTED[1], "question_id": 99}]))
    result = _import(tmp_path, unknown, out="b")
    assert result.exit_code == 2 and "99" in result.output
    assert not (tmp_path / "b" / "suite.yaml").exists()
    result = _import(tmp_path, unknown, "layout=nope", out="c")
    assert result.exit_code == 2 and "bird-json" in result.output
    result = cli("import", "corrections", tmp_path / "bird", "--out", tmp_path / "d")
    assert result.exit_code == 2 and "base=" in result.output
