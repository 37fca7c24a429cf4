"""What a query costs: the CPU time it took, so that a time limit blames a query only for its
own cost, never for a loaded machine.

An execution (`Engine.execute`) runs under a `QueryClock` started in the thread that runs it.
Its deadline (`Deadline`, SQLite's progress handler) first looks at the clock once the
query's limit has passed in wall-clock time, and then every few milliseconds:

- `own`: the query's own CPU time is past the limit: it is interrupted, the system's
  `timeout`. Its own CPU time is the process's (every thread: DuckDB's workers too, less
  the other Python threads of the process: the runner's, a comparison's) while no other
  query of the process ran, else only the running thread's (a lower bound).
- `shared`: the process spent the limit's CPU time while other queries ran too, the
  running thread less: whose it was cannot be told. The query is interrupted and run again
  on a quiet slot (alone in the process), where its own cost is measured.
- `slow`: the wall-clock cap (`Limits.wall_cap_s`) came first, with less CPU time spent
  than the limit: the machine is too slow. The query runs once more on a quiet slot
  (`Engine._attempt`); slow there too, the case is the evaluator's (unscored).
- otherwise it runs on: the wall clock ran past the limit while the CPU did not (a machine
  busy with other processes).

Engines that run queries in a server (ArcadeDB's child process, remote databases) keep the
server's own wall-clock timeout; on a loaded machine (load average past the cores) a query
that timed out there runs once more on a quiet slot before the timeout is final.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

Verdict = Literal["own", "shared", "slow"]
WALL_FACTOR = 10.0  # a query may wait this many times its limit of wall clock (default cap)


def _thread_clock(ident: int) -> int | None:
    try:
        return time.pthread_getcpuclockid(ident)
    except (AttributeError, OSError):  # not on this system
        return None


def _other_threads_s(owner: int) -> dict[int, float]:
    """CPU seconds each Python thread of the process but `owner` has spent so far (threads
    whose clock cannot be read are left out)."""
    spent: dict[int, float] = {}
    for thread in threading.enumerate():
        ident = thread.ident
        if ident is None or ident == owner:
            continue
        clock = _thread_clock(ident)
        if clock is None:
            continue
        try:
            spent[ident] = time.clock_gettime(clock)
        except OSError:  # ended meanwhile
            continue
    return spent


class QueryClock:
    """The CPU time of one query, read from any thread: the running thread's and the
    process's since it started, and whether another query of the process ran meanwhile.
    `single_thread`: the engine runs the query in the calling thread only (SQLite, DuckDB
    with one thread), so the thread's CPU time is the query's exactly.

    >>> clock = QueryClock(single_thread=True)
    >>> clock.verdict(limit_s=60.0, cap_s=600.0) is None  # within its limit: runs on
    True
    """

    def __init__(self, *, single_thread: bool = False) -> None:
        self.single_thread = single_thread
        self.overlapped = False
        self.quiet = False
        self._owner = threading.get_ident()
        self._clock = _thread_clock(self._owner)
        self.seen: tuple[float | None, float, float] = (None, 0.0, 0.0)
        self.start()

    def start(self) -> None:
        """Start the clocks (once the query may run)."""
        self.wall0 = time.monotonic()
        self.thread0 = self._thread_now()
        self.others0 = _other_threads_s(self._owner)
        self._others = dict(self.others0)
        self.process0 = time.process_time()

    def _thread_now(self) -> float | None:
        if self._clock is None:
            return None
        try:
            return time.clock_gettime(self._clock)
        except OSError:  # the thread has ended
            return None

    def thread_s(self) -> float | None:
        """CPU seconds of the running thread since the start (None: not measurable)."""
        now = self._thread_now()
        return None if now is None or self.thread0 is None else now - self.thread0

    def process_s(self) -> float:
        """CPU seconds of the whole process (every thread) since the start, less what the
        process's other Python threads spent meanwhile (never the query's: a query runs in
        the calling thread and the engine's own native workers)."""
        process = time.process_time() - self.process0
        self._others.update(_other_threads_s(self._owner))  # an ended thread: as last seen
        spent = sum(t - self.others0.get(ident, 0.0) for ident, t in self._others.items())
        return max(0.0, process - spent)

    def wall_s(self) -> float:
        return time.monotonic() - self.wall0

    def bounds(self) -> tuple[float | None, float]:
        """(CPU seconds surely the query's, CPU seconds at most the query's), each clock
        read once. Surely: the process's while it ran alone (the thread's when it runs in
        one thread), else the running thread's (None: not measurable). At most: the
        process's (the thread's when it runs in one thread)."""
        thread = self.thread_s()
        if self.single_thread and thread is not None:
            return thread, thread
        process = self.process_s()
        return (thread if self.overlapped else process), process

    def most_s(self) -> float:
        """CPU seconds at most the query's (see `bounds`)."""
        return self.bounds()[1]

    def verdict(self, limit_s: float, cap_s: float) -> Verdict | None:
        """Whether to stop the query now (see the module docstring); None: run on."""
        own, most = self.bounds()
        self.seen = (own, most, self.wall_s())  # what the verdict was decided on
        if own is not None and own >= limit_s:
            return "own"
        if most >= limit_s:
            return "shared"
        if self.seen[2] >= cap_s:
            return "slow"
        return None

    def describe(self, verdict: Verdict | None, limit_s: float) -> tuple[str, float | None]:
        """The message of a query stopped with `verdict`, and the CPU seconds recorded for
        it (below `limit_s` only when the machine, not the query, was slow)."""
        own, most, _wall = self.seen
        # The messages name no measured time: a record is the same on every run and
        # executor (the measured CPU seconds travel in `cpu_s`).
        if verdict == "slow":
            return (
                f"no result within the wall-clock cap, with less than the {limit_s:g}s limit "
                "of CPU time spent: the machine is too slow, not the query",
                most,
            )
        if verdict == "shared":
            why = "while other queries ran (CPU time not attributable)"
            return f"past the {limit_s:g}s limit {why}", None
        if verdict is None or own is None:  # a plain wall-clock deadline
            return f"interrupted after the {limit_s:g}s time limit", None
        return f"the query used more than its {limit_s:g}s of CPU time (its time limit)", own


