"""Limits on every execution: memory (the engine's own and the process's growth), the
length of the query text, wall time. A query past one ends as `resource_limit` (or
`timeout`) and the engine goes on. Each bomb runs under a small limit, so none of them
really eats memory."""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from queryeval.config import DatabaseConfig
from queryeval.engines import Engine, Limits, build_engine, database_problem

ROOT = Path(__file__).resolve().parents[1]
SALES = ROOT / "examples" / "sql" / "fixtures" / "sales"
LOGS = ROOT / "examples" / "kql" / "fixtures" / "logs"
SMALL = {"timeout_s": 2.0, "memory_limit": "128MiB"}
BOUNDED = ("resource_limit", "timeout")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def engine_for(kind: str, cache: Path, **options: object) -> Engine:
    fixture = LOGS if kind == "kql" else SALES
    config = DatabaseConfig(engine=kind, fixture=str(fixture), options={**SMALL, **options})
    return build_engine("db", config, ROOT, cache)


@pytest.fixture(scope="module", params=["duckdb", "sqlite", "kql"])
def engine(request: pytest.FixtureRequest, cache: Path) -> Iterator[Engine]:
    built = engine_for(request.param, cache)
    yield built
    built.close()


def still_works(engine: Engine) -> None:
    query = "Logs | count" if engine.language == "kql" else "SELECT count(*) FROM customers"
    assert engine.execute(query).outcome.kind == "ok"


BOMBS = {
    "duckdb": [
        "SELECT list(range(1500000000))",  # built outside DuckDB's buffer manager
        "SELECT repeat('x', 900000000)",
        "SELECT * FROM range(200000000) ORDER BY random()",
        "SELECT string_agg(range::VARCHAR, ',') FROM range(100000000)",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
        "SELECT count(*) FROM range(100000) a, range(100000) b WHERE a.range + b.range = 3",
    ],
    "sqlite": [
        "SELECT zeroblob(2000000000)",
        "SELECT randomblob(900000000)",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
        "SELECT group_concat(n) FROM r",
    ],
    "kql": [
        "range x from 1 to 200000000 step 1",
        "range x from 1 to 200000000 step 1 | summarize make_list(x)",
        'print x = strrep("abc", 300000000)',
    ],
}


def resident_mib() -> float:
    status = Path("/proc/self/status").read_text().splitlines()
    return next(int(x.split()[1]) for x in status if x.startswith("VmRSS")) / 1024


def test_memory_bombs_end_as_resource_limits_or_timeouts(engine: Engine) -> None:
    kind = "kql" if engine.language == "kql" else engine.dialect
    before = resident_mib()
    for query in BOMBS[kind]:
        start = time.perf_counter()
        run = engine.execute(query)
        assert run.outcome.kind in BOUNDED, (query, run.outcome)
        # bounded by its own CPU time (2 s; more wall clock on a loaded machine), and by
        # the wall-clock cap whatever the load
        assert time.perf_counter() - start < engine.limits.wall_cap_s + 1, query
        if run.outcome.kind == "timeout":  # the bomb's own cost, measured
            assert run.outcome.cpu_s is not None and run.outcome.cpu_s >= 2.0, run.outcome
        still_works(engine)
    # the process keeps nothing of what the bombs asked for (tens of GB)
    assert resident_mib() - before < 512


def test_a_memory_bomb_is_cut_by_the_memory_limit_not_the_clock(cache: Path) -> None:
    engine = engine_for("duckdb", cache, timeout_s=60)
    try:
        for query in BOMBS["duckdb"][:4]:
            start = time.perf_counter()
            run = engine.execute(query)
            assert run.outcome.kind == "resource_limit", (query, run.outcome)
            assert time.perf_counter() - start < 20, query
    finally:
        engine.close()


def test_the_process_bound_is_lifted_between_queries(engine: Engine) -> None:
    before = resource.getrlimit(resource.RLIMIT_DATA)
    engine.execute("SELECT 1" if engine.language == "sql" else "print 1")
    assert resource.getrlimit(resource.RLIMIT_DATA) == before


