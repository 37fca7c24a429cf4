"""The request `queryeval import FORMAT` passes to a format's `build` (a stand-in with the
same fields, so the importers' `build` is tested without the command)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Request:
    """Sources, output folder, `(system, path)` predictions, `--set` options, suite name."""

    sources: list[Path]
    out: Path
    predictions: list[tuple[str, Path]] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    name: str | None = None
