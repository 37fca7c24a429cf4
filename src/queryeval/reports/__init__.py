"""Reports: console, JSON, Excel, HTML, Markdown and JUnit, and any registered report; and
the run history page of several runs.

Every report is written from one typed input, a `ReportInput`: the run as stored (a
`queryeval.log.RunLog`: summary, run info, comparison, records read on first use), its
cases and its scorers, and the report's options. Running a suite and writing its reports
are separate steps: `queryeval report RUN_DIR` writes them again from the directory. A new
report is a function `(ReportInput, path) -> Path | None` registered with
`register_report` or the `queryeval.reports` entry-point group (docs/recipes.md).
"""

# ruff: noqa: F401 - names imported here and left out of `__all__` are for queryeval's own
# packages (the private-modules contract has them import through here), not a public interface

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from queryeval.reports._input import ReportInput, ReportWriter
from queryeval.reports._markdown import comparison_markdown, comparison_text
from queryeval.reports._registry import (
    register_report,
    report_kinds,
    report_options_model,
    report_writer,
    write_reports,
)


def write_history(paths: Sequence[str | Path], out: str | Path, **options: Any) -> Path:
    """Write the run history page of the runs in `paths` (see `reports._history`; imported
    on use: it needs jinja2 and the comparison statistics)."""
    from queryeval.reports._history import write_history as write

    return write(paths, out, **options)


def history_context(paths: Sequence[str | Path], **options: Any) -> dict[str, Any]:
    """What the run history page shows, from the runs in `paths`."""
    from queryeval.reports._history import history_context as context

    return context(paths, **options)


def summary_sections(summary: Any, run_info: Any = None) -> dict[str, Any]:
    """What the HTML report shows of a run from its summary alone (see
    `reports._html.summary_sections`; imported on use)."""
    from queryeval.reports._html import summary_sections as sections

    return sections(summary, run_info)


def find_runs(paths: Sequence[str | Path]) -> list[Path]:
    """The run directories among `paths` (run directories or folders of them)."""
    from queryeval.reports._history import find_runs as find

    return find(paths)


# What users call; the package's other names are for queryeval's own packages.
__all__ = [
    "ReportInput",
    "ReportWriter",
    "register_report",
    "report_kinds",
    "write_history",
    "write_reports",
]
