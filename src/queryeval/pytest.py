"""pytest plugin: assert a queryeval suite inside a project's own tests.

Registered through the `pytest11` entry point, so it loads at every pytest start-up: it
imports nothing heavy there (queryeval's runner is imported only when a suite runs).

    from queryeval.pytest import assert_gates

    def test_text_to_sql(queryeval_run):
        assert_gates(queryeval_run("evals/suite.yaml"))

    @pytest.mark.queryeval("evals/suite.yaml", baseline="evals/baseline-run")
    def test_no_regression(queryeval_result):
        assert_gates(queryeval_result)

One test per case (DeepEval's style), the suite run once for the whole session:

    from queryeval.pytest import assert_case, case_params

    SUITE = "evals/suite.yaml"

    @pytest.mark.parametrize("case_id", case_params(SUITE))
    def test_case(queryeval_suite, case_id):
        assert_case(queryeval_suite(SUITE), case_id)
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from queryeval.runner import RunResult

__all__ = [
    "CaseResult",
    "SuiteRun",
    "assert_case",
    "assert_gates",
    "case_params",
    "failed_gates",
    "run_suite_for_test",
]


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


def figure(value: Any) -> str:
    """A figure as a message shows it: at most 3 decimals, no trailing zeros.

    >>> figure(0.6000000000000001), figure(2 / 3), figure(None), figure(1.0)
    ('0.6', '0.667', '—', '1')
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "—" if value is None else str(value)
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _cut(text: str, limit: int = 120) -> str:
    """The first line, cut at a word past `limit` characters with an ellipsis."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    if len(line) <= limit:
        return line
    return line[:limit].rsplit(" ", 1)[0] + "…"


@dataclass(frozen=True)
class CaseResult:
    """One (system, case) of a run: verdict, system error, each score's value and status,
    and why it did not pass (`reasons`: `label: explanation` lines)."""

    case_id: str
    system: str
    passed: bool | None
    error: str | None
    scores: Mapping[str, float | None]
    statuses: Mapping[str, str]
    reasons: tuple[str, ...]
    record: Mapping[str, Any] = field(repr=False)

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> CaseResult:
        """The CaseResult of a stored record (results.jsonl)."""
        scores = record.get("scores") or {}
        reasons = [str(record["error"])] if record.get("error") else []
        for label, score in scores.items():
            score = score or {}
            if score.get("status", "ok") != "ok" or score.get("passed") is False:
                reasoning = (score.get("details") or {}).get("reasoning")
                why = score.get("explanation") or reasoning or "below its threshold"
                if score.get("status", "ok") != "ok" and not score.get("explanation"):
                    why = str(score.get("status"))
                value = score.get("value")
                shown = f" {figure(value)}" if value is not None else ""
                reasons.append(f"{label}{shown}: {_cut(str(why))}")
        return cls(
            case_id=str(record["case_id"]),
            system=str(record["system"]),
            passed=record.get("passed"),
            error=record.get("error"),
            scores={k: (v or {}).get("value") for k, v in scores.items()},
            statuses={k: str((v or {}).get("status", "ok")) for k, v in scores.items()},
            reasons=tuple(reasons),
            record=record,
        )

    def describe(self) -> str:
        """`case c3 [system]: failed: em 0: rows differ` (the verdict, then each reason)."""
        verdict = {True: "passed", False: "failed", None: "not scored"}[self.passed]
        if self.error:
            verdict = "system error"
        why = "; ".join(self.reasons)
        return f"case {self.case_id} [{self.system}]: {verdict}" + (f": {why}" if why else "")


@dataclass
class SuiteRun:
    """A finished run with per-case access: `run.case(case_id)` (the only system's, or
    `system=`), `run.cases(system)`, `run.failing()`; the RunResult is `run.result`."""

    result: RunResult
    _by_key: dict[tuple[str, str], CaseResult] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        from queryeval.log import read_log

        for record in read_log(self.result.out_dir).records:
            found = CaseResult.of(record)
            self._by_key[(found.system, found.case_id)] = found

    def __getattr__(self, name: str) -> Any:  # summary, gates, out_dir ... of the run
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.result, name)

    @property
    def systems(self) -> list[str]:
        return list(dict.fromkeys(system for system, _ in self._by_key))

    def cases(self, system: str | None = None) -> list[CaseResult]:
        """Every case of `system` (of every system when None), in run order."""
        return [c for (s, _), c in self._by_key.items() if system is None or s == system]

    def case(self, case_id: str | int, system: str | None = None) -> CaseResult:
        """The case `case_id` of `system` (may be left out when the suite has one system).
        KeyError names what exists when there is no such case."""
        systems = self.systems
        if system is None:
            if len(systems) != 1:
                raise KeyError(f"the suite has {len(systems)} systems; name one: {systems}")
            system = systems[0]
        found = self._by_key.get((system, str(case_id)))
        if found is None:
            raise KeyError(f"no case {case_id!r} for system {system!r} in {self.result.out_dir}")
        return found

    def failing(self, system: str | None = None) -> list[CaseResult]:
        """The cases that did not pass (failed, system error or not scored)."""
        return [c for c in self.cases(system) if c.passed is not True]


def failed_gates(result: RunResult | SuiteRun) -> list[str]:
    """One line per failing gate: system, gate, value (and the baseline bound), rounded."""
    lines = []
    for g in result.gates:
        if g["passed"]:
            continue
        line = f"{g['system']}: {g['gate']} (value {figure(g['value'])}"
        if "bound" in g:
            line += f", bound {figure(g['bound'])}, baseline {figure(g.get('baseline_value'))}"
        line += ")"
        if g.get("note"):
            line += f": {g['note']}"
        lines.append(line)
    return lines


_SHOWN_CASES = 10  # failing cases listed under a failing gate


def assert_gates(result: RunResult | SuiteRun) -> None:
    """Fail the test, listing every failing gate (figures rounded) and, for each system
    with a failing gate, its failing case ids and their reasons, unless all gates pass."""
    lines = failed_gates(result)
    if not lines:
        return
    suite = result if isinstance(result, SuiteRun) else SuiteRun(result)
    for system in dict.fromkeys(g["system"] for g in suite.gates if not g["passed"]):
        failing = suite.failing(system) if system in suite.systems else []
        if failing:
            lines.append(f"{system}: {len(failing)} case(s) not passed:")
            lines += [f"  {c.describe()}" for c in failing[:_SHOWN_CASES]]
            if len(failing) > _SHOWN_CASES:
                lines.append(f"  ... and {len(failing) - _SHOWN_CASES} more")
    count = sum(1 for g in suite.gates if not g["passed"])
    pytest.fail(
        f"queryeval: {count} gate(s) failed (run in {suite.out_dir}):\n  " + "\n  ".join(lines),
        pytrace=False,
    )


def assert_case(
    result: RunResult | SuiteRun, case_id: str | int, system: str | None = None
) -> None:
    """Fail the test unless the case passed: the message names the case, the system, its
    verdict and each failing score with its rounded value and reason."""
    suite = result if isinstance(result, SuiteRun) else SuiteRun(result)
    try:
        found = suite.case(case_id, system)
    except KeyError as exc:
        message = str(exc.args[0])
    else:
        if found.passed is True:
            return
        message = found.describe()
    pytest.fail(f"queryeval: {message}", pytrace=False)


def case_params(path: str | Path, *, systems: bool = False) -> list[Any]:
    """`pytest.param`s of the suite's cases, ids = case ids, for `parametrize` (read at
    collection, without running anything). `systems=True`: one per (system, case), as
    `(system, case_id)` with ids `system-case_id`. A bad suite fails collection with the
    file, line and what was wrong."""
    from queryeval.config import load_suite
    from queryeval.errors import InputError

    try:
        suite = load_suite(path)
        from queryeval.cases import load_cases

        cases = load_cases(suite.cases, base=Path(path).resolve().parent)
    except InputError as exc:
        raise pytest.UsageError(f"queryeval: bad input: {exc.render()}") from None
    if not systems:
        return [pytest.param(c.id, id=c.id) for c in cases]
    return [pytest.param(s.name, c.id, id=f"{s.name}-{c.id}") for s in suite.systems for c in cases]


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


@pytest.fixture(scope="session")
def queryeval_suite(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., SuiteRun]:
    """A function `suite(path, baseline=None)` giving the SuiteRun of a suite, run once per
    session (the same path and baseline again: the same run)."""
    runs: dict[tuple[Path, Path | None], SuiteRun] = {}

    def suite(path: str | Path, baseline: str | Path | None = None) -> SuiteRun:
        key = (Path(path).resolve(), Path(baseline).resolve() if baseline else None)
        if key not in runs:
            out = tmp_path_factory.mktemp("queryeval-suite")
            runs[key] = SuiteRun(run_suite_for_test(path, out=out, baseline=baseline))
        return runs[key]

    return suite


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
