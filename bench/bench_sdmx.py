"""Benchmark: SDMX term selection end to end (load, score, store, summary; no Excel).

Prints cases/s for queryeval's `run` on 100,000 cases from a predictions file, the rate of
the bare loop a user would otherwise write (json + sets, per the seed, nothing stored), and
`queryeval --help` start-up time. Run: `.venv/bin/python bench/bench_sdmx.py [N] [REPEAT]`
(the run is timed REPEAT times, default 3, and the median reported; the bare loop's best).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sdmx_data import write_suite


def bare_loop(folder: Path) -> float:
    """The seed-style script: read both files, per-dimension sets, macro P/R; seconds."""
    start = time.perf_counter()
    preds = {}
    with (folder / "predictions.jsonl").open() as f:
        for line in f:
            rec = json.loads(line)
            preds[rec["case_id"]] = rec["indicator_selection"]
    precisions, recalls = [], []
    with (folder / "cases.jsonl").open() as f:
        for line in f:
            case = json.loads(line)
            target = case["conversation"][-1]["target"]["indicator_selection"]
            chosen = preds.get(case["id"], [])
            gold = {
                d["dimension_name"]: {v["id"] for v in d["values"]}
                for ds in target
                for d in ds["dimensions"]
            }
            got = {
                d["dimension_name"]: {v["id"] for v in d["values"]}
                for ds in chosen
                for d in ds["dimensions"]
            }
            ps, rs = [], []
            for dim in gold.keys() | got.keys():
                g, p = gold.get(dim, set()), got.get(dim, set())
                tp = len(g & p)
                ps.append(tp / len(p) if p else float(not g))
                rs.append(tp / len(g) if g else float(not p))
            precisions.append(sum(ps) / len(ps))
            recalls.append(sum(rs) / len(rs))
    statistics.fmean(precisions), statistics.fmean(recalls)
    return time.perf_counter() - start


def queryeval_run(suite: Path, out: Path) -> float:
    """`queryeval run` in a fresh process, as a user would call it; seconds of wall time."""
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "queryeval",
            "run",
            str(suite),
            "--out",
            str(out),
            "--overwrite",
            "--no-progress",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def help_time() -> float:
    """Median wall time of `queryeval --help` over 7 runs."""
    times = []
    for _ in range(7):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "queryeval", "--help"], check=True, stdout=subprocess.DEVNULL
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def python_start() -> float:
    """Median wall time of a bare `python -c pass`, the floor for any CLI."""
    times = []
    for _ in range(7):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def compile_package() -> None:
    """Bytecode for the package, as a wheel install leaves it (an editable install does not,
    and PYTHONDONTWRITEBYTECODE stops Python caching it): `make` does the same."""
    import compileall

    import queryeval

    compileall.compile_dir(str(Path(queryeval.__file__).parent), quiet=1)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    compile_package()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        suite = write_suite(folder, n)
        runs = sorted(queryeval_run(suite, folder / "run") for _ in range(repeat))
        bare = min(bare_loop(folder) for _ in range(repeat))
        lines = (folder / "run" / "results.jsonl").read_bytes().count(b"\n")
        assert lines == n, lines
    ours = statistics.median(runs)
    help_s, py_s = help_time(), python_start()
    print(f"SDMX end to end, {n:,} cases (load, score, store, summary; no Excel)")
    print(
        f"  queryeval run : {ours:6.2f} s  {n / ours:9,.0f} cases/s  (median of {repeat}, "
        f"{runs[0]:.2f}-{runs[-1]:.2f} s; process start included)"
    )
    print(f"  bare loop     : {bare:6.2f} s  {n / bare:9,.0f} cases/s  (no validation, no store)")
    print(f"  ratio         : queryeval takes {ours / bare:.2f}x the bare loop's time")
    print(f"queryeval --help: {help_s * 1000:.0f} ms (python -c pass: {py_s * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
