"""Spider-family gold errata (`--set corrections=spider-errata`, or an errata file with
`--set layout=errata`) as an overlay: applied only where the imported gold is the erratum's
original, reported otherwise (issue 32, docs/audit.md)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from benchmark_files import make_db, write
from queryeval.cli import app
from queryeval.config import load_overlay, load_suite
from queryeval.importers._errata import read_errata
from queryeval.importers.corrections import _packaged

GOLDS = [
    "SELECT name FROM singer WHERE country = 'MARS'",
    "SELECT count(*) FROM singer",
    "SELECT name FROM singer ORDER BY age",
]


def cli(*args: str | Path) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def _erratum(i: int, original: str, corrected: str, split: str = "dev") -> dict[str, Any]:
    return {"benchmark": "spider", "split": split, "index": i, "database": "concert",
            "original": original, "corrected": corrected, "reason": f"reason {i}",
            "source": {"url": f"https://example.org/issues/{i}", "author": "someone",
                       "date": "2020-01-02"}}  # fmt: skip


def _spider(tmp_path: Path) -> Path:
    folder = tmp_path / "spider"
    make_db(folder / "database" / "concert" / "concert.sqlite")
    examples = [{"db_id": "concert", "question": f"q{i}", "query": q} for i, q in enumerate(GOLDS)]
    write(folder / "dev.json", json.dumps(examples))
    return folder


def _import(src: Path, out: Path, *sets: str) -> Any:
    args: list[str | Path] = ["import", "corrections", src, "--out", out]
    for s in sets:
        args += ["--set", s]
    return cli(*args)


def test_errata_apply_where_the_original_matches_and_are_reported_where_not(
    tmp_path: Path,
) -> None:
    errata = [
        _erratum(0, "SELECT  name FROM singer\nWHERE country = 'MARS'", "SELECT 'fixed 0'"),
        _erratum(1, "SELECT count(*) FROM concert", "SELECT 'fixed 1'"),  # not the gold
        _erratum(2, GOLDS[2], "SELECT 'fixed 2'"),
        _erratum(0, GOLDS[0], "SELECT 'train'", split="train"),  # another split
    ]
    file = write(tmp_path / "errata.yaml", yaml.safe_dump({"errata": errata}, sort_keys=False))
    out = tmp_path / "suite"
    result = _import(_spider(tmp_path), out, "base=spider", f"corrections={file}", "layout=errata")
    assert result.exit_code == 0, result.output
    assert "2 erratum(s) applied" in result.output and "1 not applied" in result.output
    assert "1 for other benchmarks or splits" in result.output
    overlay = load_overlay(out / "corrections.yaml")
    got = {e.case_id: (e.gold.text if e.gold else None, e.source) for e in overlay.entries}
    assert got == {
        "0000": ("SELECT 'fixed 0'", "https://example.org/issues/0 (someone, 2020-01-02)"),
        "0002": ("SELECT 'fixed 2'", "https://example.org/issues/2 (someone, 2020-01-02)"),
    }
    lines = {e.line for e in read_errata(file)}
    (report,) = overlay.provenance["not_applied"]
    assert "case 0001" in report and "SELECT count(*) FROM concert" in report
    assert int(report.split()[1]) in lines  # the erratum's line in the errata file
    assert "reason 0" in overlay.entries[0].reason
    load_suite(out / "suite.yaml")  # the suite with its overlay loads


def test_the_packaged_sparc_erratum_lands_on_its_gold_line(tmp_path: Path) -> None:
    """taoyds/sparc#8: line 562 of dev_gold.txt. 280 one-turn interactions take lines 1-559
    (a blank line after each), so the 281st interaction's second turn is line 562."""
    (sparc,) = [e for e in read_errata(_packaged()) if e.benchmark == "sparc"]
    folder = tmp_path / "sparc"
    db = folder / "database" / "battle_death" / "battle_death.sqlite"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE battle (id INTEGER PRIMARY KEY, name TEXT);"
        "CREATE TABLE ship (id INTEGER PRIMARY KEY, lost_in_battle INTEGER, location TEXT);"
        "INSERT INTO battle VALUES (1, 'a'), (2, 'b');"
        "INSERT INTO ship VALUES (1, 1, 'English Channel');"
    )
    # the reason holds: the original fails, the correction runs
    with pytest.raises(sqlite3.OperationalError, match=r"T1\.id"):
        con.execute(sparc.original)
    assert con.execute(sparc.corrected).fetchall() == [(2, "b")]
    (cosql,) = [e for e in read_errata(_packaged()) if e.benchmark == "cosql"]  # taoyds/cosql#2
    con.execute("CREATE TABLE countries (countryid INTEGER, countryname TEXT)")
    with pytest.raises(sqlite3.OperationalError, match="syntax error"):
        con.execute(cosql.original)
    assert con.execute(cosql.corrected).fetchall() == []
    con.close()
    one = [{"utterance": "all", "query": "SELECT name FROM battle"}]
    filler = {"database_id": "battle_death", "interaction": one}
    target = {"database_id": "battle_death", "interaction": [
        {"utterance": "battles", "query": "SELECT id, name FROM battle"},
        {"utterance": "not lost in the channel", "query": sparc.original},
    ]}  # fmt: skip
    write(folder / "dev.json", json.dumps([filler] * 280 + [target]))
    out = tmp_path / "suite"
    result = _import(folder, out, "base=sparc", "corrections=spider-errata")
    assert result.exit_code == 0, result.output
    (entry,) = load_overlay(out / "corrections.yaml").entries
    assert entry.case_id == "i0280-t2" and entry.gold is not None
    assert entry.gold.text == sparc.corrected and "taoyds/sparc/issues/8" in entry.source
    assert "JiexingQi" in entry.source and "dev_gold.txt line 562" in entry.reason


def test_a_bad_errata_file_is_exit_2_at_its_line(tmp_path: Path) -> None:
    good = _erratum(0, GOLDS[0], "SELECT 1")
    file = write(
        tmp_path / "bad.yaml",
        yaml.safe_dump({"errata": [good, {**good, "corrected": ""}]}, sort_keys=False),
    )
    text = file.read_text().splitlines()
    at = next(n for n, t in enumerate(text, 1) if t.strip() == "corrected: ''")
    src = _spider(tmp_path)
    result = _import(src, tmp_path / "s", "base=spider", f"corrections={file}", "layout=errata")
    assert result.exit_code == 2, result.output
    assert f"bad.yaml:{at}" in result.output and "'corrected'" in result.output
    both = write(tmp_path / "both.yaml", yaml.safe_dump({"errata": [{**good, "gold_line": 3}]}))
    result = _import(src, tmp_path / "t", "base=spider", f"corrections={both}", "layout=errata")
    assert result.exit_code == 2 and "one locator" in result.output
