"""What every exporter reads of a run directory, and the missing-extra message."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.log import RunLog, read_log

# the reports a run directory may hold, logged as artifacts
REPORT_FILES = (
    "report.html",
    "report.xlsx",
    "report.md",
    "junit.xml",
    "summary.json",
    "run.json",
    "comparison.json",
)


def read_run(run_dir: str | Path) -> RunLog:
    """The run's records (with a human review's overrides), summary and run.json;
    InputError without a summary (the run is not finished: nothing to export yet)."""
    run = read_log(run_dir)
    if run.summary is None:
        raise InputError("the run has no summary.json (unfinished?)", path=Path(run_dir))
    return run


def missing_extra(package: str, extra: str) -> InputError:
    """The error for an exporter whose library is not installed."""
    return InputError(
        f"{package} is not installed; install it with: pip install 'queryeval[{extra}]'"
    )


def system_params(info: Mapping[str, Any] | None, system: str) -> dict[str, Any]:
    """The system's configuration as run.json records it (name excluded), or {}."""
    for entry in (info or {}).get("systems") or []:
        if isinstance(entry, Mapping) and entry.get("name") == system:
            return {k: v for k, v in entry.items() if k != "name"}
    return {}
