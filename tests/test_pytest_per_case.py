"""One test per case through the pytest plugin, run by pytest's own `pytester`: ids are
the case ids, the suite runs once for the session, failures name the case, its verdict and
each failing score with rounded values and reasons; a failing gate lists failing cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# imported once here: pytester's in-process runs restore sys.modules after each run, and
# pyarrow (under the runner) can be loaded only once in a process
import queryeval.runner  # noqa: F401
from reports_plugin import make_suite

pytest_plugins = ["pytester"]

TESTS = """
import pytest
from queryeval.pytest import assert_case, assert_gates, case_params

SUITE = r"{suite}"

@pytest.mark.parametrize("case_id", case_params(SUITE))
def test_case(queryeval_suite, case_id):
    assert_case(queryeval_suite(SUITE), case_id)

def test_gates(queryeval_suite):
    assert_gates(queryeval_suite(SUITE))

def test_accessor(queryeval_suite, tmp_path_factory):
    run = queryeval_suite(SUITE)
    case = run.case("case-5")
    assert case.passed is False and case.scores["test_exec_match"] == 0.0
    assert run.case("case-1").passed is True
    assert [c.case_id for c in run.failing()] == {failing}
    assert run.summary["suite"] == "grid"
    runs = list(tmp_path_factory.getbasetemp().glob("queryeval-suite[0-9]*"))
    assert len(runs) == 1, runs  # one run for the whole session
"""


def test_one_test_per_case_run_once(pytester: pytest.Pytester, tmp_path: Path) -> None:
    suite = make_suite(tmp_path / "suite", n=9)
    text = suite.read_text().replace("[html, excel, junit, markdown, json]", "[json]")
    text = text.replace("{skill: [0.5, 0.9], style: [a, crash]}", "{skill: 0.5, style: a}")
    text = text.replace("pass_rate >= 0.6", "pass_rate >= 0.7")
    suite.write_text(text)
    cases = [json.loads(x)["id"] for x in (tmp_path / "suite" / "cases.jsonl").open()]
    # answer_system with skill 0.5: right where the case number's last digit is below 5
    failing = [c for c in cases if int(c.split("-")[1]) % 10 >= 5]
    pytester.makepyfile(test_suite=TESTS.format(suite=suite, failing=failing))
    result = pytester.runpytest("-p", "no:cacheprovider", "-q", "-rf", "-o", "addopts=")
    outcomes = result.parseoutcomes()
    out = result.stdout.str()
    passed = [c for c in cases if c not in failing]
    assert outcomes.get("passed") == len(passed) + 1, out  # + test_accessor
    assert outcomes.get("failed") == len(failing) + 1, out  # + test_gates
    for c in cases:  # ids are the case ids
        verdict = "FAILED" if c in failing else "PASSED"
        assert (f"FAILED test_suite.py::test_case[{c}]" in out) == (verdict == "FAILED"), out
    system = "sys[skill=0.5,style=a]"
    assert f"queryeval: case case-5 [{system}]: failed: test_exec_match 0: rows differ" in out
    assert "test_judge 0.2: The answer contradicts the reference for case-5" in out
    assert f"{system}: pass_rate >= 0.7 (value 0.556)" in out  # rounded: not 0.5555555555555556
    assert "0.55555" not in out
    assert f"{system}: {len(failing)} case(s) not passed" in out
    assert "case case-8 [" in out and "Traceback" not in out


def test_bad_suite_fails_collection_with_its_place(pytester: pytest.Pytester) -> None:
    (pytester.path / "suite.yaml").write_text("name: x\ncases: missing.jsonl\nsystems: 3\n")
    pytester.makepyfile(
        test_bad="""
import pytest
from queryeval.pytest import case_params

@pytest.mark.parametrize("case_id", case_params("suite.yaml"))
def test_case(case_id):
    pass
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-q", "-o", "addopts=")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret != 0 and "queryeval: bad input: suite.yaml" in out, out
