"""A slow or loaded machine changes no verdict: under a synthetic CPU load (two busy
processes per core, killed when each test ends), cheap golds and predictions give the same
verdicts as on an idle machine, and a runaway query is still the system's `timeout`, blamed
for its own CPU time. The limit is small (0.3 s) so that the load, not the query, would
push a cheap query past it on the wall clock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cpu_load import cpu_load
from queryeval.config import DatabaseConfig
from queryeval.engines import Engine, KqlSchema, KqlValidator, blame, build_engine, shared_validator

ROOT = Path(__file__).resolve().parents[1]
SALES = ROOT / "examples" / "sql" / "fixtures" / "sales"
LOGS = ROOT / "examples" / "kql" / "fixtures" / "logs"
LIMIT_S = 0.3
# the wall-clock cap far away: on this test's load, a runaway is stopped by its CPU time
OPTIONS = {"timeout_s": LIMIT_S, "max_wall_s": 60.0}

CHEAP = {  # each about 0.02-0.15 s of CPU time on an idle machine
    "duckdb": [
        "SELECT sum(i * i % 7) FROM range(10000000) t(i)",
        "SELECT count(*) FROM order_items a, order_items b WHERE a.quantity < b.quantity",
        "SELECT customer_id, count(*) AS n FROM orders GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5",
    ],
    "sqlite": [
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 150000) "
        "SELECT sum(x % 7) FROM c",
        "SELECT count(*) FROM order_items a, order_items b WHERE a.quantity < b.quantity",
        "SELECT customer_id, count(*) AS n FROM orders GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5",
    ],
    "kql": [
        "range i from 1 to 200000 step 1 | summarize s = sum(i * i % 7)",
        "Logs | summarize n = count() by Service | order by n desc, Service asc",
        "Logs | where Level == 'Error' | take 3 | project Service, DurationMs",
    ],
}
RUNAWAY = {
    "duckdb": ["SELECT sum(i * i % 7) FROM range(100000000000) t(i)"],
    "sqlite": [
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    ],
    "kql": [
        "Logs | extend k = 1 | join kind=inner (Logs | extend k = 1) on k "
        "| join kind=inner (Logs | extend k = 1) on k | join kind=inner (Logs | extend k = 1) "
        "on k | count"
    ],
}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module", params=["duckdb", "sqlite", "kql"])
def engine(request: pytest.FixtureRequest, cache: Path) -> Iterator[Engine]:
    kind = request.param
    options: dict[str, Any] = dict(OPTIONS)
    if kind == "kql":
        options["now"] = "2024-06-01T12:00:00Z"
    fixture = LOGS if kind == "kql" else SALES
    built = build_engine("db", DatabaseConfig(engine=kind, fixture=str(fixture),
                                              options=options), ROOT, cache)  # fmt: skip
    yield built
    built.close()


def verdicts(engine: Engine, queries: list[str]) -> list[tuple[str, str, Any]]:
    """(outcome kind, whose fault, rows) of each query."""
    found: list[tuple[str, str, Any]] = []
    for query in queries:
        run = engine.execute(query)
        party = blame(run.outcome, engine, query).party
        found.append((run.outcome.kind, party, run.result.rows if run.result else None))
    return found


def test_an_engine_gives_the_same_verdicts_under_load(engine: Engine) -> None:
    kind = "kql" if engine.language == "kql" else engine.dialect
    queries = CHEAP[kind] + RUNAWAY[kind]
    engine.execute(queries[0])  # warm the engine (the translator, the caches)
    idle = verdicts(engine, queries)
    expected = ["ok"] * len(CHEAP[kind]) + ["timeout"] * len(RUNAWAY[kind])
    assert [k for k, _, _ in idle] == expected, idle
    with cpu_load(seconds=60):
        loaded = verdicts(engine, queries)
        runaway = engine.execute(RUNAWAY[kind][0]).outcome
    assert loaded == idle
    # the runaway is blamed for its own CPU time, whatever the wall clock says
    assert runaway.cpu_s is not None and runaway.cpu_s >= LIMIT_S, runaway


def write_suite(tmp: Path, engine: str) -> Path:
    """A suite on the sales database: cheap golds, predictions right, wrong, runaway."""
    cheap = CHEAP[engine]
    golds = [cheap[0], cheap[1], cheap[2], cheap[1]]
    predictions = [cheap[0], cheap[2], RUNAWAY[engine][0], cheap[1]]
    cases = [
        {"id": f"c{i}", "conversation": [
            {"content": "q", "target": {"query": {"text": g, "database": "sales"}}}]}
        for i, g in enumerate(golds)
    ]  # fmt: skip
    (tmp / "cases.yaml").write_text(yaml.safe_dump(cases))
    lines = [json.dumps({"case_id": f"c{i}", "query": q}) for i, q in enumerate(predictions)]
    (tmp / "preds.jsonl").write_text("\n".join(lines) + "\n")
    suite = {
        "name": "load",
        "cases": "cases.yaml",
        "databases": {"sales": {"engine": engine, "fixture": str(SALES),
                                "options": {**OPTIONS, "gold_cache": False}}},
        "systems": [{"name": "s", "predictions": "preds.jsonl"}],
        "scorers": [{"name": "executes"}, {"name": "execution_match"}],
        "settings": {"workers": 1},
    }  # fmt: skip
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def scored(suite: Path, out: Path) -> dict[str, Any]:
    from queryeval.runner import load_suite, run_suite

    result = run_suite(load_suite(suite), out, progress=False, write_reports=False)
    records = [json.loads(line) for line in (result.out_dir / "results.jsonl").open()]
    return {
        r["case_id"]: {
            name: (s.get("status"), s.get("value"), (s.get("details") or {}).get("failure"))
            for name, s in r["scores"].items()
        }
        for r in records
    }


@pytest.mark.parametrize("kind", ["duckdb", "sqlite"])
def test_a_suite_gives_the_same_verdicts_under_load(tmp_path: Path, kind: str) -> None:
    suite = write_suite(tmp_path, kind)
    idle = scored(suite, tmp_path / "idle")
    assert idle["c0"]["execution_match"][1] == 1.0
    assert idle["c1"]["execution_match"][1] == 0.0
    assert idle["c2"]["executes"][2] == "timeout"  # the runaway prediction: the system's
    with cpu_load(seconds=120):
        loaded = scored(suite, tmp_path / "loaded")
    assert loaded == idle


needs_kusto_language = pytest.mark.skipif(
    shared_validator().missing() is not None,
    reason=f"Kusto.Language is not installed: {shared_validator().missing()}",
)
KQL = [
    "Logs | where Level == 'Error' | summarize n = count() by Service",
    "Logs | wher Level == 'Error'",
    "Logs | where Levl == 'Error'",
    "Logs | extend x = Level + 1",
    "print 1",
]


@needs_kusto_language
def test_kusto_language_gives_the_same_verdicts_under_load() -> None:
    """A cold helper started under load (its start takes much more wall clock than a
    check's limit) gives every verdict it gives on an idle machine, started once."""
    schema = KqlSchema.from_tables({"Logs": {"Level": "VARCHAR", "Service": "VARCHAR"}})
    idle = [shared_validator().check(q, schema).to_dict() for q in KQL]
    validator = KqlValidator(timeout_s=0.2)
    try:
        with cpu_load(seconds=120):
            validator.warm()
            loaded = [validator.check(q, schema).to_dict() for q in KQL]
        assert validator.starts == 1
    finally:
        validator.close()
    for a, b in zip(idle, loaded, strict=True):
        a.pop("kusto_language"), b.pop("kusto_language")
    assert loaded == idle


# -- the clock, without a load: a query that waits (a slow machine) and one that computes --

NAPS = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200) "
    "SELECT sum(coalesce(nap(0.005), 1)) FROM c"
)  # about 1 s of wall clock on an idle machine (3-5 s at load 30), almost no CPU time