class _Flights:
    """The queries running in this process: which overlapped, and the quiet slot (a rerun
    waits for every running query to end, and no query starts while it runs)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.cond = threading.Condition()
        self.active: set[QueryClock] = set()
        self.quiet = False
        self.pid = os.getpid()

    def begin(self, clock: QueryClock) -> None:
        if self.pid != os.getpid():  # a forked child: its parent's queries (and the state
            self._reset()  # of their lock) are not the child's
        with self.cond:
            if clock.quiet:
                self.cond.wait_for(lambda: not self.quiet)
                self.quiet = True
                self.cond.wait_for(lambda: not self.active)
            else:
                self.cond.wait_for(lambda: not self.quiet)
            if self.active:
                clock.overlapped = True
                for other in self.active:
                    other.overlapped = True
            self.active.add(clock)
            clock.start()  # the clock starts once the query may run

    def end(self, clock: QueryClock) -> None:
        with self.cond:
            self.active.discard(clock)
            # what this query's thread spent is not the queries still running (read now:
            # the thread may end before their clocks are read again)
            spent = clock._thread_now()
            if spent is not None:
                for other in self.active:
                    if other._owner != clock._owner:
                        other._others[clock._owner] = spent
            if clock.quiet:
                self.quiet = False
            self.cond.notify_all()


_FLIGHTS = _Flights()
_CURRENT = threading.local()


@contextmanager
def query_clock(*, single_thread: bool = False, quiet: bool = False,
                measure: bool = True) -> Iterator[QueryClock]:  # fmt: skip
    """Run a query under a `QueryClock`: the deadlines started in this thread meanwhile read
    it (unless not `measure`: a query a server runs, under its wall-clock limit); `quiet`:
    on a quiet slot, alone in the process."""
    clock = QueryClock(single_thread=single_thread)
    clock.quiet = quiet
    _FLIGHTS.begin(clock)
    outer = getattr(_CURRENT, "clock", None)
    _CURRENT.clock = clock if measure else None
    try:
        yield clock
    finally:
        _CURRENT.clock = outer
        _FLIGHTS.end(clock)


def machine_loaded() -> bool:
    """Whether the machine is busier than its cores (the 1-minute load average), so that a
    wall-clock limit may have caught a query for the machine's slowness."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        return os.getloadavg()[0] >= cores
    except OSError:  # not available here
        return False


def current_clock() -> QueryClock | None:
    """The clock of the query this thread is running, if any."""
    return getattr(_CURRENT, "clock", None)
