"""pytest plugin: assert a queryeval suite inside a project's own tests.

Registered through the `pytest11` entry point, so it loads at every pytest start-up: it
imports nothing heavy there (queryeval's runner is imported only when a suite runs).

    from queryeval.pytest import assert_gates

    def test_text_to_sql(queryeval_run):
        assert_gates(queryeval_run("evals/suite.yaml"))

    @pytest.mark.queryeval("evals/suite.yaml", baseline="evals/baseline-run")
    def test_no_regression(queryeval_result):
        assert_gates(queryeval_result)
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from queryeval.runner import RunResult

__all__ = ["assert_gates", "failed_gates", "run_suite_for_test"]


def run_suite_for_test(
    path: str | Path,
    *,
    out: str | Path | None = None,
    baseline: str | Path | None = None,
    write_reports: bool = True,
) -> RunResult:
    """Run a suite quietly into `out` (a new temporary folder by default) and return the
    result; bad input fails the test with the error's message (file, line, what was wrong)."""
    from queryeval.errors import InputError
    from queryeval.runner import load_suite, run_suite

    run_dir = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="queryeval-"))
    try:
        return run_suite(
            load_suite(path),
            run_dir,
            overwrite=True,
            progress=False,
            write_reports=write_reports,
            baseline=Path(baseline) if baseline is not None else None,
        )
    except InputError as exc:
        message = exc.render()
    # failed outside the except block, so the report shows the message, not a chain
    pytest.fail(f"queryeval: bad input: {message}", pytrace=False)


def failed_gates(result: RunResult) -> list[str]:
    """One line per failing gate: system, gate, value (and the baseline bound)."""
    lines = []
    for g in result.gates:
        if g["passed"]:
            continue
        line = f"{g['system']}: {g['gate']} (value {g['value']}"
        if "bound" in g:
            line += f", bound {g['bound']}, baseline {g.get('baseline_value')}"
        line += ")"
        if g.get("note"):
            line += f": {g['note']}"
        lines.append(line)
    return lines


def assert_gates(result: RunResult) -> None:
    """Fail the test, listing every failing gate, unless all the suite's gates pass."""
    lines = failed_gates(result)
    if lines:
        pytest.fail(
            f"queryeval: {len(lines)} gate(s) failed (run in {result.out_dir}):\n  "
            + "\n  ".join(lines),
            pytrace=False,
        )


def pytest_configure(config: pytest.Config) -> None:
    """Declare the `queryeval` marker."""
    config.addinivalue_line(
        "markers",
        "queryeval(suite, baseline=None): the suite that the `queryeval_result` fixture runs "
        "(paths relative to the test file)",
    )


@pytest.fixture
def queryeval_run(tmp_path: Path) -> Callable[..., RunResult]:
    """A function `run(path, baseline=None, write_reports=True)` that runs a suite into the
    test's temporary folder."""
    count = 0

    def run(path: str | Path, **kwargs: Any) -> RunResult:
        nonlocal count
        count += 1
        return run_suite_for_test(path, out=tmp_path / f"queryeval-run-{count}", **kwargs)

    return run


@pytest.fixture
def queryeval_result(request: pytest.FixtureRequest, tmp_path: Path) -> RunResult:
    """The result of the suite named by the test's `@pytest.mark.queryeval(...)` marker."""
    marker = request.node.get_closest_marker("queryeval")
    if marker is None or not marker.args:
        pytest.fail(
            "the queryeval_result fixture needs @pytest.mark.queryeval('path/to/suite.yaml')",
            pytrace=False,
        )
    here = Path(request.path).parent

    def resolve(p: str | Path) -> Path:
        p = Path(p)
        return p if p.is_absolute() else here / p

    baseline = marker.kwargs.get("baseline")
    return run_suite_for_test(
        resolve(marker.args[0]),
        out=tmp_path / "queryeval-run",
        baseline=resolve(baseline) if baseline else None,
    )
