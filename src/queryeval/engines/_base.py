"""The engine interface: run one untrusted query read-only, bounded in time and size.

Every engine follows the same template (`Engine.execute`): refuse writes found by parsing,
run on a read-only connection under a deadline that really interrupts, fetch at most
`max_rows` rows / `max_bytes` bytes, and classify any failure into an outcome kind.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from queryeval.cases import ExecutionOutcome, OutcomeKind
from queryeval.engines._cost import (
    WALL_FACTOR,
    QueryClock,
    Verdict,
    current_clock,
    machine_loaded,
    query_clock,
)
from queryeval.engines._memory import memory_guard
from queryeval.engines._watchdog import Watchdog
from queryeval.metrics import ResultSet

_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
MEMORY_LIMIT = 2**30  # 1 GiB a query: a 2-core, 24 GB machine stays alive
MAX_QUERY_BYTES = 256 * 2**10


def parse_size(value: int | float | str) -> int:
    """Bytes from a number or a size: `1g`, `512MB`, `1GiB`, `64 KiB` (1024-based).

    >>> parse_size("1GiB"), parse_size("512m"), parse_size(4096)
    (1073741824, 536870912, 4096)
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    found = _SIZE.match(str(value))
    if found is None:
        raise ValueError(f"expected a size such as 1GiB, 512MB or a number of bytes, not {value!r}")
    return int(float(found.group(1)) * _UNITS[found.group(2).lower()])


@dataclass(frozen=True)
class Limits:
    """Bounds on one execution: seconds of the query's own CPU time (`timeout_s`; see
    `queryeval.engines._cost`: a loaded machine is not the query's fault) and of wall
    clock at most (`max_wall_s`, None: `WALL_FACTOR` x `timeout_s`), rows kept,
    approximate bytes kept, the memory a query may take (the engine's own limit and the
    process's growth while it runs), the length of the query text, and DuckDB's threads
    (None: its default)."""

    timeout_s: float = 30.0
    max_wall_s: float | None = None
    max_rows: int = 10_000
    max_bytes: int = 64 * 2**20
    memory_limit: int = MEMORY_LIMIT
    max_query_bytes: int = MAX_QUERY_BYTES
    threads: int | None = None

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> Limits:
        """Limits from a database's `options` (timeout_s, max_rows, max_bytes,
        memory_limit, max_query_bytes, threads)."""
        base = cls()
        threads = options.get("threads")
        wall = options.get("max_wall_s")
        return cls(
            timeout_s=float(options.get("timeout_s", base.timeout_s)),
            max_wall_s=None if wall is None else float(wall),
            max_rows=int(options.get("max_rows", base.max_rows)),
            max_bytes=int(options.get("max_bytes", base.max_bytes)),
            memory_limit=parse_size(options.get("memory_limit", base.memory_limit)),
            max_query_bytes=parse_size(options.get("max_query_bytes", base.max_query_bytes)),
            threads=None if threads is None else int(threads),
        )

    @property
    def wall_cap_s(self) -> float:
        """The most wall-clock seconds a query may take, whatever its CPU time.

        >>> Limits(timeout_s=2).wall_cap_s, Limits(timeout_s=2, max_wall_s=5.0).wall_cap_s
        (20.0, 5.0)
        """
        if self.max_wall_s is not None:
            return max(self.max_wall_s, self.timeout_s)
        return WALL_FACTOR * self.timeout_s

    @property
    def process_budget(self) -> int:
        """How much the process may grow while one query runs: twice `memory_limit` (the
        engine's tracked memory, and what it allocates past its own accounting)."""
        return 2 * self.memory_limit


@dataclass(frozen=True)
class Execution:
    """What executing one query gave: the outcome record and, when it ran, the rows."""

    outcome: ExecutionOutcome
    result: ResultSet | None = None

    @property
    def ok(self) -> bool:
        """True when the query ran (possibly truncated)."""
        return self.outcome.kind == "ok"


class QueryTimeout(Exception):
    """Raised inside an engine when its deadline interrupted the query: `verdict` says why
    (see `queryeval.engines._cost`; None: a plain wall-clock deadline), `cpu_s` the CPU
    seconds recorded for it."""

    def __init__(self, message: str, *, verdict: Verdict | None = None,
                 cpu_s: float | None = None) -> None:  # fmt: skip
        super().__init__(message)
        self.verdict = verdict
        self.cpu_s = cpu_s

    @classmethod
    def stopped(cls, clock: QueryClock | None, verdict: Verdict | None, limit_s: float
                ) -> QueryTimeout:  # fmt: skip
        """The timeout of a query stopped with `verdict` by its deadline on `clock`."""
        if clock is None:
            return cls(f"interrupted after the {limit_s:g}s time limit")
        message, cpu_s = clock.describe(verdict, limit_s)
        return cls(message, verdict=verdict, cpu_s=cpu_s)