def napping_sqlite(cache: Path, **options: float) -> Engine:
    import time

    config = DatabaseConfig(engine="sqlite", fixture=str(SALES),
                            options={"timeout_s": LIMIT_S, **options})  # fmt: skip
    engine = build_engine("db", config, ROOT, cache)
    engine._con.create_function("nap", 1, time.sleep)  # type: ignore[attr-defined]
    return engine


def test_a_query_that_waits_past_its_limit_without_cpu_is_not_stopped(cache: Path) -> None:
    # The CPU-time limit alone: the wall-clock cap (default 10 x the limit, 3 s) is the next
    # test's, and a machine at load 20-30 stretches these naps past it (measured: 3-5 s).
    engine = napping_sqlite(cache, max_wall_s=120.0)
    try:
        run = engine.execute(NAPS)
        assert run.outcome.kind == "ok", run.outcome
        assert run.outcome.elapsed_s is not None and run.outcome.elapsed_s > 2 * LIMIT_S
        assert run.outcome.cpu_s is None or run.outcome.cpu_s < LIMIT_S
        assert run.result is not None and run.result.rows == ((200,),)
    finally:
        engine.close()


def test_past_the_wall_cap_with_little_cpu_the_case_is_the_evaluators(cache: Path) -> None:
    engine = napping_sqlite(cache, max_wall_s=0.5)
    try:
        run = engine.execute(NAPS)
        assert run.outcome.kind == "timeout"
        assert run.outcome.cpu_s is not None and run.outcome.cpu_s < LIMIT_S
        fault = blame(run.outcome, engine, NAPS)
        assert fault.party == "evaluator" and "too slow" in fault.message
    finally:
        engine.close()


