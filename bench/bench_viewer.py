"""`queryeval view`, `history` and `compare` at scale: 20 synthetic runs written with the
real log writer (four of 200,000 cases, one suite; sixteen of 1,000 cases over four suites),
then, against a viewer server started in its own process: the runs page, a filtered cases
page, a case page, and the comparison of two 200k-case runs; and `queryeval history` over
the 20 runs and `queryeval compare` of two 200k-case runs as commands. Wall and CPU seconds
(the server's own, read from /proc) and peak memory beside each, the load before and after.

    .venv/bin/python bench/bench_viewer.py           # full sizes (about 5 minutes)
    .venv/bin/python bench/bench_viewer.py --quick   # 8 small runs, one try (seconds)
    .venv/bin/python bench/bench_viewer.py --pages-only  # the server's pages, not the commands

`make_run` is also what tests/test_viewer*.py build their runs with.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson

from queryeval.log import RUN, SUMMARY, LogWriter

_REASONS = ["wrong_result", "syntax_error", "schema_error", "timeout"]
_TABLES = ["orders", "customers", "products", "invoices", "shipments"]


def write_cases(path: Path, n: int, seed: int = 0) -> Path:
    """`n` cases (question, gold query, tags) as JSONL."""
    rng = random.Random(seed)
    with path.open("wb") as f:
        for i in range(n):
            table = _TABLES[i % len(_TABLES)]
            case = {
                "id": f"c{i:06d}",
                "tags": [f"table:{table}", rng.choice(["easy", "medium", "hard"])],
                "conversation": [
                    {
                        "role": "user",
                        "content": f"How many {table} have status {i % 7} (case {i})?",
                        "target": {"query": f"SELECT count(*) FROM {table} WHERE status = {i % 7}"},
                    }
                ],
            }
            f.write(orjson.dumps(case) + b"\n")
    return path


def make_run(
    run_dir: Path,
    cases_file: Path,
    n: int,
    *,
    systems: tuple[str, ...] = ("baseline",),
    suite: str = "bench",
    seed: int = 0,
    accuracy: float = 0.6,
    when: str = "2026-11-01T00:00:00+00:00",
    summary: bool = True,
) -> Path:
    """A run directory of `n` cases per system written with `queryeval.log.LogWriter`:
    results.jsonl, run.json (naming `cases_file`) and summary.json (pass rates with CIs)."""
    import numpy as np

    from queryeval import __version__
    from queryeval.stats import mean_ci

    rng = random.Random(seed)
    writer = LogWriter(run_dir)
    writer.open_for_append()
    verdicts: dict[str, list[int]] = {s: [] for s in systems}
    values: dict[str, list[float]] = {s: [] for s in systems}
    batch: list[bytes] = []
    for i in range(n):
        table = _TABLES[i % len(_TABLES)]
        for system in systems:
            ok = rng.random() < accuracy
            f1 = 1.0 if ok else round(rng.random() * 0.8, 3)
            reason = None if ok else rng.choice(_REASONS)
            details: dict[str, Any] = {"metrics": {"f1": f1}}
            if reason:
                details["failure"] = reason
            record = {
                "system": system,
                "case_id": f"c{i:06d}",
                "output": {
                    "attempts": [
                        {
                            "query": f"SELECT count(*) FROM {table} WHERE status = "
                            f"{i % 7 if ok else (i + 1) % 7}",
                            "language": "sql",
                            "latency_s": round(rng.random() * 2, 3),
                            "tokens_in": 900 + i % 100,
                            "tokens_out": 30 + i % 20,
                        }
                    ]
                },
                "scores": {
                    "execution_match": {
                        "value": 1.0 if ok else 0.0,
                        "status": "ok",
                        "passed": ok,
                        "details": details,
                    },
                    "results_f1": {"value": f1, "status": "ok", "passed": f1 >= 1.0},
                },
                "passed": ok,
                "error": None,
                "latency_s": round(rng.random() * 2, 3),
                "cost": 0.0001,
            }
            verdicts[system].append(1 if ok else 0)
            values[system].append(f1)
            batch.append(writer.encode(record))
        if len(batch) >= 5000:
            writer.write_lines(b"".join(batch))
            batch = []
    writer.write_lines(b"".join(batch))
    writer.close()
    writer.write_json(
        RUN,
        {
            "suite": suite,
            "suite_file": str(cases_file.parent / "suite.yaml"),
            "config": {
                "name": suite,
                "cases": cases_file.name,
                # the case verdict is execution_match's; results_f1 informs (weight 0)
                "scorers": [
                    {"name": "execution_match", "weight": 1.0, "required": False},
                    {"name": "results_f1", "weight": 0.0, "required": False},
                ],
            },
            "config_hash": f"{seed:064x}",
            "seed": 0,
            "status": "complete",
            "started_at": when,
            "finished_at": when,
            "versions": {"queryeval": __version__},
            "scorers": {"execution_match": {}, "results_f1": {}},
            "systems": [{"name": s} for s in systems],
        },
    )
    if summary:
        entries = {}
        for system in systems:
            v = np.asarray(verdicts[system], dtype=float)
            f = np.asarray(values[system], dtype=float)
            ci = mean_ci(v)
            fci = mean_ci(f)
            entries[system] = {
                "cases": n,
                "passed": int(v.sum()),
                "failed": int(n - v.sum()),
                "no_verdict": 0,
                "pass_rate": float(v.mean()) if n else None,
                "pass_rate_ci95": ci.as_dict() if ci else None,
                "flagged": False,
                "system_errors": 0,
                "scorers": {
                    "execution_match": {
                        "mean": float(v.mean()) if n else None,
                        "ci95": ci.as_dict() if ci else None,
                    },
                    "results_f1": {
                        "mean": float(f.mean()) if n else None,
                        "ci95": fci.as_dict() if fci else None,
                    },
                },
            }
        writer.write_json(SUMMARY, {"suite": suite, "n_cases": n, "systems": entries})
    return run_dir


def build(root: Path, big: int, small: int, suites: int = 4) -> list[Path]:
    """The runs: four of `big` cases (suite big), four of `small` in each of `suites`
    suites (20 runs with the default four)."""
    runs = []
    cases_dir = root.parent / "cases"
    cases_dir.mkdir(parents=True, exist_ok=True)
    big_cases = write_cases(cases_dir / "big-cases.jsonl", big)
    for k in range(4):
        runs.append(
            make_run(root / f"big-{k}", big_cases, big, suite="big", seed=k,
                     accuracy=0.6 + 0.02 * k, when=f"2026-11-0{k + 1}T00:00:00+00:00")
        )  # fmt: skip
    for s in range(suites):
        cases = write_cases(cases_dir / f"small-{s}-cases.jsonl", small, seed=s)
        for k in range(4):
            runs.append(
                make_run(root / f"small-{s}-{k}", cases, small, systems=("baseline", "tuned"),
                         suite=f"small-{s}", seed=10 * s + k, accuracy=0.5 + 0.05 * k,
                         when=f"2026-11-1{k}T00:00:00+00:00")
            )  # fmt: skip
    return runs


def _load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_peak(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=600) as r:
        return json.loads(r.read())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true",
        help="8 runs (4 of 400 cases), one try each (run_all --quick: a few seconds of CPU)",
    )  # fmt: skip
    parser.add_argument(
        "--pages-only", action="store_true", help="the server's pages only (not the commands)"
    )
    args = parser.parse_args()
    big, small = (400, 20) if args.quick else (200_000, 1_000)
    tries = 1 if args.quick else 3
    work = Path(tempfile.mkdtemp(prefix="bench-viewer-"))
    env = {**os.environ, "QUERYEVAL_INDEX_DIR": str(work / "index")}
    print(f"load {_load()}: writing {8 if args.quick else 20} runs (4 x {big:,} cases) under "
          f"{work}", flush=True)  # fmt: skip
    start = time.perf_counter()
    runs = build(work / "runs", big, small, suites=1 if args.quick else 4)
    print(f"  written in {time.perf_counter() - start:.1f} s", flush=True)
    rows: list[tuple[str, float, float, str, str]] = []

    # the commands first, on cold indexes: they build them
    exe = [sys.executable, "-m", "queryeval"]
    commands = [
        ("compare 2 big runs (cold: indexes built)", [*exe, "compare", str(runs[0]), str(runs[1])]),
        ("compare 2 big runs (indexes built)", [*exe, "compare", str(runs[0]), str(runs[1])]),
        ("history of all runs", [*exe, "history", str(work / "runs"), "-o", str(work / "h.html")]),
    ]
    if args.quick:  # one command, building two indexes (history: 4 s CPU more)
        commands = commands[1:2]
    for name, cmd in [] if args.pages_only else commands:
        load = _load()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        cpu = usage.ru_utime + usage.ru_stime
        del before
        rows.append((name, wall, cpu, f"{usage.ru_maxrss / 1024:.0f} MiB", f"{load}-{_load()}"))
        print(f"  {name}: {wall:.1f} s wall, {cpu:.1f} s CPU, {usage.ru_maxrss / 1024:.0f} MiB "
              f"(exit {os.waitstatus_to_exitcode(status)})", flush=True)  # fmt: skip

    server = subprocess.Popen(
        [*exe, "view", str(work / "runs"), "--port", "0"], env=env, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert server.stdout is not None
    url = server.stdout.readline().split()[2]
    base = url.rstrip("/")
    runs_page = _get(f"{base}/api/runs")
    ids = {r["name"]: r["id"] for r in runs_page["runs"]}
    a, b = ids["big-0"], ids["big-1"]
    _get(f"{base}/api/runs/{a}")  # warm: the background indexing reaches every run
    _get(f"{base}/api/runs/{b}")
    while True:  # wait for the background indexing of the other runs to end
        c0 = _cpu(server.pid)
        time.sleep(0.3 if args.quick else 1.0)
        if _cpu(server.pid) - c0 < 0.02:
            break
    case = _get(f"{base}/api/runs/{a}/cases?status=fail&limit=1")["rows"][0]["case_id"]
    checks = [
        ("runs page (/api/runs)", "/api/runs"),
        ("run page, big run", f"/api/runs/{a}"),
        ("cases: status=fail, page 1", f"/api/runs/{a}/cases?status=fail&limit=50"),
        ("cases: reason+tag+score+text, sorted", f"/api/runs/{a}/cases?reason=timeout&tag=hard"
         "&min=0.1&max=0.7&scorer=results_f1&q=orders&sort=latency&desc=1&limit=50"),
        ("cases: page 2000 of all", f"/api/runs/{a}/cases?offset=100000&limit=50"),
        ("one case", f"/api/runs/{a}/case?system=baseline&case_id={case}"),
        ("compare 2 big runs (stats + flipped page)", f"/api/compare?a={a}&b={b}"),
    ]  # fmt: skip
    for name, path in checks:
        times, cpus = [], []
        load = _load()
        for _ in range(tries):
            c0, t = _cpu(server.pid), time.perf_counter()
            _get(base + path)
            times.append(time.perf_counter() - t)
            cpus.append(_cpu(server.pid) - c0)
        times.sort()
        cpus.sort()
        mid = len(times) // 2
        rows.append((name, times[mid], cpus[mid], "", f"{load}-{_load()}"))
        print(f"  {name}: {times[mid]:.3f} s wall (median of {tries}), {cpus[mid]:.2f} s CPU",
              flush=True)  # fmt: skip
    peak = _rss_peak(server.pid)
    server.terminate()
    server.wait()
    print(f"\nserver peak memory {peak:.0f} MiB\n")
    print("| what | wall s | CPU s | peak memory | load |\n|---|---:|---:|---:|---|")
    for name, wall, cpu, mem, load in rows:
        print(f"| {name} | {wall:.3f} | {cpu:.2f} | {mem} | {load} |")
    print(f"| server (all of the above) | | | {peak:.0f} MiB | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
