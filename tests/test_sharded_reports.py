"""Reports declare what they read of the cases (issue 30): every report gets the cases'
info (`CaseInfo`: a sharded run's stubs), and the whole cases are loaded once, only when a
report asks for `whole_cases`."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from queryeval.cases import Case
from queryeval.config import ReportConfig, SuiteConfig
from queryeval.log import RunLog, Summary
from queryeval.reports import ReportInput, register_report, write_reports
from queryeval.runner._shard_check import CaseStub

_SEEN: dict[str, list[str]] = {}
_SUMMARY = cast(Summary, {})  # no report here reads it


@register_report("test-ids-only")
def _ids_only(report: ReportInput, path: Path | None) -> Path | None:
    _SEEN["ids"] = [c.id for c in report.cases]
    return None


_ids_only.case_info_only = True  # type: ignore[attr-defined]


@register_report("test-plugin-reading-cases")
def _plugin(report: ReportInput, path: Path | None) -> Path | None:
    _SEEN["plugin"] = [c.question for c in report.cases]  # type: ignore[attr-defined]
    return None


@register_report("test-whole-cases")
def _whole(report: ReportInput, path: Path | None) -> Path | None:
    _SEEN.setdefault("questions", []).extend(c.question for c in report.whole_cases)
    return None


def _case(i: int) -> Case:
    return Case.model_validate(
        {"id": f"c{i}", "conversation": [{"role": "user", "content": f"q{i}"}]}
    )


@pytest.mark.parametrize("whole", [0, 2])
def test_whole_cases_load_once_and_only_when_read(tmp_path: Path, whole: int) -> None:
    _SEEN.clear()
    loads: list[int] = []

    def load() -> list[Case]:
        loads.append(1)
        return [_case(0), _case(1)]

    kinds = ["test-ids-only", *["test-whole-cases"] * whole]
    suite = SuiteConfig(name="s", cases="c.jsonl", systems=[{"name": "a", "predictions": "p"}])
    log = RunLog("r", tmp_path, summary=_SUMMARY)
    stubs = [CaseStub("c0", "", []), CaseStub("c1", "", [])]
    extra = [ReportConfig(kind=k) for k in kinds]
    write_reports(suite, log, stubs, {}, load_cases=load, extra=extra)
    assert _SEEN["ids"] == ["c0", "c1"]
    assert len(loads) == (1 if whole else 0)
    assert _SEEN.get("questions", []) == ["q0", "q1"] * whole


def test_whole_cases_are_the_cases_when_the_run_holds_them(tmp_path: Path) -> None:
    log = RunLog("r", tmp_path, summary=_SUMMARY)
    cases = [_case(0)]
    assert list(ReportInput(log, cases, {}).whole_cases) == cases


def test_a_plugin_report_reads_whole_cases_as_cases(tmp_path: Path) -> None:
    _SEEN.clear()
    suite = SuiteConfig(name="s", cases="c.jsonl", systems=[{"name": "a", "predictions": "p"}])
    log = RunLog("r", tmp_path, summary=_SUMMARY)
    stubs = [CaseStub("c0", "", []), CaseStub("c1", "", [])]
    extra = [ReportConfig(kind="test-plugin-reading-cases")]
    write_reports(suite, log, stubs, {}, load_cases=lambda: [_case(0), _case(1)], extra=extra)
    assert _SEEN["plugin"] == ["q0", "q1"]
