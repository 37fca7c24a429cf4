"""What the KQL engine tests share: an engine on a small DuckDB file, and a query's columns and
rows, asserted to have run."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from queryeval.engines import Engine, Limits


@contextmanager
def kql_engine(
    path: Path,
    *statements: str,
    name: str = "t",
    timeout_s: float = 30,
    now: dt.datetime = dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
) -> Iterator[Any]:
    """The embedded KQL engine on a DuckDB file at `path` made by `statements` (closed on exit)."""
    import duckdb

    from queryeval.engines._kql import KqlEngine

    con = duckdb.connect(str(path))
    for statement in statements:
        con.execute(statement)
    con.close()
    engine = KqlEngine(name, path, Limits(timeout_s=timeout_s), name, now)
    try:
        yield engine
    finally:
        engine.close()


def rows(engine: Engine, query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The columns and rows of `query` on `engine` (which must run it)."""
    run = engine.execute(query)
    assert run.ok, f"{run.outcome.kind}: {run.outcome.message}"
    assert run.result is not None
    return list(run.result.columns), [tuple(r) for r in run.result.rows]
