"""What the KQL engine tests share: a query's columns and rows, asserted to have run."""

from __future__ import annotations

from typing import Any

from queryeval.engines import Engine


def rows(engine: Engine, query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The columns and rows of `query` on `engine` (which must run it)."""
    run = engine.execute(query)
    assert run.ok, f"{run.outcome.kind}: {run.outcome.message}"
    assert run.result is not None
    return list(run.result.columns), [tuple(r) for r in run.result.rows]
