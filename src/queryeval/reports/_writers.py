"""The built-in reports, each a `ReportWriter` over a `ReportInput` (registered by name in
`queryeval.reports._registry`; their modules load when a suite asks for them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from queryeval.reports._input import ReportInput


def console(report: ReportInput, path: Path | None) -> Path | None:
    """The summary printed (no file); the cases where a system failed named (the records
    are read only when there are some); each correction overlay's figures beside the
    original ones, with the cases it changes."""
    from queryeval.reports._console import print_summary, system_error_cases

    summary: dict[str, Any] = dict(report.summary)
    failed = any(e.get("system_errors") for e in summary.get("systems", {}).values())
    errors = system_error_cases(report.records, report.cases) if failed else None
    print_summary(summary, error_cases=errors, overlays=report.log.overlays)
    return None


def json_summary(report: ReportInput, path: Path | None) -> Path | None:
    """summary.json, which the run writes itself."""
    from queryeval.log import SUMMARY

    return report.out / SUMMARY


def excel(report: ReportInput, path: Path | None) -> Path | None:
    """report.xlsx: overview, one sheet per scorer, statistics."""
    from queryeval.reports._excel import write_excel

    return write_excel(
        path or report.out / "report.xlsx",
        report.summary,
        report.whole_cases,
        report.records,
        report.scorers,
        overlays=report.log.overlays,
    )


def html(report: ReportInput, path: Path | None) -> Path | None:
    """report.html: one self-contained page (options: `HtmlOptions`)."""
    from queryeval.reports._html import write_html

    return write_html(
        path or report.out / "report.html",
        report.summary,
        report.whole_cases,
        report.records,
        report.scorers,
        options=report.options,
        run_info=report.log.info,
        comparison=report.log.comparison,
        overlays=report.log.overlays,
    )


def markdown(report: ReportInput, path: Path | None) -> Path | None:
    """report.md: the summary and the comparison with a baseline."""
    from queryeval.reports._markdown import write_markdown

    return write_markdown(path or report.out / "report.md", report.summary, report.log.comparison)


def junit(report: ReportInput, path: Path | None) -> Path | None:
    """junit.xml: one testsuite per system, one for the gates."""
    from queryeval.reports._junit import write_junit

    return write_junit(
        path or report.out / "junit.xml",
        report.summary,
        report.cases,
        report.records,
        report.scorers,
    )


def _html_options() -> Any:
    from queryeval.reports._html import HtmlOptions

    return HtmlOptions


html.options_model = _html_options  # type: ignore[attr-defined]
