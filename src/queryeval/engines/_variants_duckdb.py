"""Many small DuckDB databases in one in-memory instance: the variants of a database that
verified verdicts run queries on (`queryeval.verify`). A DuckDB file per variant cost
~100 ms of CPU to create, check-point and open; a catalog of a shared in-memory instance
costs ~5 ms.

The instance has no file system or network (`enable_external_access` off: the user's
database cannot even be attached), nothing autoloaded, its configuration locked, DuckDB's
memory limit and no spilling. A query on a catalog goes through the DuckDB engine's
template (`Engine.execute`): refused when parsing finds a write, interrupted at its
deadline, rows within `max_rows` / `max_bytes`, failures classified alike. A catalog is
not read-only to DuckDB (an in-memory catalog cannot be): the parser's refusal is the
guard, and a variant is scratch whatever happens to it.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from typing import Any

from queryeval.engines._base import Engine, Limits, RawResult
from queryeval.engines._duckdb import DuckDBEngine, duckdb_config, run_on_cursor
from queryeval.metrics.results import FAST_MAX_ROWS


class DuckDBScratch:
    """One in-memory DuckDB instance holding scratch catalogs (`create`)."""

    def __init__(self, limits: Limits, *, lock: bool = True) -> None:
        import duckdb

        config = duckdb_config(lock=False, limits=limits)
        del config["access_mode"]  # in memory: written while a variant is built
        config["threads"] = 1
        self.limits = limits
        self._con = duckdb.connect(":memory:", config=config)
        if lock:
            self._con.execute("SET lock_configuration = true")
        else:  # KQL: its translator sets TimeZone = 'UTC' on every query, as its engine does
            self._con.execute("SET TimeZone = 'UTC'")
        self._lock = threading.Lock()
        self._names = itertools.count(1)

    def create(self) -> ScratchCatalog:
        """A new, empty catalog, as an engine (`write` builds it, `execute` queries it)."""
        with self._lock:
            name = f"variant_{next(self._names)}"
            cursor = self._con.cursor()
        try:
            cursor.execute(f"ATTACH ':memory:' AS {name}")
        finally:
            cursor.close()
        return self.catalog(name)

    def catalog(self, name: str) -> ScratchCatalog:
        """The engine on the attached catalog `name` (a subclass queries it otherwise)."""
        return ScratchCatalog(self, name)

    def cursor(self, catalog: str) -> Any:
        """A cursor whose unqualified names are `catalog`'s."""
        with self._lock:  # creating cursors is not thread-safe; using them is
            cursor = self._con.cursor()
        cursor.execute(f"USE {catalog}")
        return cursor

    def close(self) -> None:
        """Close the instance (every catalog with it)."""
        self._con.close()


class ScratchCatalog(DuckDBEngine):
    """One catalog of a `DuckDBScratch`, queried like a DuckDB database file."""

    def __init__(self, scratch: DuckDBScratch, catalog: str) -> None:
        Engine.__init__(self, catalog, scratch.limits, f"scratch:{catalog}")
        self.scratch = scratch
        self.catalog = catalog
        self.path = None  # type: ignore[assignment]  # no file: a catalog in memory
        # one cursor on the catalog, for its statements one at a time (a cursor and its
        # USE cost ~2 ms, as much as a small query)
        self._own = scratch.cursor(catalog)
        self._own_lock = threading.Lock()

    def write(self, statement: str) -> None:
        """Run statements that build the catalog (DDL, INSERT); raises on failure."""
        with self._own_lock:
            self._own.execute(statement)

    def _cursor(self) -> Any:
        return self._own

    def _run(self, query: str) -> RawResult:
        with self._own_lock:
            cursor = self._own
            arrow = query if self.limits.max_rows > FAST_MAX_ROWS else None
            return run_on_cursor(cursor, lambda: cursor.execute(query), self.limits, arrow)

    def close(self) -> None:
        """Drop the catalog (nothing to do once its instance is closed)."""
        with contextlib.suppress(Exception):
            self._own.close()
        with contextlib.suppress(Exception):  # the instance is closed or the catalog gone
            cursor = self.scratch.cursor("memory")
            try:
                cursor.execute(f"DETACH {self.catalog}")
            finally:
                cursor.close()
