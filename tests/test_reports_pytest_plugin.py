"""The pytest plugin: a project asserts a suite's gates in its own tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "regression"


def project_tests(example: Path, stored: Path) -> str:
    """A project's tests of the example's suites in `example` (`stored`: the baseline run
    of the noise re-run)."""
    return f'''
import pytest
from queryeval.pytest import assert_gates

def test_gates_pass(queryeval_run):
    assert_gates(queryeval_run(r"{example / "suite.yaml"}"))

def test_gates_fail(queryeval_run):
    result = queryeval_run(r"{example / "rerun.yaml"}", baseline=r"{stored}")
    assert_gates(result)

@pytest.mark.queryeval(r"{example / "suite.yaml"}")
def test_marker(queryeval_result):
    assert queryeval_result.summary["systems"]["assistant"]["cases"] == 200
    assert_gates(queryeval_result)

def test_bad_input(queryeval_run):
    queryeval_run("missing.yaml")
'''


def json_report_only(folder: Path) -> Path:
    """A copy of the example in `folder` whose suites write the JSON report only: the gates
    are what the plugin asserts; the other reports (Excel, HTML: a second of CPU for three runs
    of 200 cases) have their own tests."""
    shutil.copytree(EXAMPLE, folder)
    for name in ("suite.yaml", "rerun.yaml"):
        suite = folder / name
        lines = suite.read_text(encoding="utf-8").splitlines()
        json_only = ["reports: [json]" if line.startswith("reports:") else line for line in lines]
        assert json_only != lines, name
        suite.write_text("\n".join(json_only) + "\n", encoding="utf-8")
    return folder


def test_plugin_runs_suites_and_lists_failing_gates(tmp_path: Path) -> None:
    # a stored run of v2 as the baseline of the noise re-run: its relative gate must fail
    from queryeval.runner import load_suite, run_suite

    stored = tmp_path / "v2"
    run_suite(load_suite(EXAMPLE / "suite.yaml"), stored, progress=False, write_reports=False)
    project = tmp_path / "project"
    project.mkdir()
    example = json_report_only(tmp_path / "example")
    (project / "test_suites.py").write_text(project_tests(example, stored))
    # only the plugin under test: the installed ones (hypothesis: its import and assertion
    # rewriting cost more CPU than the project's tests) are not loaded in the child
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
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