class Refused(Exception):
    """Raised when the sandbox refuses a statement (a write, or not a query)."""


@dataclass
class RawResult:
    """Columns and (capped) rows as an engine fetched them; or, for a result an engine
    fetched as Arrow (`table`, a `pyarrow.Table`), no rows."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False
    notes: list[str] = field(default_factory=list)
    table: Any = None


class Deadline:
    """Call `interrupt` once `seconds` have passed, until the block exits; within an
    execution (`query_clock`), only once the query's own CPU time is past `seconds` or the
    wall clock past `cap_s` (see `queryeval.engines._cost`; `verdict` says which).

    Repeats the interrupt (every 20 ms) after it fired, because an interrupt that lands
    while the engine is still planning is lost and the query would then run unbounded.
    Served by the process's one watchdog thread (`_watchdog`), not a thread per query. The
    watchdog keeps the deadline until it falls due; `interrupt` (and what it holds: a
    cursor) is let go when the block exits. Kept, thousands of closed DuckDB cursors made
    each new one slower (114 -> 293 us a query with 6,000 alive).
    """

    _REPEAT_S = 0.02

    def __init__(self, seconds: float, interrupt: Callable[[], Any],
                 cap_s: float | None = None) -> None:  # fmt: skip
        self.seconds = seconds
        self.cap_s = cap_s if cap_s is not None else WALL_FACTOR * seconds
        self._interrupt = interrupt
        self._guard = threading.Lock()
        self.finished = False
        self.fired = False
        self.clock = current_clock()
        self.verdict: Verdict | None = None

    def __enter__(self) -> Deadline:
        _WATCHDOG.add(self.seconds, self)
        return self

    def fire(self) -> bool:
        """The watchdog's call: interrupt unless the block has exited; True to be called
        again (the interrupt is retried until the block exits)."""
        with self._guard:
            if self.finished:
                return False
            if not self.fired and self.clock is not None:
                verdict = self.clock.verdict(self.seconds, self.cap_s)
                if verdict is None:  # the wall clock, not the query: look again later
                    return True
                self.verdict = verdict
            self.fired = True
            with contextlib.suppress(Exception):  # best effort; it is retried
                self._interrupt()
        return True

    def timeout(self) -> QueryTimeout:
        """The QueryTimeout to raise once the deadline has interrupted the query."""
        return QueryTimeout.stopped(self.clock, self.verdict, self.seconds)

    def __exit__(self, *exc: object) -> None:
        with self._guard:
            self.finished = True
            self._interrupt = _never_called  # `fire` no longer calls it


def _never_called() -> None:
    """What a finished deadline holds instead of its interrupt."""


_WATCHDOG = Watchdog(Deadline._REPEAT_S)


def cell_bytes(value: Any) -> int:
    """A cheap estimate of a value's size, for the result-size cap."""
    if value is None or isinstance(value, bool | int | float):
        return 8
    if isinstance(value, str | bytes | bytearray):
        return len(value) + 1
    return len(repr(value))


def row_bytes(row: Sequence[Any]) -> int:
    """`cell_bytes` summed over a row (the common types settled inline, same values).

    >>> row_bytes((1, "ab", None, 2.5, b"x", [1]))
    32
    """
    total = 0
    for value in row:
        kind = type(value)
        if kind is str:
            total += len(value) + 1
        elif kind is int or kind is float or value is None or kind is bool:
            total += 8
        else:
            total += cell_bytes(value)
    return total


def collect_rows(
    batches: Iterable[Sequence[Sequence[Any]]],
    limits: Limits,
    convert: Callable[[Any], Any] | None = None,
) -> tuple[list[tuple[Any, ...]], bool]:
    """Rows from successive batches until the row or byte cap; (rows, truncated)."""
    rows: list[tuple[Any, ...]] = []
    size = 0
    for batch in batches:
        for raw in batch:
            if len(rows) >= limits.max_rows:
                return rows, True
            if convert:
                row = tuple(convert(v) for v in raw)
            else:
                row = raw if type(raw) is tuple else tuple(raw)
            size += row_bytes(row)
            if size > limits.max_bytes:
                return rows, True
            rows.append(row)
    return rows, False


