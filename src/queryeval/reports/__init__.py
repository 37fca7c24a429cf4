"""Reports: console, JSON, Excel, HTML, Markdown and JUnit (registered in `_WRITERS`).

Every writer takes keywords: summary, out, path, cases, records (a function returning the
stored records), scorers, options, comparison (the comparison with a baseline, or None).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.cases import Case
from queryeval.errors import InputError
from queryeval.reports._markdown import comparison_markdown, comparison_text

if TYPE_CHECKING:
    from queryeval.config import ReportConfig, SuiteConfig
    from queryeval.runner import RunStore
    from queryeval.scorers import Scorer

ReportWriter = Callable[..., Path | None]


def _console(**kw: Any) -> Path | None:
    from queryeval.reports._console import print_summary

    print_summary(kw["summary"])
    return None


def _json(**kw: Any) -> Path | None:
    return Path(kw["out"]) / "summary.json"


def _excel(**kw: Any) -> Path | None:
    from queryeval.reports._excel import write_excel

    path = kw["path"] or Path(kw["out"]) / "report.xlsx"
    return write_excel(path, kw["summary"], kw["cases"], kw["records"](), kw["scorers"])


def _run_info(out: Path) -> dict[str, Any] | None:
    import orjson

    path = Path(out) / "run.json"
    if not path.exists():
        return None
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _html(**kw: Any) -> Path | None:
    from queryeval.reports._html import write_html

    path = kw["path"] or Path(kw["out"]) / "report.html"
    return write_html(
        path,
        kw["summary"],
        kw["cases"],
        kw["records"](),
        kw["scorers"],
        options=kw.get("options"),
        run_info=_run_info(kw["out"]),
        comparison=kw.get("comparison"),
    )


def _markdown(**kw: Any) -> Path | None:
    from queryeval.reports._markdown import write_markdown

    path = kw["path"] or Path(kw["out"]) / "report.md"
    return write_markdown(path, kw["summary"], kw.get("comparison"))


def _junit(**kw: Any) -> Path | None:
    from queryeval.reports._junit import write_junit

    path = kw["path"] or Path(kw["out"]) / "junit.xml"
    return write_junit(path, kw["summary"], kw["cases"], kw["records"](), kw["scorers"])


_WRITERS: dict[str, ReportWriter] = {
    "console": _console,
    "json": _json,
    "excel": _excel,
    "html": _html,
    "markdown": _markdown,
    "junit": _junit,
}


def write_history(paths: Sequence[str | Path], out: str | Path, **options: Any) -> Path:
    """Write the run history page of the runs in `paths` (see `reports._history`; imported
    on use: it needs jinja2 and the comparison statistics)."""
    from queryeval.reports._history import write_history as write

    return write(paths, out, **options)


def history_context(paths: Sequence[str | Path], **options: Any) -> dict[str, Any]:
    """What the run history page shows, from the runs in `paths`."""
    from queryeval.reports._history import history_context as context

    return context(paths, **options)


def find_runs(paths: Sequence[str | Path]) -> list[Path]:
    """The run directories among `paths` (run directories or folders of them)."""
    from queryeval.reports._history import find_runs as find

    return find(paths)


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
    out: Path,
    cases: Sequence[Case],
    summary: Mapping[str, Any],
    store: RunStore,
    scorers: Mapping[str, Scorer],
    *,
    extra: Sequence[ReportConfig] = (),
    comparison: Mapping[str, Any] | None = None,
    records: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Path]:
    """Write every report the suite configures (plus `extra` ones, e.g. from `--junit`);
    returns kind -> path for the files written. `comparison` is the comparison with a
    baseline run (the HTML and Markdown reports show it); `records`, when given, are shown
    instead of the store's (a human review's overrides applied)."""
    cache: list[list[dict[str, Any]]] = [list(records)] if records is not None else []

    def stored() -> list[dict[str, Any]]:
        if not cache:
            cache.append(list(store.records()))
        return cache[0]

    written: dict[str, Path] = {}
    for rep in [*suite.reports, *extra]:
        writer = _WRITERS.get(rep.kind)
        if writer is None:
            raise InputError(
                f"unknown report kind {rep.kind!r}; expected one of {', '.join(report_kinds())}",
                path=suite.source,
                where="reports",
            )
        path = writer(
            summary=summary,
            out=out,
            path=(out / rep.path) if rep.path else None,
            cases=cases,
            records=stored,
            scorers=scorers,
            options=rep.options,
            comparison=comparison,
        )
        if path is not None:
            written[rep.kind] = path
    return written


__all__ = [
    "comparison_markdown",
    "comparison_text",
    "find_runs",
    "history_context",
    "report_kinds",
    "report_options_model",
    "write_history",
    "write_reports",
]
