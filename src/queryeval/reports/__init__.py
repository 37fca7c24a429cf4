"""Reports: console, JSON, Excel, HTML, Markdown and JUnit (registered in `_WRITERS`).

Every report is written from one typed input, a `ReportInput`: the run as stored (a
`queryeval.log.RunLog`: summary, run info, comparison, records read on first use), its
cases and its scorers, and the report's options. Running a suite and writing its reports
are separate steps: `queryeval report RUN_DIR` writes them again from the directory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.cases import Case
from queryeval.errors import InputError
from queryeval.log import Record, RunLog, Summary
from queryeval.reports._markdown import comparison_markdown, comparison_text

if TYPE_CHECKING:
    from queryeval.config import ReportConfig, SuiteConfig
    from queryeval.scorers import Scorer


@dataclass(frozen=True)
class ReportInput:
    """What a report is written from: a stored run (with its summary), its cases and scorers,
    and the report's own `options` (None when it takes none)."""

    log: RunLog
    cases: Sequence[Case]
    scorers: Mapping[str, Scorer]
    options: Any = None

    @property
    def summary(self) -> Summary:
        """The run's summary (a report is written only for a summarised run)."""
        assert self.log.summary is not None, "a report needs the run's summary"
        return self.log.summary

    @property
    def records(self) -> list[Record]:
        """The run's records (read once, by the first report that needs them)."""
        return self.log.records

    @property
    def out(self) -> Path:
        """The run directory, where reports go unless a path is configured."""
        assert self.log.path is not None, "a report needs the run directory"
        return self.log.path


ReportWriter = Callable[[ReportInput, Path | None], Path | None]


def _console(report: ReportInput, path: Path | None) -> Path | None:
    from queryeval.reports._console import print_summary

    print_summary(dict(report.summary))
    return None


def _json(report: ReportInput, path: Path | None) -> Path | None:
    return report.out / "summary.json"


def _excel(report: ReportInput, path: Path | None) -> Path | None:
    from queryeval.reports._excel import write_excel

    return write_excel(
        path or report.out / "report.xlsx",
        report.summary,
        report.cases,
        report.records,
        report.scorers,
    )


def _html(report: ReportInput, path: Path | None) -> Path | None:
    from queryeval.reports._html import write_html

    return write_html(
        path or report.out / "report.html",
        report.summary,
        report.cases,
        report.records,
        report.scorers,
        options=report.options,
        run_info=report.log.info,
        comparison=report.log.comparison,
    )


def _markdown(report: ReportInput, path: Path | None) -> Path | None:
    from queryeval.reports._markdown import write_markdown

    return write_markdown(path or report.out / "report.md", report.summary, report.log.comparison)


def _junit(report: ReportInput, path: Path | None) -> Path | None:
    from queryeval.reports._junit import write_junit

    return write_junit(
        path or report.out / "junit.xml",
        report.summary,
        report.cases,
        report.records,
        report.scorers,
    )


_WRITERS: dict[str, ReportWriter] = {
    "console": _console,
    "json": _json,
    "excel": _excel,
    "html": _html,
    "markdown": _markdown,
    "junit": _junit,
}


def report_kinds() -> list[str]:
    """The report kinds a suite may ask for."""
    return sorted(_WRITERS)


def report_options_model(kind: str) -> Any:
    """The pydantic model of a report kind's `options`, or None when it takes none."""
    if kind == "html":
        from queryeval.reports._html import HtmlOptions

        return HtmlOptions
    return None


def write_reports(
    suite: SuiteConfig,
    log: RunLog,
    cases: Sequence[Case],
    scorers: Mapping[str, Scorer],
    *,
    extra: Sequence[ReportConfig] = (),
) -> dict[str, Path]:
    """Write every report the suite configures (plus `extra` ones, e.g. from `--junit`) for
    a stored and summarised run (`log`; the HTML and Markdown reports show its comparison
    with a baseline when it has one); returns kind -> path for the files written."""
    written: dict[str, Path] = {}
    for rep in [*suite.reports, *extra]:
        writer = _WRITERS.get(rep.kind)
        if writer is None:
            raise InputError(
                f"unknown report kind {rep.kind!r}; expected one of {', '.join(report_kinds())}",
                path=suite.source,
                where="reports",
            )
        assert log.path is not None, "reports are written into the run directory"
        report = ReportInput(log, cases, scorers, rep.options)
        path = writer(report, (log.path / rep.path) if rep.path else None)
        if path is not None:
            written[rep.kind] = path
    return written


__all__ = [
    "ReportInput",
    "ReportWriter",
    "comparison_markdown",
    "comparison_text",
    "report_kinds",
    "report_options_model",
    "write_reports",
]
