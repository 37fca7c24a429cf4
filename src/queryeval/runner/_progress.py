"""Progress: a rich bar on a terminal, plain log lines otherwise (CI logs stay readable)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def progress(total: int, label: str, enabled: bool = True) -> Iterator[Callable[[int], None]]:
    """`advance(n)`, counting finished work items: a bar on a terminal, else a line every
    10 % (a small run: at the first item and at the end) and at least every 10 s."""
    if not enabled or total <= 0:
        yield lambda n: None
        return
    if sys.stderr.isatty():
        from rich import progress as rich

        with rich.Progress(
            "[progress.description]{task.description}", rich.BarColumn(),
            rich.MofNCompleteColumn(), rich.TimeElapsedColumn(), rich.TimeRemainingColumn(),
        ) as bar:  # fmt: skip
            task = bar.add_task(label, total=total)
            yield lambda n: bar.advance(task, n)
        return
    steps = total >= 200  # small runs: no line every 10 %
    done, last = 0, (0.0, -1)  # the last line's time and percent

    def advance(n: int, force: bool = False) -> None:
        nonlocal done, last
        done += n
        pct, now = int(100 * done / total), time.monotonic()
        if force or (steps and pct // 10 > last[1] // 10) or now - last[0] > 10:
            last = now, pct
            print(f"[queryeval] {label}: {done}/{total} ({pct}%)", file=sys.stderr)

    if steps:
        advance(0, force=True)
    try:
        yield advance
    finally:
        advance(0, force=True)
