"""Which runs are scored item by item in forked workers (`runner._executors.ForkExecutor`):
saved predictions whose scoring runs every prediction on a database file of this machine
(DuckDB, SQLite, duckdb-kql). There the engine's time is most of a run and one process uses
one core; with the engines' own processes there is nothing to share but the files (opened
read-only) and the gold cache (SQLite, written in short transactions).

Not forked: a run of fewer than `FORK_MIN_ITEMS` items (forking and opening the engines
again cost more than they save), more workers than the memory holds at each query's bound
(`_memory_room`), a database behind a URL or a server (each worker would
open its own connections, or start its own server), scorers not marked `Scorer.forks`
(judges, embeddings, third-party scorers), and `settings.workers: 1`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from queryeval.runner._sharded import workers_for

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig
    from queryeval.scorers import Scorer

FORK_MIN_ITEMS = 500
LOCAL_ENGINES = frozenset({"duckdb", "sqlite", "kql"})
_ITEMS_PER_WORKER = 100  # at least, so that a worker's start is a small part of its work


def fork_workers(suite: SuiteConfig, scorers: Iterable[Scorer], items: int) -> int:
    """How many forked workers score this run of `items` saved predictions (0: none, the
    inline loop does).

    >>> from queryeval.config import SuiteConfig
    >>> suite = SuiteConfig(name="s", cases="c.jsonl", systems=[{"name": "a", "predictions": "p"}])
    >>> fork_workers(suite, [], 10_000)  # no database: no query to run
    0
    """
    if items < FORK_MIN_ITEMS or not hasattr(os, "fork"):
        return 0
    workers = min(workers_for(suite), items // _ITEMS_PER_WORKER)
    if workers < 2 or not suite.databases:
        return 0
    if any(db.engine not in LOCAL_ENGINES or db.url for db in suite.databases.values()):
        return 0
    workers = min(workers, _memory_room(suite))
    if workers < 2:
        return 0
    scorers = list(scorers)
    if not all(s.forks and not (s.is_async or s.blocking) for s in scorers):
        return 0
    runs_queries = any(s.reads == "query" and s.judged_by_execution for s in scorers)
    return workers if runs_queries else 0


def _memory_room(suite: SuiteConfig) -> int:
    """How many workers the machine's memory holds if each ran its hungriest query at
    once: physical memory over the largest process budget (2 x `memory_limit`) of the
    suite's databases (a query's bound holds per worker)."""
    from queryeval.engines import Limits

    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        return 1 << 30
    budget = max(Limits.from_options(db.options).process_budget for db in suite.databases.values())
    return max(1, memory // max(1, budget))
