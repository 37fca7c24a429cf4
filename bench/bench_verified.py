"""What verified verdicts cost: `verified_match` (EX, then database variants) against plain
`execution_match` on the same cases, in process, interleaved rounds, each round on a fresh
scoring context and gold cache (nothing carried over), DuckDB and SQLite.

The database is bench/_sql_data's seeded sales database (customers 500 rows, orders 20,000:
larger than most Spider databases; the variants start from 200 rows a table) and its five
query shapes, right and wrong predictions. Figures: CPU seconds (this process's user +
system time) and wall seconds per case, medians over the rounds, the load average beside
them. Target (issue 29): at most 1 CPU-second per case on average.

    .venv/bin/python bench/bench_verified.py [--quick] [--cases 60] [--rounds 3]
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Side, interleaved, machine, options, record, table
from _sql_data import write_suite
from queryeval.cases import Attempt, Case, Output
from queryeval.config import ScorerConfig
from queryeval.runner import load_suite
from queryeval.scorers import ScoringContext, build_scorer, score_case


def _sqlite_copy(folder: Path) -> None:
    """shop.sqlite with the DuckDB file's tables and rows."""
    import duckdb

    duck = duckdb.connect(str(folder / "shop.duckdb"), read_only=True)
    con = sqlite3.connect(folder / "shop.sqlite")
    con.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, country TEXT)")
    con.execute("CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER "
                "REFERENCES customers(id), amount REAL, status TEXT, day TEXT)")  # fmt: skip
    con.executemany("INSERT INTO customers VALUES (?, ?, ?)",
                    duck.execute("SELECT * FROM customers").fetchall())  # fmt: skip
    con.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
                    duck.execute("SELECT order_id, customer_id, amount, status, "
                                 "CAST(day AS VARCHAR) FROM orders").fetchall())  # fmt: skip
    con.commit()
    con.close()
    duck.close()


def _cases(folder: Path, database: str) -> list[tuple[Case, Output]]:
    out = []
    with (folder / "cases.jsonl").open() as cf, (folder / "predictions.jsonl").open() as pf:
        for c, p in zip(cf, pf, strict=True):
            case = json.loads(c)
            gold = case["conversation"][0]["target"]["query"]
            if database == "shop_sqlite":  # SQLite has no DATE 'x' + n
                gold = gold.replace("DATE '2024-01-01' + ", "date('2024-01-01', '+' || ")
                gold = gold.replace(" GROUP BY status", " || ' days') GROUP BY status")
            case["conversation"][0]["target"] = {"query": {"text": gold, "database": database}}
            pred = json.loads(p)["query"]
            if database == "shop_sqlite" and "DATE '2024-01-01' + " in pred:
                pred = pred.replace("DATE '2024-01-01' + ", "date('2024-01-01', '+' || ")
                pred = pred.replace(" GROUP BY status", " || ' days') GROUP BY status")
            out.append((Case.model_validate(case), Output(attempts=[Attempt(query=pred)])))
    return out


def _side(suite: Path, cases: list[tuple[Case, Output]], scorer: str) -> dict[str, Any]:
    """Score every case with a fresh context and gold cache; CPU and wall seconds."""
    cache = Path(tempfile.mkdtemp(prefix="bench-verified-"))
    ctx = ScoringContext(load_suite(suite), cache_dir=cache)
    built = build_scorer(ScorerConfig(name=scorer))
    cpu, wall = time.process_time(), time.perf_counter()
    scores = [score_case(built, case, output, ctx) for case, output in cases]
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    ctx.close()
    shutil.rmtree(cache, ignore_errors=True)
    details = [s.details for s in scores]
    metrics = [d.get("metrics") or {} for d in details]
    return {
        "seconds": cpu,
        "wall": wall,
        "ex": sum(1 for m in metrics if m.get("ex", m.get("exact")) == 1.0),
        "verified": sum(1 for s in scores if s.value == 1.0),
        "counterexamples": sum(1 for d in details if "counterexample" in d),
    }


def main() -> None:
    args = options(__doc__, full={"cases": 60, "rounds": 3}, quick={"cases": 15, "rounds": 2})
    folder = Path(tempfile.mkdtemp(prefix="bench-verified-data-"))
    write_suite(folder, args.cases)
    _sqlite_copy(folder)
    suite = folder / "suite.yaml"
    suite.write_text(suite.read_text().replace(
        "  shop: {engine: duckdb, path: shop.duckdb}\n",
        "  shop: {engine: duckdb, path: shop.duckdb}\n"
        "  shop_sqlite: {engine: sqlite, path: shop.sqlite}\n"))  # fmt: skip
    print(machine())
    for database in ("shop", "shop_sqlite"):
        cases = _cases(folder, database)
        sides = [
            Side(f"{name} ({database})", lambda c=cases, n=name: _side(suite, c, n), 1)
            for name in ("execution_match", "verified_match")
        ]
        timings = interleaved(sides, args.rounds)
        print(table(timings, reference=sides[0].label, per=(args.cases, "cases/CPU-s")))
        ex, verified = timings[sides[0].label], timings[sides[1].label]
        last = verified.extra[-1]
        per_case = verified.median / args.cases
        record("verified", f"verified_match CPU-s per case ({database}, {args.cases} cases)",
               f"{per_case:.3f}", against=f"execution_match {ex.median / args.cases:.4f}",
               note=(f"wall {verified.extra_median('wall') / args.cases:.3f} s/case; "
                     f"EX {last['ex']} -> verified {last['verified']} "
                     f"({last['counterexamples']} counterexamples)"))  # fmt: skip
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