@pytest.mark.parametrize("size", [3 * 2**20, 60 * 2**20], ids=["3MB", "60MB"])
def test_a_huge_query_text_is_refused_before_any_parsing(engine: Engine, size: int) -> None:
    """The sandbox's parser would take gigabytes and minutes on it."""
    clause = " OR x = 1" if engine.language == "sql" else " or x == 1"
    head = "SELECT 1 FROM customers WHERE x = 1" if engine.language == "sql" else "Logs | where 1"
    query = head + clause * ((size - len(head)) // len(clause))
    start = time.perf_counter()
    run = engine.execute(query)
    assert run.outcome.kind == "resource_limit" and "max_query_bytes" in run.outcome.message
    assert time.perf_counter() - start < 0.5
    assert engine.validate(query).kind == "resource_limit"


def test_max_query_bytes_is_an_option(cache: Path) -> None:
    engine = engine_for("duckdb", cache, max_query_bytes="1KiB")
    try:
        assert engine.execute("SELECT 1 " + " " * 2000).outcome.kind == "resource_limit"
        assert engine.execute("SELECT 1 " + " " * 900).outcome.kind == "ok"
        assert engine.execute("SELECT 'é' " + "-- ééé" * 200).outcome.kind == "resource_limit"
    finally:
        engine.close()


def test_duckdb_gets_the_memory_limit_threads_and_no_spilling(cache: Path) -> None:
    engine = engine_for("duckdb", cache, threads=1)
    try:
        run = engine.execute(
            "SELECT current_setting('memory_limit'), current_setting('threads'), "
            "current_setting('temp_directory')"
        )
        assert run.result is not None and run.result.rows == (("128.0 MiB", 1, ""),)
    finally:
        engine.close()


def test_defaults_keep_a_small_machine_alive() -> None:
    limits = Limits()
    assert limits.memory_limit == 2**30 and limits.max_query_bytes == 256 * 2**10
    assert Limits.from_options({"memory_limit": "512MB", "threads": 2}).memory_limit == 2**29


@pytest.mark.parametrize(
    ("engine", "options", "words"),
    [
        ("duckdb", {"memory_limit": "lots"}, "expected a size"),
        ("duckdb", {"memory_limit": 0}, "positive"),
        ("sqlite", {"threads": 2}, "not an option of engine 'sqlite'"),
        ("kql", {"max_query_bytes": "1 furlong"}, "expected a size"),
    ],
)
def test_limits_are_checked_before_a_run(engine: str, options: dict, words: str) -> None:
    config = DatabaseConfig(engine=engine, fixture=str(SALES), options=options)
    problem = database_problem(config, ROOT)
    assert problem is not None and words in problem[1], problem


def test_a_process_forked_while_a_query_runs_has_no_bound() -> None:
    import os

    from queryeval.engines._memory import memory_guard

    before = resource.getrlimit(resource.RLIMIT_DATA)
    with memory_guard(2**30):
        assert resource.getrlimit(resource.RLIMIT_DATA) != before
        pid = os.fork()
        if pid == 0:  # the child: exit 0 when its limit is the original one
            os._exit(0 if resource.getrlimit(resource.RLIMIT_DATA) == before else 1)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert resource.getrlimit(resource.RLIMIT_DATA) == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_the_guards_data_segment_is_vmdata_in_the_process_and_a_forked_child() -> None:
    """The guard reads /proc/self/statm (data + main stack) on a kept descriptor, less the
    stack: the figure /proc/self/status gives as VmData, as the process grows, and in a
    forked child (whose statm is its own, not the inherited descriptor's)."""
    import os

    from queryeval.engines._memory import _status_bytes, data_segment_bytes

    def same() -> bool:
        return data_segment_bytes() == _status_bytes(b"VmData:")

    assert same()
    grown = bytearray(64 << 20)
    assert same()
    pid = os.fork()
    if pid == 0:
        more = bytearray(32 << 20)
        os._exit(0 if same() and len(more) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and len(grown)


def test_a_finished_deadline_lets_go_of_what_it_would_interrupt() -> None:
    """The watchdog keeps a deadline until it falls due (30 s by default); the cursor its
    interrupt holds is freed when the query ends (thousands of live closed DuckDB cursors
    slow every new one)."""
    import gc
    import weakref

    from queryeval.engines._base import Deadline

    class Handle:
        def interrupt(self) -> None:
            raise AssertionError("a finished deadline interrupts nothing")

    handle = Handle()
    alive = weakref.ref(handle)
    deadline = Deadline(30.0, handle.interrupt)
    with deadline:
        pass
    del handle
    gc.collect()
    assert alive() is None
    assert deadline.fire() is False  # finished: not called, not repeated
