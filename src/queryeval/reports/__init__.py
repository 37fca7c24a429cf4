"""Reports: console, JSON, Excel, HTML, Markdown and JUnit, and any registered report.

Every report is written from one typed input, a `ReportInput`: the run as stored (a
`queryeval.log.RunLog`: summary, run info, comparison, records read on first use), its
cases and its scorers, and the report's options. Running a suite and writing its reports
are separate steps: `queryeval report RUN_DIR` writes them again from the directory. A new
report is a function `(ReportInput, path) -> Path | None` registered with
`register_report` or the `queryeval.reports` entry-point group (docs/recipes.md).
"""

from queryeval.reports._input import ReportInput, ReportWriter
from queryeval.reports._markdown import comparison_markdown, comparison_text
from queryeval.reports._registry import (
    register_report,
    report_kinds,
    report_options_model,
    report_writer,
    write_reports,
)

__all__ = [
    "ReportInput",
    "ReportWriter",
    "comparison_markdown",
    "comparison_text",
    "register_report",
    "report_kinds",
    "report_options_model",
    "report_writer",
    "write_reports",
]