def fetch_batches(
    fetchmany: Callable[[int], Sequence[Any]], size: int, *, short_is_last: bool = False
) -> Iterable[Sequence[Any]]:
    """Batches from a DB-API cursor's `fetchmany` until it returns nothing, or, with
    `short_is_last` (a driver whose `fetchmany(n)` returns fewer than n rows only at the
    end, as DuckDB's), until a batch is short: a small result then costs one call."""
    while True:
        batch = fetchmany(size)
        if batch:
            yield batch
        if not batch or (short_is_last and len(batch) < size):
            return


_TOO_DEEP = "the query is nested too deeply to be parsed (a resource limit)"
_NO_MEMORY = "the query took more memory than its limit (memory_limit)"


def _outcome(kind: OutcomeKind, message: str, elapsed: float, **extra: Any) -> ExecutionOutcome:
    return ExecutionOutcome(kind=kind, message=message[:2000], elapsed_s=round(elapsed, 6), **extra)


def describe_refusal(reason: Any) -> str:
    """The message of a refused outcome."""
    return f"refused by the read-only sandbox: {reason}"


class Engine(ABC):
    """One database reached through one engine. Subclasses implement `_run`, `classify`,
    `refusal`, `schema`; `execute` is the sandboxed template shared by all.

    Outcome kinds (`classify`): `syntax`, `schema`, `runtime`, `timeout`, `resource_limit`
    and `refused` are the query's fault; `unsupported` (a construct the engine lacks) and
    `engine_error` (the engine broke) are the engine's. `emulated_kinds` are kinds an engine
    reports without being the authority on them (an emulator's parser): the independent
    validity check is consulted for those too (see `queryeval.engines.blame`)."""

    language: ClassVar[str] = "sql"
    emulated_kinds: ClassVar[frozenset[str]] = frozenset()
    # whether queries run inside this process (bounded by `memory_guard` while they run);
    # an engine whose queries run in a server (its own child process, or remote) says False
    in_process: ClassVar[bool] = True
    # whether a query's CPU time is spent in this process's threads (an embedded engine): its
    # time limit is then on that CPU time (`queryeval.engines._cost`), else on the wall clock
    cpu_in_process: ClassVar[bool] = False

    @property
    def single_threaded(self) -> bool:
        """Whether a query runs in the calling thread only (its CPU time is then that
        thread's exactly; see `queryeval.engines._cost`)."""
        return False

    def __init__(self, name: str, limits: Limits, identity: str) -> None:
        self.name = name
        self.limits = limits
        # What the gold cache keys on: changes whenever the data may have changed.
        self.identity = identity
        self._schema: dict[str, Any] | None = None
        self._schema_lock = threading.Lock()

    def cached_schema(self) -> dict[str, Any]:
        """`schema()`, asked once per engine (validity checks and classifiers reuse it)."""
        with self._schema_lock:
            if self._schema is None:
                self._schema = self.schema()
            return self._schema

    @property
    def dialect(self) -> str:
        """The query dialect (sqlglot dialect for SQL engines, else the language)."""
        return self.language

    # -- the template ----------------------------------------------------------------------

    def execute(self, query: str) -> Execution:
        """Run `query` read-only within the limits; never raises for a bad query."""
        too_long = self.too_long(query)
        if too_long is not None:
            return Execution(_outcome("resource_limit", too_long, 0.0))
        if not self.in_process:
            return self._execute(query)
        with memory_guard(self.limits.process_budget):
            return self._execute(query)

    def too_long(self, query: str) -> str | None:
        """Why the query text is past `max_query_bytes` (it is not even parsed), or None."""
        cap = self.limits.max_query_bytes
        if len(query) * 4 <= cap:  # cannot be past the cap, whatever its characters
            return None
        size = len(query.encode("utf-8", "surrogatepass"))
        if size <= cap:
            return None
        return f"the query is {size:,} bytes long, more than max_query_bytes ({cap:,})"

    def _execute(self, query: str) -> Execution:
        try:
            refusal = self.refusal(query)
        except RecursionError:  # the sandbox's parser cannot read it: it does not run
            return Execution(_outcome("resource_limit", _TOO_DEEP, 0.0))
        except MemoryError:
            return Execution(_outcome("resource_limit", _NO_MEMORY, 0.0))
        if refusal is not None:
            return Execution(_outcome("refused", refusal, 0.0))
        execution = self._attempt(query)
        if execution.outcome.kind == "timeout" and not self.cpu_in_process and machine_loaded():
            # a server's wall-clock limit on a loaded machine: once more, on a quiet slot,
            # before the timeout is final
            again = self._attempt(query, quiet=True)
            if again.outcome.kind == "timeout":
                note = " (and again on a quiet slot: the machine was loaded)"
                return Execution(again.outcome.model_copy(
                    update={"message": again.outcome.message + note}))  # fmt: skip
            return again
        return execution

    def _attempt(self, query: str, *, quiet: bool = False) -> Execution:
        """Run `query` under its clock; a query stopped when its cost could not be told
        from other queries' runs again on a quiet slot (`quiet`: alone in the process)."""
        start = time.perf_counter()
        try:
            with self._clock(quiet):
                raw = self._run(query)
        except QueryTimeout as exc:
            # `shared`: whose CPU time it was cannot be told; `slow`: the wall-clock cap came
            # before the limit's CPU time (a loaded machine). Either is settled on a quiet
            # slot, alone in the process, before the verdict is final.
            if exc.verdict in ("shared", "slow") and not quiet:
                return self._attempt(query, quiet=True)
            elapsed = time.perf_counter() - start
            message = str(exc) or f"query exceeded the {self.limits.timeout_s:g}s time limit"
            if exc.verdict == "slow":
                message += " (and again on a quiet slot)"
            return Execution(_outcome("timeout", message, elapsed, cpu_s=exc.cpu_s))
        except Refused as exc:
            return Execution(_outcome("refused", str(exc), time.perf_counter() - start))
        except RecursionError:  # a query nested past the interpreter's stack
            elapsed = time.perf_counter() - start
            return Execution(_outcome("resource_limit", _TOO_DEEP, elapsed))
        except MemoryError:  # the process's bound while the query runs (`memory_guard`)
            elapsed = time.perf_counter() - start
            return Execution(_outcome("resource_limit", _NO_MEMORY, elapsed))
        except Exception as exc:  # every engine failure is an outcome, never a crash
            elapsed = time.perf_counter() - start
            kind, message = self.outcome_of(exc, query)
            return Execution(_outcome(kind, message, elapsed))
        elapsed = time.perf_counter() - start
        if raw.table is not None:
            result = ResultSet.from_arrow(raw.table)
        else:
            result = ResultSet(raw.columns, raw.rows)
        count = result.num_rows
        message = "; ".join(raw.notes)
        if raw.truncated:
            message = "; ".join([*raw.notes, f"truncated at {count} rows (max_rows/max_bytes)"])
        outcome = _outcome("ok", message, elapsed, row_count=count, truncated=raw.truncated)
        return Execution(outcome, result)

    def _clock(self, quiet: bool) -> contextlib.AbstractContextManager[object]:
        """The query's clock: its deadlines read its CPU time when the engine runs it in
        this process (else the wall clock), and a quiet slot waits for it."""
        return query_clock(single_thread=self.single_threaded, quiet=quiet,
                           measure=self.cpu_in_process)  # fmt: skip

    def validate(self, query: str) -> ExecutionOutcome:
        """Check without running: refused, syntax or schema problems, else ok."""
        too_long = self.too_long(query)
        if too_long is not None:
            return _outcome("resource_limit", too_long, 0.0)
        refusal = self.refusal(query)
        if refusal is not None:
            return _outcome("refused", refusal, 0.0)
        start = time.perf_counter()
        try:
            with self._clock(False):
                self.explain(query)
        except QueryTimeout as exc:
            return _outcome("timeout", str(exc), time.perf_counter() - start, cpu_s=exc.cpu_s)
        except Exception as exc:
            kind, message = self.outcome_of(exc, query)
            return _outcome(kind, message, time.perf_counter() - start)
        return _outcome("ok", "", time.perf_counter() - start)

    # -- what each engine provides ---------------------------------------------------------

    @abstractmethod
    def refusal(self, query: str) -> str | None:
        """Why the sandbox refuses `query` (found by parsing), or None to let it run."""

    @abstractmethod
    def _run(self, query: str) -> RawResult:
        """Execute on the read-only connection under `self.limits`; raise on failure."""

    @abstractmethod
    def classify(self, exc: BaseException) -> tuple[OutcomeKind, str]:
        """The outcome kind and message of an engine exception."""

    def outcome_of(self, exc: BaseException, query: str) -> tuple[OutcomeKind, str]:
        """The outcome of `query` failing with `exc` (default: `classify`; an engine that
        translates the query can tell its own translation's faults from the query's)."""
        return self.classify(exc)

    @abstractmethod
    def explain(self, query: str) -> str:
        """The engine's plan (or translation) of `query`, without running it."""

    @abstractmethod
    def schema(self) -> dict[str, Any]:
        """Tables/labels and their columns/properties, for prompts and validators."""

    def close(self) -> None:  # noqa: B027 - optional for engines holding nothing
        """Release connections, servers and processes."""

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
