"""Benchmark: SQL execution scoring (executes + execution_match + results_f1) of 3,000 cases
on a small DuckDB database (bench/_sql_data.py: 500 customers, 20,000 orders; distinct gold
and predicted queries of five everyday shapes; 10% of the predictions fail to run).

Sides, each a fresh process timed from outside (interpreter start and imports included),
pinned to the same cores, in interleaved rounds, medians reported:

- the loop a user writes instead (bench/_sql_loop.py): execute gold and prediction with
  duckdb, compare the rows with `collections.Counter`, nothing sandboxed or stored;
- `queryeval run` cold: a new working folder each round, so no gold result is cached;
- `queryeval run` warm: the gold cache filled by an earlier (untimed) run.

Targets (issue 16): cold <= 1.2x the loop's time, warm <= 0.6x.

    .venv/bin/python bench/bench_sql_scoring.py [--cases 3000] [--rounds 5] [--cores 1] [--quick]
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
from _sql_data import write_suite  # noqa: E402
from bench_sdmx import compile_package  # noqa: E402

LOOP = "loop: duckdb + Counter"
COLD = "queryeval run, cold"
WARM = "queryeval run, warm"
TARGETS = {COLD: 1.2, WARM: 0.6}


def main() -> None:
    args = h.options(
        __doc__.splitlines()[0],
        full={"cases": 3000, "rounds": 5, "cores": 1},
        quick={"cases": 1000, "rounds": 3, "cores": 1},
    )
    paths = [str(h.ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    compile_package()  # bytecode, as a wheel install leaves it
    print(f"SQL execution scoring, {args.cases:,} cases; {h.machine()}")
    with tempfile.TemporaryDirectory(prefix="qe-bench-sql-") as tmp:
        folder = Path(tmp)
        suite = write_suite(folder / "suite", args.cases)
        warm_dir = folder / "warm"
        warm_dir.mkdir()
        run_cmd = [sys.executable, "-m", "queryeval", "run", str(suite), "--overwrite",
                   "--no-progress"]  # fmt: skip

        def queryeval(cwd: Path) -> float:
            out = folder / f"out-{cwd.name}"
            return h.run_child([*run_cmd, "--out", str(out)], cores=args.cores, cwd=cwd, env=env)

        def cold() -> float:
            cwd = folder / "cold"
            shutil.rmtree(cwd, ignore_errors=True)  # no .queryeval-cache: every gold runs
            cwd.mkdir()
            return queryeval(cwd)

        def loop() -> dict[str, float]:
            cmd = [sys.executable, str(HERE / "_sql_loop.py"), str(suite.parent)]
            return {"seconds": h.run_child(cmd, cores=args.cores, env=env)}

        queryeval(warm_dir)  # fills the gold cache (untimed)
        sides = [
            h.Side(LOOP, loop, args.cores),
            h.Side(COLD, cold, args.cores),
            h.Side(WARM, lambda: queryeval(warm_dir), args.cores),
        ]
        timings = h.interleaved(sides, args.rounds)
        print(h.table(timings, reference=LOOP, per=(args.cases, "cases/s")))
        summary = json.loads((folder / "out-warm" / "summary.json").read_text())
        means = {k: v["mean"] for k, v in summary["systems"]["sys"]["scorers"].items()}
        print("queryeval means:", {k: round(v, 4) for k, v in means.items()})
    base = timings[LOOP]
    missed = []
    for label, target in TARGETS.items():
        ours = timings[label]
        ratio = ours.median / base.median
        missed += [label] if ratio > target else []
        h.record(
            "sql_scoring",
            f"SQL execution scoring, {args.cases:,} cases, {label.split(', ')[-1]}",
            f"{ours.median:.2f} s ({args.cases / ours.median:,.0f} cases/s)",
            against=f"duckdb + Counter loop {base.median:.2f} s",
            note=f"{h.ratio(ours, base)} the loop's time (target <= {target}x); "
            f"{args.cores} core(s) each, median of {args.rounds}",
        )
    if missed:
        print("missed target:", ", ".join(missed))


if __name__ == "__main__":
    main()
