"""Progress: a rich bar on a terminal, plain log lines otherwise (CI logs stay readable)."""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    """Counts finished work items and shows it."""

    def __init__(self, total: int, label: str, enabled: bool = True) -> None:
        self.total = total
        self.done = 0
        self.label = label
        self.enabled = enabled and total > 0
        self.quiet_steps = total < 200  # small runs: one line at the end, not ten
        self._rich: Any = None
        self._task: Any = None
        self._last_log = 0.0
        self._last_pct = -1

    def __enter__(self) -> Progress:
        if self.enabled and sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            self._rich = RichProgress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                transient=False,
            )
            self._rich.__enter__()
            self._task = self._rich.add_task(self.label, total=self.total)
        elif self.enabled and not self.quiet_steps:
            self._log(force=True)
        return self

    def advance(self, n: int = 1) -> None:
        """Count `n` finished items."""
        self.done += n
        if not self.enabled:
            return
        if self._rich is not None:
            self._rich.advance(self._task, n)
        else:
            self._log()

    def _log(self, force: bool = False) -> None:
        pct = int(100 * self.done / self.total) if self.total else 100
        now = time.monotonic()
        step = not self.quiet_steps and pct // 10 > self._last_pct // 10
        if force or step or now - self._last_log > 10:
            self._last_pct, self._last_log = pct, now
            print(f"[queryeval] {self.label}: {self.done}/{self.total} ({pct}%)", file=sys.stderr)

    def __exit__(self, *exc: object) -> None:
        if self._rich is not None:
            self._rich.__exit__(*exc)
        elif self.enabled:
            self._log(force=True)
