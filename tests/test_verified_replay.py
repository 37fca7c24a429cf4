"""verified_match in a stored run: the summary's EX beside verified (the difference is the
number of counterexamples, verified <= EX on every case), and `queryeval replay` rebuilds
each stored witness to the stored results."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from queryeval.cli import app
from queryeval.runner import load_suite, run_suite
from verified_support import make_suite

CASES = {  # id: (gold, prediction)
    "boundary": ("SELECT name FROM emp WHERE age >= 30", "SELECT name FROM emp WHERE age > 30"),
    "nulls": ("SELECT count(*) FROM emp", "SELECT count(salary) FROM emp"),
    "right": ("SELECT name FROM emp WHERE dept_id = 1", "SELECT name FROM emp WHERE 1 = dept_id"),
    "wrong": ("SELECT name FROM emp", "SELECT name FROM dept"),
    "garbage": ("SELECT name FROM emp", "SELEC name FRM emp"),
}  # fmt: skip


def _suite(folder: Path) -> Path:
    suite = make_suite(folder)
    lines = []
    for i, (gold, _) in CASES.items():
        lines.append(f"- id: {i}\n  conversation: [{{content: q, target: [{{query: "
                     f"{{text: {json.dumps(gold)}, database: shop_duckdb}}}}]}}]\n")  # fmt: skip
    (folder / "cases.yaml").write_text("".join(lines))
    (folder / "p.jsonl").write_text("".join(json.dumps({"case_id": i, "query": p}) + "\n"
                                            for i, (_, p) in CASES.items()))  # fmt: skip
    text = suite.read_text().replace("{name: verified_match}", "{name: verified_match, options: "
                                     "{variants: 24}}\nreports: [json]")  # fmt: skip
    suite.write_text(text)
    return suite


def test_a_stored_run_shows_ex_beside_verified_and_replays_its_witnesses(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    run_suite(load_suite(suite), tmp_path / "run", progress=False)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    entry = summary["systems"]["s"]["scorers"]["verified_match"]
    assert entry["metrics"]["ex"]["mean"] == 3 / 5 and entry["metrics"]["verified"]["mean"] == 1 / 5
    v = entry["aggregate"]["verified"]
    assert (v["ex"], v["verified"], v["difference"], v["counterexamples"]) == (3, 1, 2, 2)
    assert v["tiers"] == {"ex": 2, "variants": 3} and "not a proof" in v["note"]
    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").open()]
    for record in records:
        metrics = record["scores"]["verified_match"]["details"]["metrics"]
        assert metrics["verified"] <= metrics["ex"]
    runner = CliRunner()
    for case_id in ("boundary", "nulls"):
        result = runner.invoke(app, ["replay", str(tmp_path / "run"), case_id,
                                     "--script", str(tmp_path / f"{case_id}.sql")])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert result.output.count("same as stored") == 2
        assert (tmp_path / f"{case_id}.sql").read_text().startswith("CREATE TABLE")
    missing = runner.invoke(app, ["replay", str(tmp_path / "run"), "right"])
    assert missing.exit_code == 2 and "no verified_match counterexample" in missing.output
