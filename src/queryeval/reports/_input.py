"""What every report is written from: one typed input."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.cases import Case
from queryeval.log import Record, RunLog, Summary

if TYPE_CHECKING:
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


# A report: writes its file (at the configured path, else its own name in the run
# directory) and returns where, or None when it writes none (the console).
ReportWriter = Callable[[ReportInput, Path | None], Path | None]
