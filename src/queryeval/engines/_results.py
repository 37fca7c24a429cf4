"""Executions shared across scorers: each predicted query runs once per (database, query),
and each gold query once ever per (database identity, query), cached on disk (`GoldStore`);
likewise each gold query's ordering is parsed once ever per (language, query)."""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from queryeval.engines._base import Execution
from queryeval.engines._blame import Blame, blame
from queryeval.engines._factory import engine_from_context
from queryeval.engines._gold_store import GoldStore
from queryeval.languages import OrderInfo, plainly_unordered, top_level_order

if TYPE_CHECKING:
    from queryeval.resources import RunResources


class ExecutionMemo:
    """A bounded LRU of executions; concurrent askers of one key wait for one run."""

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._items: OrderedDict[Any, Execution] = OrderedDict()
        self._running: dict[Any, threading.Lock] = {}
        self._lock = threading.Lock()
        self.runs = 0

    def get(self, key: Any, run: Callable[[], Execution]) -> Execution:
        """The execution under `key`, running it at most once while it stays cached."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            gate = self._running.setdefault(key, threading.Lock())
        with gate:
            with self._lock:
                if key in self._items:
                    return self._items[key]
            execution = run()
            with self._lock:
                self.runs += 1
                self._items[key] = execution
                while len(self._items) > self.capacity:
                    self._items.popitem(last=False)
                self._running.pop(key, None)
        return execution


def _memo(ctx: RunResources) -> ExecutionMemo:
    return ctx.resource("engines:executions", ExecutionMemo)


def execute_query(ctx: RunResources, database: str, query: str) -> Execution:
    """Run a predicted query on `database` (once per run, whichever scorers ask)."""
    return _memo(ctx).get(
        ("pred", database, query), lambda: engine_from_context(ctx, database).execute(query)
    )


def run_prediction(ctx: RunResources, database: str, query: str) -> tuple[Execution, Blame]:
    """The predicted query's execution and whose fault it is when it gave no rows (see
    `queryeval.engines.blame`); both once per run per (database, query)."""
    execution = execute_query(ctx, database, query)
    if execution.ok:
        return execution, Blame("none")
    verdicts: dict[Any, Blame] = ctx.resource("engines:blame", dict)
    key = (database, query)
    found = verdicts.get(key)
    if found is None:
        found = verdicts[key] = blame(execution.outcome, engine_from_context(ctx, database), query)
    return execution, found


def gold_store(ctx: RunResources) -> GoldStore:
    """The run's gold cache (one SQLite file in the cache folder)."""
    return ctx.resource("engines:gold-store", lambda: GoldStore(ctx.cache_dir))


def gold_execution(ctx: RunResources, database: str, query: str) -> Execution:
    """Run a gold query once, from the on-disk cache when it ran before. Only successful
    results are cached: a gold timeout or error is reported, and retried next run."""

    def run() -> Execution:
        engine = engine_from_context(ctx, database)
        use_cache = bool(ctx.suite is None or _cache_enabled(ctx, database))
        if not use_cache:
            return engine.execute(query)
        store = gold_store(ctx)
        key = (engine.identity, engine.limits.max_rows, engine.limits.max_bytes, query)
        cached = store.get(key)
        if cached is not None:
            return cached
        execution = engine.execute(query)
        if execution.ok:
            store.put(key, execution)
        return execution

    return _memo(ctx).get(("gold", database, query), run)


ORDER_VERSION = "1"  # bump when `top_level_order` answers differently for some query


@functools.cache
def _order_parser() -> str:
    """What a stored ordering depends on besides the query: this rule, sqlglot's version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{ORDER_VERSION}/sqlglot {version('sqlglot')}"
    except PackageNotFoundError:  # pragma: no cover - sqlglot is a dependency
        return f"{ORDER_VERSION}/sqlglot ?"


class _Orders:
    """A small LRU of gold orderings (the scorers of a case ask in turn)."""

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self.items: OrderedDict[tuple[str, str], OrderInfo | None] = OrderedDict()
        self.lock = threading.Lock()


def gold_order(ctx: RunResources, database: str | None, query: str,
               language: str) -> OrderInfo | None:  # fmt: skip
    """`queryeval.languages.top_level_order(query, language)` of a gold query (an SQL gold
    whose text has no ORDER is not parsed), or None when it cannot be parsed; kept with
    the gold cache (when `database` uses it), so a gold is parsed once ever, not once per
    run."""
    memo = ctx.resource("engines:gold-orders", _Orders)
    key = (language, query)
    if plainly_unordered(query, language):  # microseconds: no memo, no store
        return OrderInfo(False)
    with memo.lock:
        if key in memo.items:
            memo.items.move_to_end(key)
            return memo.items[key]
    use_cache = ctx.suite is None or database is None or _cache_enabled(ctx, database)
    store_key = (language, _order_parser(), query)
    order = gold_store(ctx).get_order(store_key) if use_cache else None
    if order is None:
        try:
            order = top_level_order(query, language)
        except ValueError:  # compare_results parses it again and notes why not
            order = None
        if order is not None and use_cache:
            gold_store(ctx).put_order(store_key, order)
    with memo.lock:
        memo.items[key] = order
        while len(memo.items) > memo.capacity:
            memo.items.popitem(last=False)
    return order


def _cache_enabled(ctx: RunResources, database: str) -> bool:
    assert ctx.suite is not None
    config = ctx.suite.databases.get(database)
    return config is None or bool(config.options.get("gold_cache", True))
