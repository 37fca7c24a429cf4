"""Executions shared across scorers: each predicted query runs once per (database, query),
and each gold query once ever per (database identity, query), cached on disk by content."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.cases import ExecutionOutcome
from queryeval.engines._base import Execution
from queryeval.engines._blame import Blame, blame
from queryeval.engines._factory import engine_from_context
from queryeval.engines._values import dumps, loads
from queryeval.metrics import ResultSet

if TYPE_CHECKING:
    from queryeval.resources import RunResources

GOLD_CACHE_VERSION = "1"


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


def gold_cache_path(cache_dir: Path, identity: str, limits: Any, query: str) -> Path:
    """Where the gold result of `query` on the database `identity` is kept."""
    material = json.dumps(
        [GOLD_CACHE_VERSION, identity, limits.max_rows, limits.max_bytes, query]
    ).encode()
    key = hashlib.sha256(material).hexdigest()
    return cache_dir / "gold" / key[:2] / f"{key}.json"


def _store(path: Path, execution: Execution) -> None:
    assert execution.result is not None
    payload = {
        "outcome": execution.outcome.model_dump(mode="json"),
        "columns": list(execution.result.columns),
        "rows": [list(r) for r in execution.result.rows],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    tmp.write_text(dumps(payload), encoding="utf-8")
    os.replace(tmp, path)


def _load(path: Path) -> Execution | None:
    try:
        payload = loads(path.read_text(encoding="utf-8"))
        outcome = ExecutionOutcome.model_validate(payload["outcome"])
        result = ResultSet(payload["columns"], (tuple(r) for r in payload["rows"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # unreadable or from another version: execute again
    return Execution(outcome, result)


def gold_execution(ctx: RunResources, database: str, query: str) -> Execution:
    """Run a gold query once, from the on-disk cache when it ran before. Only successful
    results are cached: a gold timeout or error is reported, and retried next run."""

    def run() -> Execution:
        engine = engine_from_context(ctx, database)
        use_cache = bool(ctx.suite is None or _cache_enabled(ctx, database))
        path = gold_cache_path(ctx.cache_dir, engine.identity, engine.limits, query)
        if use_cache and path.exists():
            cached = _load(path)
            if cached is not None:
                return cached
        execution = engine.execute(query)
        if use_cache and execution.ok:
            _store(path, execution)
        return execution

    return _memo(ctx).get(("gold", database, query), run)


def _cache_enabled(ctx: RunResources, database: str) -> bool:
    assert ctx.suite is not None
    config = ctx.suite.databases.get(database)
    return config is None or bool(config.options.get("gold_cache", True))
