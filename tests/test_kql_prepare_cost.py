"""Preparing a KQL query for the embedded engine (queryeval's rewrites, which inspect the
columns of the query's prefixes) is the evaluator's work, and bounded: the same prefix is
inspected once, and past the query's time limit of CPU time the query is refused, never
left to run for minutes (a real 29-view `union` took 144 s before)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from queryeval.engines import Limits
from queryeval.engines._kql import KqlEngine

NOW = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
# lets whose same-named column differs in type: `union` asks each input's columns
VIEWS = 12
QUERY = (
    "".join(
        f"let v{i} = T | extend x = {'tolong(n)' if i % 2 else 'tostring(n)'} | project x;\n"
        for i in range(VIEWS)
    )
    + "union "
    + ", ".join(f"v{i}" for i in range(VIEWS))
    + " | count"
)


def _engine(path: Path, timeout_s: float) -> KqlEngine:
    return KqlEngine("t", path, Limits(timeout_s=timeout_s), "t", NOW)


@pytest.fixture()
def database(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "t.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE T AS SELECT range AS n FROM range(3)")
    con.close()
    yield path


def test_a_prefix_is_inspected_once(database: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = _engine(database, 30)
    calls: list[str] = []
    inspect = engine._inspect

    def counted(query: str, functions: tuple[str, ...], around: str) -> object:
        calls.append(query)
        return inspect(query, functions, around)

    monkeypatch.setattr(engine, "_inspect", counted)
    try:
        first = engine.execute(QUERY)
        assert first.ok, first.outcome
        assert len(calls) == len(set(calls)) > 0  # no prefix inspected twice
        again = engine.execute(QUERY)
        assert again.ok and len(calls) == len(set(calls))
        assert first.result is not None and again.result is not None
        assert first.result.rows == again.result.rows == ((3 * VIEWS,),)
    finally:
        engine.close()


def test_preparing_past_the_time_limit_is_refused(database: Path) -> None:
    import time

    from queryeval.engines._kql import _PREPARING
    from queryeval.engines._kql_rewrite import KqlRefused

    engine = _engine(database, 0.05)
    try:
        _PREPARING.since = time.thread_time() - 1.0  # this query's rewriting began 1 s ago
        with pytest.raises(KqlRefused, match=r"past its 0\.05s time limit"):
            engine.columns("T | project n", ())
    finally:
        _PREPARING.since = None
        engine.close()
