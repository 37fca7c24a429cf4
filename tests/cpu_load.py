"""A synthetic CPU load for tests: processes that burn CPU for a bounded time, always
stopped when the block exits."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

_BURN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@contextmanager
def cpu_load(processes: int | None = None, seconds: float = 60.0) -> Iterator[int]:
    """Run `processes` busy loops (default 2 per core) for at most `seconds`, killed when
    the block exits; yields how many run."""
    count = processes if processes is not None else 2 * cores()
    burners: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            burners.append(subprocess.Popen([sys.executable, "-c", _BURN.format(seconds=seconds)]))
        time.sleep(0.3)  # the burners are running
        yield count
    finally:
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait(10)
