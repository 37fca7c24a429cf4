"""What every report is written from: one typed input."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.cases import Case, CaseInfo
from queryeval.log import Record, RunLog, Summary

if TYPE_CHECKING:
    from queryeval.scorers import Scorer


@dataclass(frozen=True)
class ReportInput:
    """What a report is written from: a stored run (with its summary), what the run holds of
    its cases (`cases`, in case order: id, name, tags, metadata, labels), its scorers, and
    the report's own `options` (None when it takes none). A report declares what it reads by
    what it asks for: the log alone, `cases`, or `whole_cases` (questions and golds), which a
    large sharded run, holding only the cases' info, loads on first use (`load_cases`)."""

    log: RunLog
    cases: Sequence[CaseInfo]
    scorers: Mapping[str, Scorer]
    options: Any = None
    load_cases: Callable[[], Sequence[Case]] | None = None

    @cached_property
    def whole_cases(self) -> Sequence[Case]:
        """The whole cases: `load_cases()` where given, else `cases` (whole ones)."""
        if self.load_cases is not None:
            return self.load_cases()
        whole = [c for c in self.cases if isinstance(c, Case)]
        assert len(whole) == len(self.cases), "a run holding only the cases' info loads them"
        return whole

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


# A report: writes its file (at the configured path, else its own name in the run
# directory) and returns where, or None when it writes none (the console).
ReportWriter = Callable[[ReportInput, Path | None], Path | None]
