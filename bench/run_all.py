"""Run every benchmark in bench/ one after another (same machine, one run), then print one
table of their headline figures, each with the load average at the moment it was taken.

    .venv/bin/python bench/run_all.py            # full sizes (`make bench`; ~15-20 minutes)
    .venv/bin/python bench/run_all.py --quick    # small sizes, few rounds: under 3 minutes
    .venv/bin/python bench/run_all.py --only excel sdmx

--quick is meant to be re-run after every change to a hot path; its figures are smaller
than the full ones and noisier, and ratios at small sizes are not the full-size ratios.
Each script also runs on its own: `python bench/bench_X.py [--quick]`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as h

QUICK_BUDGET_S = 180


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds")
    parser.add_argument("--only", nargs="*", help="benchmark names (e.g. excel sdmx)")
    args = parser.parse_args()
    scripts = sorted(Path(__file__).resolve().parent.glob("bench_*.py"))
    if args.only:
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in args.only]
    print(f"{'quick' if args.quick else 'full'} run of {len(scripts)} benchmarks; {h.machine()}")
    failed, took = [], {}
    start_all = time.perf_counter()
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as results:
        results_path = Path(results.name)
    env = {**os.environ, h.RESULTS_ENV: str(results_path)}
    try:
        for script in scripts:
            print(f"\n=== {script.name}", flush=True)
            start = time.perf_counter()
            cmd = [sys.executable, str(script), *(["--quick"] if args.quick else [])]
            code = subprocess.call(cmd, env=env)
            took[script.stem] = time.perf_counter() - start
            print(f"--- {script.name}: exit {code}, {took[script.stem]:.1f} s", flush=True)
            if code:
                failed.append(script.name)
        figures = [json.loads(line) for line in results_path.read_text().splitlines() if line]
    finally:
        results_path.unlink(missing_ok=True)
    total = time.perf_counter() - start_all
    print(f"\n=== summary ({'quick' if args.quick else 'full'} run, {h.machine()})")
    for f in figures:
        against = f" | against {f['against']}" if f["against"] else ""
        note = f" | {f['note']}" if f["note"] else ""
        print(f"- [{f['bench']}] {f['figure']}: {f['value']}{against}{note} | load {f['load']}")
    print(f"\ntotal {total:.0f} s (" + ", ".join(f"{k} {v:.0f} s" for k, v in took.items()) + ")")
    if args.quick and total > QUICK_BUDGET_S:
        print(f"note: the quick run took longer than {QUICK_BUDGET_S} s on this machine")
    if failed:
        print(f"failed (or missed a target): {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
