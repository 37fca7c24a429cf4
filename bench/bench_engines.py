"""Engine figures: sandbox overhead per query against plain DuckDB, the gold cache against
re-running the golds, and how long an embedded ArcadeDB takes to start.

    python bench/bench_engines.py            (about a minute; starts one ArcadeDB)
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from queryeval.cases import load_cases  # noqa: E402
from queryeval.config import DatabaseConfig, load_suite  # noqa: E402
from queryeval.engines import build_engine, gold_execution  # noqa: E402
from queryeval.scorers import ScoringContext  # noqa: E402


def gold_queries(suite_path: Path) -> list[str]:
    suite = load_suite(suite_path)
    cases = load_cases(suite.cases, suite.base_dir)
    return [t.query.text for c in cases for t in c.targets
            if t.query is not None and (t.query.database or "sales") == "sales"]  # fmt: skip


def best_of(repeats: int, action: object) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    import duckdb

    suite_path = ROOT / "examples" / "sql" / "suite.yaml"
    queries = gold_queries(suite_path)
    cache = Path(tempfile.mkdtemp(prefix="qe-bench-"))
    config = DatabaseConfig(engine="duckdb", fixture=str(ROOT / "examples/sql/fixtures/sales"))
    engine = build_engine("sales", config, ROOT / "examples" / "sql", cache)
    copy = cache / "plain.duckdb"  # DuckDB refuses a 2nd configuration of one open file
    shutil.copy(engine.path, copy)  # type: ignore[attr-defined]
    raw = duckdb.connect(str(copy), read_only=True)

    def sandboxed() -> None:
        for q in queries:
            assert engine.execute(q).ok

    def plain() -> None:
        for q in queries:
            raw.execute(q).fetchall()

    t_sandbox, t_plain = best_of(5, sandboxed), best_of(5, plain)
    n = len(queries)
    print(f"SQL golds ({n} queries on DuckDB), best of 5:")
    print(f"  sandboxed engine.execute : {t_sandbox / n * 1000:7.2f} ms/query")
    print(f"  plain duckdb execute     : {t_plain / n * 1000:7.2f} ms/query")
    print(f"  overhead ratio           : {t_sandbox / t_plain:7.2f} x")
    raw.close()
    engine.close()

    suite = load_suite(suite_path)
    first = ScoringContext(suite, cache_dir=cache)
    cold_start = time.perf_counter()
    for q in queries:
        gold_execution(first, "sales", q)
    cold = time.perf_counter() - cold_start
    first.close()
    warm_times = []
    for _ in range(3):
        ctx = ScoringContext(suite, cache_dir=cache)
        ctx.resource("engine:sales", lambda: build_engine("sales", config, suite.base_dir, cache))
        start = time.perf_counter()
        for q in queries:
            gold_execution(ctx, "sales", q)
        warm_times.append(time.perf_counter() - start)
        ctx.close()
    warm = min(warm_times)
    print(f"gold results ({n} golds): executed and stored {cold * 1000:.1f} ms, "
          f"from the disk cache {warm * 1000:.1f} ms ({cold / warm:.1f} x faster)")  # fmt: skip

    seed = ROOT / "examples" / "cypher" / "fixtures" / "movies.yaml"
    graph = DatabaseConfig(engine="arcadedb", fixture=str(seed))
    start = time.perf_counter()
    cypher = build_engine("movies", graph, ROOT, cache)  # builds the fixture, then starts
    first_start = time.perf_counter() - start
    server = cypher.server  # type: ignore[attr-defined]
    server_start = server.start_seconds
    query_times = []
    for _ in range(20):
        t = time.perf_counter()
        assert cypher.execute("MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN p.name, m.title").ok
        query_times.append(time.perf_counter() - t)
    start = time.perf_counter()
    cypher.close()
    stop = time.perf_counter() - start
    print(
        f"ArcadeDB: fixture build + start + warm-up {first_start:.1f} s "
        f"(server process start {server_start:.1f} s), stop {stop:.2f} s; "
        f"a 65-row query {statistics.median(query_times) * 1000:.1f} ms (median of 20)"
    )


if __name__ == "__main__":
    main()
