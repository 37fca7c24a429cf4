"""Runs against a stored baseline: the regression example (a planted 15% fix, a noise
re-run), relative gates, `queryeval compare` and the comparison in the reports."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from queryeval.cli import app

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "regression"
BASELINE = EXAMPLE / "baseline-run"


@dataclass(frozen=True)
class _Exit:
    returncode: int
    stdout: str
    stderr: str


def _cli(*args: str) -> _Exit:
    """`queryeval ARGS` in this process (the same typer app `python -m queryeval` runs; a
    child interpreter per call cost seconds of start-up and tested nothing more)."""
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return _Exit(result.exit_code, result.stdout, result.stderr)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("regression")
    for name in ("suite", "rerun"):
        result = _cli(
            "run", str(EXAMPLE / f"{name}.yaml"), "--out", str(out / name), "--no-progress"
        )
        assert result.returncode == 0, result.stderr
    return {"v2": out / "suite", "rerun": out / "rerun"}


def test_planted_improvement_is_better_with_a_ci_excluding_zero(runs: dict[str, Path]) -> None:
    result = _cli("compare", str(BASELINE), str(runs["v2"]), "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["verdict"] == "better"
    (pair,) = data["systems"]
    passed = next(m for m in pair["metrics"] if m["metric"] == "pass")
    assert passed["diff"] == pytest.approx(0.15)  # 30 of 200 cases fixed, none broken
    assert passed["ci"]["low"] > 0 and passed["p_value"] < 0.001
    assert len(pair["fixed"]) == 30 and pair["broken"] == []


def test_noise_rerun_shows_no_significant_difference(runs: dict[str, Path]) -> None:
    result = _cli("compare", str(BASELINE), str(runs["rerun"]), "--format", "json")
    data = json.loads(result.stdout)
    assert data["verdict"] == "no significant difference"
    (pair,) = data["systems"]
    passed = next(m for m in pair["metrics"] if m["metric"] == "pass")
    assert passed["ci"]["low"] < 0 < passed["ci"]["high"]
    assert len(pair["fixed"]) == len(pair["broken"]) == 8


def test_run_stores_the_comparison_and_reports_show_it(runs: dict[str, Path]) -> None:
    comparison = json.loads((runs["v2"] / "comparison.json").read_text())
    assert comparison["verdict"] == "better"
    summary = json.loads((runs["v2"] / "summary.json").read_text())
    gates = {g["gate"]: g for g in summary["gates"]}
    rel = gates["pass_rate >= baseline - 0.02"]
    assert rel["passed"] and rel["baseline_value"] == pytest.approx(0.6)
    assert rel["bound"] == pytest.approx(0.58)
    html = (runs["v2"] / "report.html").read_text()
    assert 'id="comparison"' in html and "Fixed (30)" in html
    md = (runs["v2"] / "report.md").read_text()
    assert "queryeval comparison: ✅ **better**" in md
    run_info = json.loads((runs["v2"] / "run.json").read_text())
    assert run_info["baseline"].endswith("baseline-run")


def test_compare_formats_and_fail_on_worse(runs: dict[str, Path], tmp_path: Path) -> None:
    md = _cli("compare", str(BASELINE), str(runs["v2"]), "-f", "md", "--metric", "term_selection")
    assert md.returncode == 0
    assert "| term_selection | 200 |" in md.stdout and "| pass |" not in md.stdout
    text = _cli("compare", str(BASELINE), str(runs["v2"]))
    assert text.stdout.startswith("verdict: better")
    # reversed, the new version is the reference: the old one is worse
    worse = _cli("compare", str(runs["v2"]), str(BASELINE), "--fail-on-worse")
    assert worse.returncode == 1 and "verdict: worse" in worse.stdout
    bad = _cli("compare", str(BASELINE), str(tmp_path))
    assert bad.returncode == 2 and "no results.jsonl" in bad.stderr
    unknown = _cli("compare", str(BASELINE), str(runs["v2"]), "--system", "nobody")
    assert unknown.returncode == 2 and "no system 'nobody'" in unknown.stderr


def test_failing_relative_gate_exits_1_and_lists_it(tmp_path: Path) -> None:
    folder = tmp_path / "ex"
    shutil.copytree(EXAMPLE, folder)
    suite = (folder / "rerun.yaml").read_text().replace("baseline - 0.10", "baseline + 0.05")
    (folder / "rerun.yaml").write_text(suite)
    result = _cli("run", str(folder / "rerun.yaml"), "--out", str(tmp_path / "r"), "--no-progress")
    assert result.returncode == 1
    assert "gate failed: assistant: pass_rate >= baseline + 0.05" in result.stderr
    assert "bound 0.65" in result.stderr


def test_relative_gate_without_baseline_is_bad_input(tmp_path: Path) -> None:
    folder = tmp_path / "ex"
    shutil.copytree(EXAMPLE, folder)
    text = (folder / "rerun.yaml").read_text().replace("baseline: baseline-run\n", "")
    (folder / "rerun.yaml").write_text(text)
    result = _cli("run", str(folder / "rerun.yaml"), "--out", str(tmp_path / "r"), "--no-progress")
    assert result.returncode == 2
    assert "rerun.yaml:10: gates[0]:" in result.stderr and "--baseline" in result.stderr
    assert not (tmp_path / "r" / "results.jsonl").exists()  # refused before running
    # given on the command line instead, it runs
    ok = _cli(
        "run",
        str(folder / "rerun.yaml"),
        "--out",
        str(tmp_path / "r"),
        "--no-progress",
        "--baseline",
        str(folder / "baseline-run"),
        "--junit",
        str(tmp_path / "junit.xml"),
    )
    assert ok.returncode == 0, ok.stderr
    assert "<testsuite" in (tmp_path / "junit.xml").read_text()
    # and the run made with --baseline is reported again with it (its run.json names it)
    (tmp_path / "r" / "comparison.json").unlink()
    again = _cli("report", str(tmp_path / "r"))
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "r" / "comparison.json").read_text())["verdict"]


def test_report_command_keeps_the_baseline(runs: dict[str, Path], tmp_path: Path) -> None:
    run = tmp_path / "copy"
    shutil.copytree(runs["v2"], run)
    (run / "comparison.json").unlink()
    (run / "report.md").unlink()
    result = _cli("report", str(run))
    assert result.returncode == 0, result.stderr
    assert json.loads((run / "comparison.json").read_text())["verdict"] == "better"
    assert "queryeval comparison" in (run / "report.md").read_text()
