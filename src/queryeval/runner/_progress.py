"""Progress: a rich bar on a terminal, plain log lines otherwise (CI logs stay readable)."""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    """Counts finished work items and shows them: a line every 10 % (a small run: at the
    end) and at least every 10 s, or a bar on a terminal."""

    def __init__(self, total: int, label: str, enabled: bool = True) -> None:
        self.total, self.done, self.label = total, 0, label
        self.enabled = enabled and total > 0
        self.quiet_steps = total < 200  # small runs: one line at the end, not ten
        self._rich: Any = None
        self._task: Any = None
        self._last_log, self._last_pct = 0.0, -1

    def __enter__(self) -> Progress:
        if self.enabled and sys.stderr.isatty():
            from rich import progress as rich

            self._rich = rich.Progress(
                "[progress.description]{task.description}", rich.BarColumn(),
                rich.MofNCompleteColumn(), rich.TimeElapsedColumn(), rich.TimeRemainingColumn(),
            )  # fmt: skip
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
