"""Benchmark: execution scoring of large results (issue 16, target 2: the Arrow path reached
from real runs). A DuckDB database of N rows; 10 cases whose gold and predicted queries
return up to N rows each (listings, a filter, a GROUP BY, an ordered listing; predictions
right with columns reordered, or wrong), the database's `max_rows` raised past them.

Sides, each a fresh process timed from outside (interpreter start and imports included),
pinned to the same cores, in interleaved rounds, medians reported:

- the loop a user writes instead: execute gold and prediction with duckdb, `fetchall`,
  compare with `collections.Counter` (columns matched by name where the names agree, else
  by position);
- `queryeval run` cold (no gold cached) and warm: results fetched as Arrow, compared on the
  comparator's Arrow path, large golds cached as Arrow IPC;
- the same two runs with the Arrow fetch turned off (the code before: Python rows from
  `fetchmany`, golds cached as JSON), `--quick` leaves them out.

    .venv/bin/python bench/bench_large_results.py [--rows N] [--rounds R] [--cores C] [--quick]
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

import _harness as h  # noqa: E402

LOOP = "loop: duckdb fetchall + Counter"
COLD, WARM = "queryeval run, cold (Arrow)", "queryeval run, warm (Arrow)"
COLD_ROWS, WARM_ROWS = "Arrow off, cold (Python rows)", "Arrow off, warm (Python rows)"
_GOLDS = [
    ("SELECT i, s FROM t", "SELECT s, i FROM t"),
    ("SELECT i, s, d FROM t WHERE i % 2 = 0", "SELECT i, s, d + 1 FROM t WHERE i % 2 = 0"),
    ("SELECT k, s, count(*) AS n FROM t GROUP BY k, s",
     "SELECT k, s, count(*) AS n FROM t WHERE i > 5 GROUP BY k, s"),
    ("SELECT i, s, d FROM t ORDER BY i", "SELECT i, s, d FROM t ORDER BY i DESC"),
    ("SELECT i, k FROM t WHERE k < 7", "SELECT k, i FROM t WHERE k < 7"),
]  # fmt: skip
# the Arrow fetch off: the comparator's fast-path bound as the engine's switch, set past
# any result (what the code did before: Python rows for every result)
_ROWS_ONLY = (
    "import sys; import queryeval.engines._duckdb as d; d.FAST_MAX_ROWS = 10**12; "
    "from queryeval.cli import main; sys.argv = ['queryeval', *sys.argv[1:]]; main()"
)
_LOOP = """
import json, sys
from collections import Counter
import duckdb
folder = sys.argv[1]
con = duckdb.connect(folder + "/big.duckdb", read_only=True)
cases = [json.loads(x) for x in open(folder + "/cases.jsonl")]
preds = {p["case_id"]: p["query"] for p in map(json.loads, open(folder + "/preds.jsonl"))}
exact = 0
for case in cases:
    gold = con.execute(case["conversation"][0]["target"]["query"])
    names = [d[0] for d in gold.description]
    g = Counter(gold.fetchall())
    pred = con.execute(preds[case["id"]])
    got = [d[0] for d in pred.description]
    order = [got.index(n) for n in names] if sorted(got) == sorted(names) else range(len(got))
    p = Counter(tuple(r[j] for j in order) for r in pred.fetchall())
    exact += p == g
print(json.dumps({"exact": exact}))
"""


def write_suite(folder: Path, rows: int) -> Path:
    import duckdb

    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(folder / "big.duckdb"))
    con.execute(
        "CREATE TABLE t AS SELECT range AS i, (range % 997)::VARCHAR AS s, "
        f"(range * 0.5)::DOUBLE AS d, (range % 13)::INTEGER AS k FROM range({rows})"
    )
    con.close()
    pairs = _GOLDS * 2
    cases = [
        {"id": f"q{i}", "conversation": [
            {"role": "user", "content": "?", "target": {"query": g, "database": "big"}}]}
        for i, (g, _) in enumerate(pairs)
    ]  # fmt: skip
    preds = [{"case_id": f"q{i}", "query": p} for i, (_, p) in enumerate(pairs)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "preds.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds))
    suite = folder / "suite.yaml"
    suite.write_text(
        "name: large-results\ncases: cases.jsonl\ndatabases:\n"
        f"  big: {{engine: duckdb, path: big.duckdb, options: {{max_rows: {rows * 2}, "
        f"max_bytes: {2**31}}}}}\n"
        "systems:\n  - {name: sys, predictions: preds.jsonl}\n"
        "scorers: [execution_match, results_f1]\nreports: [json]\n"
    )
    return suite


def main() -> None:
    args = h.options(
        __doc__.splitlines()[0],
        full={"rows": 500_000, "rounds": 3, "cores": h.cores()},
        quick={"rows": 100_000, "rounds": 2, "cores": h.cores()},
    )
    env = {**os.environ, "PYTHONPATH": str(h.ROOT / "src")}
    print(f"large results, {args.rows:,} rows a table; {h.machine()}")
    with tempfile.TemporaryDirectory(prefix="qe-bench-large-") as tmp:
        folder = Path(tmp)
        suite = write_suite(folder / "suite", args.rows)

        def run(cwd: str, arrow: bool, cold: bool) -> float:
            where = folder / cwd
            if cold:
                shutil.rmtree(where, ignore_errors=True)
            where.mkdir(exist_ok=True)
            head = ["-m", "queryeval"] if arrow else ["-c", _ROWS_ONLY]
            cmd = [sys.executable, *head, "run", str(suite), "--out", str(folder / f"out-{cwd}"),
                   "--overwrite", "--no-progress"]  # fmt: skip
            return h.run_child(cmd, cores=args.cores, cwd=where, env=env)

        def loop() -> float:
            cmd = [sys.executable, "-c", _LOOP, str(suite.parent)]
            return h.run_child(cmd, cores=args.cores, env=env)

        run("warm", True, True)  # fills the warm side's gold cache (untimed)
        sides = [
            h.Side(LOOP, loop, args.cores),
            h.Side(COLD, lambda: run("cold", True, True), args.cores),
            h.Side(WARM, lambda: run("warm", True, False), args.cores),
        ]
        if not args.quick:
            run("warm-rows", False, True)
            sides += [
                h.Side(COLD_ROWS, lambda: run("cold-rows", False, True), args.cores),
                h.Side(WARM_ROWS, lambda: run("warm-rows", False, False), args.cores),
            ]
        timings = h.interleaved(sides, args.rounds)
        print(h.table(timings, reference=LOOP))
        summary = (folder / "out-warm" / "summary.json").read_bytes()
        if not args.quick:
            same = summary == (folder / "out-warm-rows" / "summary.json").read_bytes()
            print("summary.json byte-identical with the Arrow fetch off:", same)
    base = timings[LOOP]
    for label in (COLD, WARM):
        ours = timings[label]
        h.record(
            "large_results",
            f"10 cases of up to {args.rows:,} rows, {label.split(', ')[-1]}",
            f"{ours.median:.2f} s",
            against=f"duckdb fetchall + Counter loop {base.median:.2f} s",
            note=f"{h.ratio(ours, base)} the loop's time; {args.cores} core(s) each, "
            f"median of {args.rounds}",
        )


if __name__ == "__main__":
    main()
