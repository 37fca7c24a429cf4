"""`run --retry-errors`: after an evaluator outage, only the records it left unscored (or in
error) are scored again, from their stored outputs: the system is not called again, the
rest is kept, and no record is stored twice."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from queryeval.cli import app
from test_runner import make_answer_suite

SYSTEMS = "  - {name: live, callable: 'runner_plugin:counting_system'}\n"


def test_retry_errors_rescores_only_what_the_outage_left(tmp_path: Path) -> None:
    suite = make_answer_suite(
        tmp_path / "s", 6, scorers="  - test_flaky_judge\n", systems=SYSTEMS,
        extra="settings: {max_unscored_share: 1.0}\n",
    )  # fmt: skip
    run_dir = tmp_path / "run"
    runner = CliRunner()
    assert runner.invoke(app, ["run", str(suite), "--out", str(run_dir)]).exit_code == 0
    flaky = sys.modules["runner_plugin"].Flaky
    flaky.calls = 0
    # the same suite run again while the evaluator is down: every judgment unscored
    flaky.down = True
    try:
        down = tmp_path / "down"
        assert runner.invoke(app, ["run", str(suite), "--out", str(down)]).exit_code == 0
    finally:
        flaky.down = False
    assert flaky.calls == 6
    stored = [json.loads(x) for x in (down / "results.jsonl").open()]
    assert {r["scores"]["test_flaky_judge"]["status"] for r in stored} == {"unscored"}
    before = {r["case_id"]: r["output"] for r in stored}
    result = runner.invoke(app, ["run", str(suite), "--out", str(down), "--retry-errors"])
    assert result.exit_code == 0, result.stderr
    assert "6 new record(s), 0 resumed" in result.stdout
    assert flaky.calls == 6  # the stored outputs were scored again; nobody was asked twice
    records = [json.loads(x) for x in (down / "results.jsonl").open()]
    assert sorted(r["case_id"] for r in records) == [f"c-{i}" for i in range(6)]
    assert {r["case_id"]: r["output"] for r in records} == before
    assert all(r["scores"]["test_flaky_judge"]["status"] == "ok" for r in records)
    again = json.loads((down / "summary.json").read_text())["systems"]["live"]["scorers"]
    clean = json.loads((run_dir / "summary.json").read_text())["systems"]["live"]["scorers"]
    assert again["test_flaky_judge"]["mean"] == clean["test_flaky_judge"]["mean"] == 5 / 6


def test_retry_errors_keeps_records_that_were_scored(tmp_path: Path) -> None:
    suite = make_answer_suite(tmp_path / "s", 4, scorers="  - test_half_unscored\n",
                              extra="settings: {max_unscored_share: 1.0}\n")  # fmt: skip
    run_dir = tmp_path / "run"
    runner = CliRunner()
    assert runner.invoke(app, ["run", str(suite), "--out", str(run_dir)]).exit_code == 0
    first = (run_dir / "results.jsonl").read_text().splitlines()
    result = runner.invoke(app, ["run", str(suite), "--out", str(run_dir), "--retry-errors"])
    assert result.exit_code == 0, result.stderr
    assert "2 new record(s), 2 resumed" in result.stdout  # the two unscored ones again
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    kept = [x for x in first if '"status":"ok"' in x]
    assert lines[: len(kept)] == kept and len(lines) == 4
