"""The report registry: kinds -> writers, imported lazily. Built-in kinds are one line each
below; other reports register with `register_report` (a suite's `plugins:` module) or the
`queryeval.reports` entry-point group, and need no edit here."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval._registry import Registry
from queryeval.errors import InputError
from queryeval.reports._input import ReportInput, ReportWriter

if TYPE_CHECKING:
    from queryeval.cases import Case, CaseInfo
    from queryeval.config import ReportConfig, SuiteConfig
    from queryeval.log import RunLog
    from queryeval.scorers import Scorer

# Built-in reports: kind -> "module:function"; the module is imported on first use.
_BUILTIN: dict[str, str] = {
    "console": "queryeval.reports._writers:console",
    "json": "queryeval.reports._writers:json_summary",
    "excel": "queryeval.reports._writers:excel",
    "html": "queryeval.reports._writers:html",
    "markdown": "queryeval.reports._writers:markdown",
    "junit": "queryeval.reports._writers:junit",
}
REPORTS: Registry[ReportWriter] = Registry(
    "report kind", builtins=_BUILTIN, group="queryeval.reports"
)


def register_report(kind: str) -> Callable[[ReportWriter], ReportWriter]:
    """Decorator: register a report writer under `kind` (what a suite's `reports:` names).
    A writer may carry `options_model`, a function returning the pydantic model of its
    `options`, which `validate` checks before a run."""

    def deco(writer: ReportWriter) -> ReportWriter:
        REPORTS.register(kind, writer)
        return writer

    return deco


def report_kinds() -> list[str]:
    """The report kinds a suite may ask for.

    >>> {"console", "excel", "html", "json", "junit", "markdown"} <= set(report_kinds())
    True
    """
    return sorted(REPORTS.names())


def report_writer(kind: str) -> ReportWriter:
    """The writer registered under `kind` (an UnknownName, a KeyError, if unknown)."""
    return REPORTS.get(kind)


def report_options_model(kind: str) -> Any:
    """The pydantic model of a report kind's `options`, or None when it takes none."""
    model = getattr(report_writer(kind), "options_model", None)
    return model() if callable(model) else None


def _reads_info(kind: str, writer: ReportWriter) -> bool:
    """Whether a report reads only the cases' info from `cases` (the built-in ones, and a
    plugin whose writer carries `case_info_only = True`); any other plugin is given the
    whole cases as `cases`."""
    return kind in _BUILTIN or getattr(writer, "case_info_only", False) is True


def write_reports(
    suite: SuiteConfig,
    log: RunLog,
    cases: Sequence[CaseInfo],
    scorers: Mapping[str, Scorer],
    *,
    load_cases: Callable[[], Sequence[Case]] | None = None,
    extra: Sequence[ReportConfig] = (),
) -> dict[str, Path]:
    """Write every report the suite configures (plus `extra` ones, e.g. from `--junit`) for
    a stored and summarised run (`log`; the HTML and Markdown reports show its comparison
    with a baseline when it has one); returns kind -> path for the files written. `cases`:
    the run's cases, or only their info (a large sharded run), when `load_cases` loads the
    whole ones (once, for the first report that reads them: `ReportInput.whole_cases`; a
    registered plugin's report gets them as `cases` too unless its writer says
    `case_info_only = True`)."""
    written: dict[str, Path] = {}
    if load_cases is not None:
        load_cases = functools.cache(load_cases)
    for rep in [*suite.reports, *extra]:
        try:
            writer = report_writer(rep.kind)
        except KeyError:
            raise InputError(
                f"unknown report kind {rep.kind!r}; expected one of {', '.join(report_kinds())}",
                path=suite.source,
                where="reports",
            ) from None
        assert log.path is not None, "reports are written into the run directory"
        given = cases
        if load_cases is not None and not _reads_info(rep.kind, writer):
            given = load_cases()  # a plugin's report reads `cases` as whole cases, as before
        report = ReportInput(log, given, scorers, rep.options, load_cases)
        path = writer(report, (log.path / rep.path) if rep.path else None)
        if path is not None:
            written[rep.kind] = path
    return written
