"""One watchdog thread per process for every query's time limit.

A thread started per query cost a few percent of a SQL run (more under load); one thread
that sleeps until the earliest deadline serves them all. After a fork the child starts its
own (the parent's thread and pending deadlines are not the child's).
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from typing import Protocol


class Fires(Protocol):
    """What the watchdog calls when a deadline is due: True to be called again later."""

    def fire(self) -> bool: ...

    @property
    def finished(self) -> bool: ...


class Watchdog:
    """Calls `fire()` of each registered item once its time has come, and again every
    `repeat_s` while it returns True; items that finished meanwhile are dropped unfired.

    >>> import threading
    >>> class Once:
    ...     finished = False
    ...     def __init__(self): self.called = threading.Event()
    ...     def fire(self): self.called.set(); return False
    >>> item = Once(); Watchdog(0.01).add(0.0, item); item.called.wait(2)
    True
    """

    def __init__(self, repeat_s: float) -> None:
        self.repeat_s = repeat_s
        self._pid = -1
        self._starting = threading.Lock()
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Fires]] = []
        self._order = itertools.count()

    def add(self, after_s: float, item: Fires) -> None:
        """Fire `item` in `after_s` seconds (unless it has finished by then)."""
        if self._pid != os.getpid():  # first use, or a forked child: a thread of its own
            with self._starting:
                if self._pid != os.getpid():
                    self._cond = threading.Condition()
                    self._heap = []
                    thread = threading.Thread(
                        target=self._run, name="queryeval-deadlines", daemon=True
                    )
                    thread.start()
                    self._pid = os.getpid()
        with self._cond:
            entry = (time.monotonic() + after_s, next(self._order), item)
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._cond.notify()

    def _run(self) -> None:
        cond, heap = self._cond, self._heap
        with cond:
            while True:
                while heap and heap[0][2].finished:
                    heapq.heappop(heap)
                if not heap:
                    cond.wait()
                    continue
                due, _, item = heap[0]
                wait = due - time.monotonic()
                if wait > 0:
                    cond.wait(wait)
                    continue
                heapq.heappop(heap)
                cond.release()  # an interrupt may take a moment: others may register
                try:
                    again = item.fire()
                finally:
                    cond.acquire()
                if again:
                    entry = (time.monotonic() + self.repeat_s, next(self._order), item)
                    heapq.heappush(heap, entry)
