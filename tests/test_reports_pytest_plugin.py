"""The pytest plugin: a project asserts a suite's gates in its own tests."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "regression"

TESTS = f'''
import pytest
from queryeval.pytest import assert_gates

def test_gates_pass(queryeval_run):
    assert_gates(queryeval_run(r"{EXAMPLE / "suite.yaml"}"))

def test_gates_fail(queryeval_run):
    result = queryeval_run(r"{EXAMPLE / "rerun.yaml"}", baseline=r"{EXAMPLE / "suite-run"}")
    assert_gates(result)

@pytest.mark.queryeval(r"{EXAMPLE / "suite.yaml"}")
def test_marker(queryeval_result):
    assert queryeval_result.summary["systems"]["assistant"]["cases"] == 200
    assert_gates(queryeval_result)

def test_bad_input(queryeval_run):
    queryeval_run("missing.yaml")
'''


def test_plugin_runs_suites_and_lists_failing_gates(tmp_path: Path) -> None:
    # a stored run of v2 as the baseline of the noise re-run: its relative gate must fail
    from queryeval.runner import load_suite, run_suite

    stored = tmp_path / "v2"
    run_suite(load_suite(EXAMPLE / "suite.yaml"), stored, progress=False, write_reports=False)
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_suites.py").write_text(TESTS.replace(str(EXAMPLE / "suite-run"), str(stored)))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    # `-p no:queryeval` keeps an installed entry point from loading the plugin a second time
    command = [sys.executable, "-m", "pytest", "-p", "no:queryeval", "-p", "queryeval.pytest"]
    command += ["-p", "no:cacheprovider", "-q", "-o", "addopts=", "test_suites.py"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=project)
    out = result.stdout
    assert result.returncode == 1
    assert "2 failed, 2 passed" in out, out
    assert "FAILED test_suites.py::test_gates_fail" in out
    assert "FAILED test_suites.py::test_bad_input" in out
    assert "queryeval: 1 gate(s) failed" in out
    assert "assistant: pass_rate >= baseline - 0.10 (value 0.6, bound 0.65, baseline 0.75)" in out
    assert "queryeval: bad input: missing.yaml" in out
    assert "Traceback" not in out and "direct cause" not in out


def test_plugin_import_is_light() -> None:
    code = (
        "import sys, queryeval.pytest; "
        "heavy = [m for m in ('numpy', 'openpyxl', 'xlsxwriter', 'jinja2', 'queryeval.runner', "
        "'queryeval.stats', 'pydantic') if m in sys.modules]; print(heavy)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "[]"


def test_entry_point_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"queryeval": "queryeval.pytest"}