def _burn(seconds: float) -> None:
    import time

    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_cpu_spent_by_another_query_is_not_this_ones() -> None:
    """A query that overlapped another is charged its thread's CPU time only; what another
    Python thread spent is that thread's; when the process spent the limit in threads that
    are no Python thread's (an engine's native workers) while the thread did not, the cost
    cannot be told apart (`shared`: the engine runs it again on a quiet slot)."""
    import _thread
    import threading
    import time

    from queryeval.engines._cost import query_clock

    def busy() -> None:
        with query_clock():
            _burn(0.5)

    with query_clock() as waiting:  # this thread only waits
        other = threading.Thread(target=busy)
        other.start()
        other.join()
        assert waiting.overlapped
        assert waiting.verdict(LIMIT_S, 100.0) is None  # the other thread's CPU is its own
    done = threading.Event()

    def native_worker() -> None:  # a thread threading does not know, as an engine's are
        _burn(0.5)
        done.set()

    def other_query() -> None:
        with query_clock():  # another query runs meanwhile, on native workers
            _thread.start_new_thread(native_worker, ())
            assert done.wait(30)
            time.sleep(0.05)

    with query_clock() as waiting:
        other = threading.Thread(target=other_query)
        other.start()
        other.join(30)
        assert waiting.overlapped
        assert waiting.verdict(LIMIT_S, 100.0) == "shared"
    with query_clock() as alone:
        _burn(0.4)
        assert not alone.overlapped and alone.verdict(LIMIT_S, 100.0) == "own"


def test_cpu_the_evaluators_own_threads_spend_is_never_the_querys() -> None:
    """A query alone in the process is charged the process's CPU time (its engine's native
    workers), less what the evaluator's other Python threads (a comparison, the runner)
    spent meanwhile: before, a busy comparison thread made a waiting query `own`."""
    import threading

    from queryeval.engines._cost import query_clock

    burnt, verdict_taken = threading.Event(), threading.Event()

    def comparison() -> None:  # a pooled thread: it lives on after its work
        _burn(0.5)
        burnt.set()
        verdict_taken.wait(30)

    with query_clock() as alone:
        thread = threading.Thread(target=comparison)
        thread.start()
        try:
            assert burnt.wait(30)
            assert not alone.overlapped
            assert alone.verdict(LIMIT_S, 100.0) is None
            assert alone.most_s() < LIMIT_S
        finally:
            verdict_taken.set()
            thread.join(30)


def test_a_query_on_the_quiet_slot_runs_alone() -> None:
    import threading
    import time

    from queryeval.engines._cost import query_clock

    order: list[str] = []
    alone: list[bool] = []

    def quiet() -> None:
        with query_clock(quiet=True) as clock:
            order.append("quiet")
            alone.append(not clock.overlapped)

    with query_clock():
        rerun = threading.Thread(target=quiet)
        rerun.start()
        time.sleep(0.3)
        order.append("first ends")
    rerun.join()
    assert order == ["first ends", "quiet"] and alone == [True]


class _Server(Engine):
    """An engine whose queries a server runs (wall-clock limit): times out once."""

    language = "sql"

    def __init__(self) -> None:
        from queryeval.engines import Limits

        super().__init__("server", Limits(timeout_s=LIMIT_S), "server")
        self.runs = 0

    def refusal(self, query: str) -> str | None:
        return None

    def _run(self, query: str) -> Any:
        from queryeval.engines._base import QueryTimeout, RawResult

        self.runs += 1
        if self.runs == 1:
            raise QueryTimeout(f"past the server's {LIMIT_S:g}s limit")
        return RawResult(["n"], [(1,)])

    def classify(self, exc: BaseException) -> Any:
        return "engine_error", str(exc)

    def explain(self, query: str) -> str:
        return query

    def schema(self) -> dict[str, Any]:
        return {"tables": {}}


@pytest.mark.parametrize("loaded", [True, False])
def test_a_servers_timeout_on_a_loaded_machine_is_tried_again_on_a_quiet_slot(
    monkeypatch: pytest.MonkeyPatch, loaded: bool
) -> None:
    from queryeval.engines import _base

    monkeypatch.setattr(_base, "machine_loaded", lambda: loaded)
    server = _Server()
    run = server.execute("SELECT 1")
    if loaded:  # the second try, alone in the process, answered
        assert run.outcome.kind == "ok" and server.runs == 2
    else:  # an idle machine: the timeout is the query's
        assert run.outcome.kind == "timeout" and server.runs == 1
