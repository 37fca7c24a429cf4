"""Benchmark: `queryeval run` end to end, this tree against another checkout (before/after).

Both sides are fresh processes timed from outside (process start included), interleaved
rounds, medians; each side imports queryeval from its own `src` (PYTHONPATH). Suites: SDMX
(`bench/_sdmx_data.py`) on every usable core (the sharded run) and pinned to 1 core with
`settings: {workers: 1}` (the in-process loop), and the SQL and Weaviate example suites.
The summaries of the two sides are compared too (latencies aside).

    git archive BASE | tar -x -C /tmp/base
    .venv/bin/python bench/bench_runner_ab.py --before /tmp/base [--cases 100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

import _harness as h  # noqa: E402
from _sdmx_data import write_suite  # noqa: E402


def run(src: Path, suite: Path, out: Path, cores: int) -> dict[str, float]:
    """`queryeval run` with queryeval imported from `src`: wall seconds, and the CPU
    seconds of the process and its workers (steadier than wall time on a loaded machine)."""
    cmd = [sys.executable, "-m", "queryeval", "run", str(suite), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(src)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = h.run_child([*cmd, "--overwrite", "--no-progress"], cores=cores, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"seconds": wall, "cpu": cpu}


def _plain(x: object) -> object:
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items() if "latency" not in k}
    if isinstance(x, list):
        return [_plain(v) for v in x]
    return x


def same_summary(a: Path, b: Path) -> bool:
    """Whether two runs' summary.json files agree, latencies aside."""
    read = [json.loads((p / "summary.json").read_bytes()) for p in (a, b)]
    return _plain(read[0]) == _plain(read[1])


def main() -> None:
    def extra(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--before", type=Path, help="the other checkout (needed)")
        parser.add_argument("--only", nargs="*", default=None, help="suites whose name has")

    args = h.options(
        __doc__.splitlines()[0],
        full={"cases": 100_000, "rounds": 5},
        quick={"cases": 20_000, "rounds": 3},
        extra=extra,
    )
    if args.before is None:  # run_all runs every script: this one needs a checkout to compare
        print("skipped: give --before DIR (another checkout) to compare with")
        return
    before, after = args.before.resolve() / "src", h.ROOT / "src"
    for src in (before, after):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)
    usable = h.cores()
    print(f"queryeval run, before ({args.before}) and after (this tree); {h.machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sdmx = write_suite(folder, args.cases)
        single = folder / "suite_1core.yaml"
        single.write_text(sdmx.read_text() + "settings: {workers: 1}\n")
        suites = [
            (f"SDMX {args.cases:,}, {usable} cores", sdmx, usable),
            (f"SDMX {args.cases:,}, 1 core", single, 1),
            ("SQL example", h.ROOT / "examples" / "sql" / "suite.yaml", 1),
            ("Weaviate example", h.ROOT / "examples" / "weaviate" / "suite.yaml", 1),
        ]
        if args.only:
            suites = [x for x in suites if any(w.lower() in x[0].lower() for w in args.only)]
        rows = []
        for k, (name, suite, cores) in enumerate(suites):
            outs = {side: folder / f"out{k}-{side}" for side in ("before", "after")}
            sides = [
                h.Side(
                    f"{name}: {side}",
                    (lambda s=src, o=outs[side], su=suite, c=cores: run(s, su, o, c)),
                    cores=cores,
                )
                for side, src in (("before", before), ("after", after))
            ]
            timings = h.interleaved(sides, args.rounds)
            b, a = timings[sides[0].label], timings[sides[1].label]
            same = same_summary(outs["before"], outs["after"])
            rows.append((name, b, a, same))
            cpu = a.extra_median("cpu") / b.extra_median("cpu")
            h.record("runner_ab", name, f"{a.median:.2f} s after, {b.median:.2f} s before",
                     against=f"after/before {a.median / b.median:.3f} (CPU {cpu:.3f})",
                     note=f"summary {'identical' if same else 'DIFFERS'}")  # fmt: skip
        print("\n| suite | before (median) | after (median) | after/before | CPU after/before "
              "| summary | load |\n|---|---|---|---|---|---|---|")  # fmt: skip
        for name, b, a, same in rows:
            verdict = "identical" if same else "DIFFERS"
            cpu = a.extra_median("cpu") / b.extra_median("cpu")
            print(f"| {name} | {b.median:.2f} s | {a.median:.2f} s | {a.median / b.median:.3f} | "
                  f"{cpu:.3f} | {verdict} | {b.load_range}, {a.load_range} |")  # fmt: skip


if __name__ == "__main__":
    main()
