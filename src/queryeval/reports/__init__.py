"""Reports: console, JSON, Excel (and more as they are registered in `_WRITERS`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.cases import Case
from queryeval.errors import InputError

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig
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


_WRITERS: dict[str, ReportWriter] = {
    "console": _console,
    "json": _json,
    "excel": _excel,
}


def report_kinds() -> list[str]:
    """The report kinds a suite may ask for."""
    return sorted(_WRITERS)


def write_reports(
    suite: SuiteConfig,
    out: Path,
    cases: Sequence[Case],
    summary: Mapping[str, Any],
    store: RunStore,
    scorers: Mapping[str, Scorer],
) -> dict[str, Path]:
    """Write every report the suite configures; returns kind -> path for the files written."""
    cache: list[list[dict[str, Any]]] = []

    def records() -> list[dict[str, Any]]:
        if not cache:
            cache.append(list(store.records()))
        return cache[0]

    written: dict[str, Path] = {}
    for rep in suite.reports:
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
            records=records,
            scorers=scorers,
            options=rep.options,
        )
        if path is not None:
            written[rep.kind] = path
    return written


__all__ = ["report_kinds", "write_reports"]
