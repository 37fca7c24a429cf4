"""Benchmark: `queryeval run` end to end, this tree against another checkout (before/after).

Both sides are fresh processes timed from outside (process start included), interleaved
rounds, medians; each side imports queryeval from its own `src` (PYTHONPATH). Suites: SDMX
(`bench/_sdmx_data.py`) on every usable core (the sharded run) and pinned to 1 core with
`settings: {workers: 1}` (the in-process loop), and the SQL and Weaviate example suites.
The summaries of the two sides are compared too (latencies aside).

`--examples` checks instead that every example suite (examples/*/*.yaml) gives the same
summary.json, latencies aside, before and after and, after, on every executor: in process
(`workers: 1`), two forked workers (`workers: 2`, and `shard_min_cases: 1` so that JSONL
suites go through the sharded pass) and a local Ray cluster (`executor: ray`, one cluster
for every suite). Each side runs its suites in one process (queryeval from its own `src`).

    git archive BASE | tar -x -C /tmp/base
    .venv/bin/python bench/bench_runner_ab.py --before /tmp/base [--cases 100000] [--rounds 5]
    .venv/bin/python bench/bench_runner_ab.py --before /tmp/base --examples [--no-ray]
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


def example_suites() -> list[Path]:
    """The example suite files (a YAML file with `name:` and `cases:` at the top)."""
    found = []
    for path in sorted((h.ROOT / "examples").glob("*/*.yaml")):
        keys = {line.split(":", 1)[0] for line in path.read_text().splitlines() if ":" in line}
        if {"name", "cases"} <= keys:
            found.append(path)
    return found


# run in a child process with queryeval from one side's src: each suite on each executor
_CHILD = """
import json, sys, traceback
from pathlib import Path
from queryeval.runner import load_suite, run_suite
out_root, executors, suites = Path(sys.argv[1]), sys.argv[2].split(","), sys.argv[3:]
forked = []
try:
    from queryeval.runner import _executors
    _run = _executors.LocalExecutor.run
    def _spy(self, *args):
        forked.append(self.workers)
        return _run(self, *args)
    _executors.LocalExecutor.run = _spy
except AttributeError:
    pass
SETTINGS = {"default": {}, "inline": {"workers": 1},
            "workers2": {"workers": 2, "shard_min_cases": 1}, "ray": {"executor": "ray"}}
if "ray" in executors:
    import ray
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             namespace="queryeval")
for suite_path in suites:
    for ex in executors:
        out = out_root / f"{Path(suite_path).parent.name}-{Path(suite_path).stem}-{ex}"
        suite = load_suite(suite_path)
        update = {**SETTINGS[ex], "cache_dir": str(out_root / f"cache-{ex}")}
        suite = suite.model_copy(update={"settings": suite.settings.model_copy(update=update)})
        forked.clear()
        try:
            run_suite(suite, out, progress=False, write_reports=False)
            print(json.dumps({"suite": suite_path, "executor": ex, "out": str(out),
                              "forked": max(forked, default=0)}), flush=True)
        except BaseException as exc:
            print(json.dumps({"suite": suite_path, "executor": ex, "error":
                              f"{type(exc).__name__}: {str(exc)[:300]}"}), flush=True)
"""


def _side(src: Path, executors: list[str], out: Path, suites: list[Path]) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, "-c", _CHILD, str(out), ",".join(executors), *map(str, suites)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode:
        print(done.stderr[-3000:], file=sys.stderr)
    return rows


def _plain_bytes(run: Path) -> bytes:
    """summary.json without its latency figures, as bytes (key order kept)."""
    return json.dumps(_plain(json.loads((run / "summary.json").read_bytes())), indent=2).encode()


def compare_examples(before: Path, ray: bool, only: list[str] | None = None) -> bool:
    """Every example suite's summary before (default settings) and after (each executor);
    True when every one is identical, latencies aside. `only`: suites whose path has one
    of these words."""
    suites = [s for s in example_suites() if not only or any(w in str(s) for w in only)]
    executors = ["inline", "workers2", *(["ray"] if ray else [])]
    print(f"example suites, before ({before}) and after (this tree); {h.machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        b = _side(before / "src", ["default"], Path(tmp) / "before", suites)
        a = _side(h.ROOT / "src", executors, Path(tmp) / "after", suites)
        ref = {row["suite"]: row for row in b}
        ok = True
        print("\n| suite | " + " | ".join(executors) + " |")
        print("|---" * (len(executors) + 1) + "|")
        for suite in map(str, suites):
            base = ref.get(suite, {})
            cells = []
            for ex in executors:
                row = next((r for r in a if r["suite"] == suite and r["executor"] == ex), {})
                if "error" in base:
                    cells.append("skipped (before: " + base["error"][:60] + ")")
                elif "out" not in row:
                    ok = False
                    cells.append("FAILED " + row.get("error", "no result")[:80])
                else:
                    same = _plain_bytes(Path(base["out"])) == _plain_bytes(Path(row["out"]))
                    ok &= same
                    how = f" ({row['forked']} forked)" if row.get("forked", 0) > 1 else ""
                    cells.append(("identical" if same else "DIFFERS") + how)
            name = Path(suite).relative_to(h.ROOT)
            print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\n{h.machine()}")
    return ok


def main() -> None:
    def extra(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--before", type=Path, help="the other checkout (needed)")
        parser.add_argument("--only", nargs="*", default=None, help="suites whose name has")
        parser.add_argument("--examples", action="store_true", help="compare summaries only")
        parser.add_argument("--no-ray", action="store_true", help="--examples without Ray")

    args = h.options(
        __doc__.splitlines()[0],
        full={"cases": 100_000, "rounds": 5},
        quick={"cases": 20_000, "rounds": 3},
        extra=extra,
    )
    if args.before is None:  # run_all runs every script: this one needs a checkout to compare
        print("skipped: give --before DIR (another checkout) to compare with")
        return
    if args.examples:
        sys.exit(0 if compare_examples(args.before.resolve(), not args.no_ray, args.only) else 1)
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
