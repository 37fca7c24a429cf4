"""Benchmark: peak memory of a whole `queryeval run` (the run's process and every worker
together) as the suite grows: SDMX suites of 10k, 100k and 1M cases (issue 16, target 3:
1M cases under 1.5 GiB, growth sub-linear).

Each run is a fresh process; the process tree is sampled every 0.1 s from /proc, summing
RSS (pages shared by forked workers counted in each: an upper bound) and PSS (shared pages
split between the processes that share them). Wall time and the load average are given
beside each figure. `--baseline-src DIR` runs another checkout's code on the same suites in
the same rounds (interleaved), for a before/after.

    .venv/bin/python bench/bench_run_memory.py [--cases 10000,100000,1000000] [--rounds 1]
        [--baseline-src DIR] [--quick: 10k and 50k cases]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

import _harness as h  # noqa: E402
from _sdmx_data import write_suite  # noqa: E402
from hostile_catalogue import process_tree  # noqa: E402


def _memory_kib(pids: set[int]) -> tuple[int, int]:
    """(sum of RSS, sum of PSS) of the processes, in KiB."""
    rss = pss = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("Rss:"):
                rss += int(line.split()[1])
            elif line.startswith("Pss:"):
                pss += int(line.split()[1])
    return rss, pss


def measure(suite: Path, out: Path, src: Path) -> dict[str, float]:
    """One `queryeval run` of the suite with the code in `src`: peak tree RSS and PSS
    (MiB), wall seconds, the load average before and after."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "queryeval", "run", str(suite), "--out", str(out),
         "--no-progress", "--overwrite"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    peak_rss = peak_pss = 0
    while proc.poll() is None:
        rss, pss = _memory_kib(process_tree(proc.pid))
        peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
        time.sleep(0.1)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise RuntimeError(f"run failed ({proc.returncode}): {err[-2000:]}")
    return {
        "rss": peak_rss / 1024,
        "pss": peak_pss / 1024,
        "wall": wall,
        "load": (load_before + os.getloadavg()[0]) / 2,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="10000,100000,1000000")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline-src", type=Path)
    parser.add_argument("--quick", action="store_true", help="10k and 50k cases, one round")
    args = parser.parse_args()
    sizes = [10_000, 50_000] if args.quick else [int(x) for x in args.cases.split(",")]
    sides = {"now": h.ROOT / "src"}
    if args.baseline_src:
        sides["before"] = args.baseline_src.resolve() / "src"
    print(f"peak memory of `queryeval run` on SDMX suites; {h.machine()}")
    print("| cases | side | peak RSS, all processes | peak PSS | wall s | load |")
    print("|---:|---|---:|---:|---:|---:|")
    peaks: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            folder = Path(tmp) / str(n)
            suite = write_suite(folder, n)
            for _ in range(args.rounds):
                for side, src in sides.items():
                    m = measure(suite, folder / f"run-{side}", src)
                    if side == "now":
                        peaks[n] = max(peaks.get(n, 0.0), m["rss"])
                    print(
                        f"| {n:,} | {side} | {m['rss']:,.0f} MiB | {m['pss']:,.0f} MiB | "
                        f"{m['wall']:.1f} | {m['load']:.1f} |",
                        flush=True,
                    )
            now = peaks.get(n)
            if now is not None:
                h.record(
                    "run_memory",
                    f"peak memory of a whole run, {n:,} SDMX cases (all processes)",
                    f"{now:,.0f} MiB RSS",
                    note="target < 1,536 MiB at 1M" if n == 1_000_000 else "",
                )
            for side in sides:
                a = (folder / "run-now" / "summary.json").read_bytes()
                b = (folder / f"run-{side}" / "summary.json").read_bytes()
                if a != b:
                    print(f"  summary.json of {side} differs from now's", flush=True)
            subprocess.run(["rm", "-rf", str(folder)], check=False)
    if peaks.get(1_000_000, 0.0) > 1536:
        print("missed the target: 1M cases over 1.5 GiB")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
