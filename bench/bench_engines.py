"""Engine figures: sandbox overhead per query against plain DuckDB, the gold cache against
re-running the golds, and how long an embedded ArcadeDB takes to start.

Sandboxed and plain DuckDB run in the same process with DuckDB's default threads on both
sides, in interleaved rounds (medians); the gold cache is measured cold (a new cache folder
each round: execute and store) and warm (a new context on the filled folder), interleaved.
ArcadeDB's start is one measurement (skipped under --quick).

    .venv/bin/python bench/bench_engines.py [--rounds 15] [--quick]   (about a minute)
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "bench")]

import _harness as h  # noqa: E402
from queryeval.cases import load_cases  # noqa: E402
from queryeval.config import DatabaseConfig  # noqa: E402
from queryeval.engines import build_engine, gold_execution  # noqa: E402
from queryeval.runner import load_suite  # noqa: E402
from queryeval.scorers import ScoringContext  # noqa: E402


def gold_queries(suite_path: Path) -> list[str]:
    suite = load_suite(suite_path)
    cases = load_cases(suite.cases, suite.base_dir)
    return [t.query.text for c in cases for t in c.targets
            if t.query is not None and (t.query.database or "sales") == "sales"]  # fmt: skip


def main() -> None:
    import duckdb

    args = h.options(__doc__.splitlines()[0], full={"rounds": 15}, quick={"rounds": 7})
    print(h.machine())
    suite_path = ROOT / "examples" / "sql" / "suite.yaml"
    queries = gold_queries(suite_path)
    cache = Path(tempfile.mkdtemp(prefix="qe-bench-"))
    config = DatabaseConfig(engine="duckdb", fixture=str(ROOT / "examples/sql/fixtures/sales"))
    engine = build_engine("sales", config, ROOT / "examples" / "sql", cache)
    copy = cache / "plain.duckdb"  # DuckDB refuses a 2nd configuration of one open file
    shutil.copy(engine.path, copy)  # type: ignore[attr-defined]
    raw = duckdb.connect(str(copy), read_only=True)
    threads = raw.execute("SELECT current_setting('threads')").fetchone()[0]  # type: ignore[index]

    passes = 5  # the golds run 5 times per round: ~0.1 s, long enough to time on a busy box

    def sandboxed() -> None:
        for q in queries * passes:
            assert engine.execute(q).ok

    def plain() -> None:
        for q in queries * passes:
            raw.execute(q).fetchall()

    n = len(queries) * passes
    sandbox, direct = "sandboxed engine.execute", "plain duckdb execute().fetchall()"
    timings = h.interleaved(
        [h.Side(sandbox, sandboxed, f"{threads} thr"), h.Side(direct, plain, f"{threads} thr")],
        args.rounds,
        progress=False,
    )
    print(f"SQL golds ({n} queries on DuckDB, {threads} DuckDB threads on both sides):")
    print(h.table(timings, reference=direct))
    ours, base = timings[sandbox], timings[direct]
    h.record(
        "engines",
        f"sandboxed DuckDB query ({len(queries)} example golds x {passes})",
        f"{ours.median / n * 1000:.2f} ms/query",
        against=f"plain DuckDB {base.median / n * 1000:.2f} ms/query",
        note=f"{h.ratio(ours, base)}; median of {args.rounds}",
    )
    raw.close()
    engine.close()

    suite = load_suite(suite_path)

    def timed_golds(folder: Path) -> float:
        """Seconds for every gold through a new context on `folder` (its engine built
        before the clock starts)."""
        ctx = ScoringContext(suite, cache_dir=folder)
        ctx.resource("engine:sales", lambda: build_engine("sales", config, suite.base_dir, folder))
        start = time.perf_counter()
        for q in queries:
            gold_execution(ctx, "sales", q)
        took = time.perf_counter() - start
        ctx.close()
        return took

    def cold() -> float:
        return timed_golds(Path(tempfile.mkdtemp(prefix="qe-cold-", dir=cache)))

    warm_dir = Path(tempfile.mkdtemp(prefix="qe-warm-", dir=cache))
    timed_golds(warm_dir)  # fills the cache the warm side reads

    def warm() -> float:
        return timed_golds(warm_dir)

    gold = h.interleaved(
        [h.Side("executed and stored", cold, 1), h.Side("from the disk cache", warm, 1)],
        args.rounds,
        progress=False,
    )
    print(f"gold results ({len(queries)} golds):")
    print(h.table(gold, reference="from the disk cache"))
    c, w = gold["executed and stored"], gold["from the disk cache"]
    h.record(
        "engines",
        f"{len(queries)} gold results from the cache",
        f"{w.median * 1000:.1f} ms",
        against=f"executing and storing them {c.median * 1000:.1f} ms",
        note=f"{c.median / w.median:.0f}x faster; median of {args.rounds}",
    )
    if args.quick:
        print("ArcadeDB start: skipped under --quick")
        return

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
    h.record(
        "engines",
        "embedded ArcadeDB: fixture build + start + warm-up",
        f"{first_start:.1f} s (server process {server_start:.1f} s), stop {stop:.2f} s",
        note=f"one start; a 65-row Cypher query over Bolt "
        f"{statistics.median(query_times) * 1000:.1f} ms (median of 20)",
    )


if __name__ == "__main__":
    main()
