"""Benchmark: from which suite size the Ray executor pays off against the local one.

Two suite shapes, each at several sizes, every side a `queryeval run` in a fresh process;
interleaved rounds, medians, wall and CPU seconds, the load average beside each figure:

- SDMX saved predictions (`_sdmx_data`): the large-run path (byte-range shards, pure
  tasks; locally, forked workers);
- SQL execution (`_sql_data`, DuckDB): (system, case) batches scored in tasks, every query
  in the database's engine actor (locally, forked workers with their own connections).

Sides:

- `local`: the default executor;
- `ray, joined`: `--executor ray --address ADDR`: a cluster started once by this script (in
  a child process holding `ray.init`, ended with it: no `ray stop`, which would end other
  users' clusters on the machine) is joined by each run;
- `ray, new cluster`: `--executor ray` alone: the command starts a local Ray cluster sized
  to the machine, runs, and shuts it down (what a user without a cluster gets).

CPU: the run's process tree (its own and its reaped children's, from `getrusage`), plus,
for a joined cluster, what the cluster's processes spent during the run (from /proc).
`--scaling` adds one task at a time against two on the joined cluster (the largest SDMX
size). Ray's files (sockets and logs in TMPDIR) go to a temporary folder; token
authentication is off (`RAY_AUTH_MODE=disabled`: one machine, clusters this script starts).

    .venv/bin/python bench/bench_ray.py [--sdmx 1000,10000,100000] [--sql 300,3000]
                                        [--rounds 3] [--scaling] [--quick]
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

import _harness as h  # noqa: E402
import _sdmx_data  # noqa: E402
import _sql_data  # noqa: E402

HOLD_CLUSTER = """
import logging, sys, ray
ray.init(num_cpus={cpus}, include_dashboard=False, logging_level=logging.WARNING)
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()  # until the benchmark closes it
ray.shutdown()
"""
SIDES = ("local", "ray, joined", "ray, new cluster")


def tree_cpu(pid: int) -> float:
    """CPU seconds of process `pid` and its live descendants, with the children they
    reaped (utime, stime, cutime, cstime of /proc/<pid>/stat)."""
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        ticks[int(entry.name)] = sum(int(x) for x in fields[11:15])
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += ticks.get(p, 0)
        todo += children.get(p, [])
    return total / os.sysconf("SC_CLK_TCK")


def timed_run(suite: Path, out: Path, cluster: int | None = None) -> dict[str, float]:
    """`queryeval run` in a fresh process: wall seconds, and CPU seconds of its process tree
    (and of the cluster held by process `cluster` meanwhile)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    held = tree_cpu(cluster) if cluster else 0.0
    wall = h.queryeval_run(suite, out)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if cluster:
        cpu += tree_cpu(cluster) - held
    return {"seconds": wall, "cpu": cpu}


def measure(
    shape: str, write: Callable[[Path, int], Path], n: int, folder: Path, joined: str, holder: int
) -> dict[str, h.Timing]:
    """The three sides on a `shape` suite of `n` cases; their summaries checked equal."""
    suite = write(folder / f"{shape}-{n}", n)
    variants = {
        "local": "{executor: local}",
        "ray, joined": f"{{executor: ray, ray: {{address: '{joined}'}}}}",
        "ray, new cluster": "{executor: ray}",
    }
    out = folder / "runs" / f"{shape}-{n}"
    sides = []
    for i, (label, settings) in enumerate(variants.items()):
        path = suite.with_name(f"suite_{i}.yaml")
        path.write_text(suite.read_text() + f"settings: {settings}\n")
        cluster = holder if label == "ray, joined" else None
        sides.append(
            h.Side(label, lambda p=path, o=out / str(i), c=cluster: timed_run(p, o, c), "all")
        )
    print(f"\n{shape}, {n:,} cases")
    timings = h.interleaved(sides, ARGS.rounds)
    print(h.table(timings, reference="local", per=(n, "cases/s")))
    for t in timings.values():
        print(f"  {t.label}: CPU {t.extra_median('cpu'):.2f} s (median)")
    summaries = [_without_times(out / str(i) / "summary.json") for i in range(len(sides))]
    if any(s != summaries[0] for s in summaries):
        print(f"  WARNING: the executors' {shape} summaries differ")
    return timings


def _without_times(path: Path) -> Any:
    def strip(data: Any) -> Any:
        if isinstance(data, dict):
            return {k: strip(v) for k, v in data.items() if k not in ("latency_s", "elapsed_s")}
        return [strip(v) for v in data] if isinstance(data, list) else data

    return strip(json.loads(path.read_text()))


def payoff(shape: str, results: dict[int, dict[str, h.Timing]]) -> None:
    """Each Ray side's wall and CPU over the local executor's at every size, and what a
    case costs beyond the smallest size (the fixed cost left out)."""
    sizes = sorted(results)
    for label in SIDES[1:]:
        walls = ", ".join(
            f"{n:,}: {results[n][label].median / results[n]['local'].median:.2f}x" for n in sizes
        )
        cpu = {n: {k: t.extra_median("cpu") for k, t in results[n].items()} for n in sizes}
        cpus = ", ".join(f"{n:,}: {cpu[n][label] / cpu[n]['local']:.2f}x" for n in sizes)
        pays = [n for n in sizes if results[n][label].median < results[n]["local"].median]
        note = f"wall {walls}; CPU {cpus}"
        if len(sizes) > 1:
            lo, hi = sizes[0], sizes[-1]

            def per_case(side: str, lo: int = lo, hi: int = hi, cpu: Any = cpu) -> float:
                return (cpu[hi][side] - cpu[lo][side]) / (hi - lo) * 1e6

            note += (
                f"; CPU per case {lo:,}->{hi:,}: {per_case(label):.0f} us against local "
                f"{per_case('local'):.0f} us"
            )
        ones = [x[0] for n in sizes for side in (label, "local") for x in results[n][side].loads]
        h.record(
            "ray",
            f"{shape}: {label} pays off from",
            f"{pays[0]:,} cases" if pays else f"no size measured (up to {sizes[-1]:,})",
            against="local executor",
            note=f"{note}; median of {ARGS.rounds}; load {min(ones):.1f}-{max(ones):.1f}",
        )


def scaling(n: int, folder: Path, joined: str, holder: int) -> None:
    """One task at a time against two on the joined cluster, beside the local executor's
    one process against two forked workers in the same rounds."""
    suite = _sdmx_data.write_suite(folder / "scaling", n)
    cpus, at = h.cores(), f"executor: ray, ray: {{address: '{joined}', task_cpus:"
    variants = {
        "ray, 1 worker": f"{{{at} {cpus}}}}}",
        "ray, 2 workers": f"{{{at} {cpus / 2:g}}}}}",
        "local, 1 process": "{executor: local, workers: 1}",
        "local, 2 workers": "{executor: local, workers: 2}",
    }
    sides = []
    for i, (label, settings) in enumerate(variants.items()):
        path = suite.with_name(f"suite_{i}.yaml")
        path.write_text(suite.read_text() + f"settings: {settings}\n")
        cluster = holder if label.startswith("ray") else None
        out = folder / "runs" / f"scaling-{i}"
        sides.append(h.Side(label, lambda p=path, o=out, c=cluster: timed_run(p, o, c), 1 + i % 2))
    timings = h.interleaved(sides, ARGS.rounds)
    print(h.table(timings, reference="ray, 1 worker", per=(n, "cases/s")))
    w1, w2 = timings["ray, 1 worker"], timings["ray, 2 workers"]
    l1, l2 = timings["local, 1 process"], timings["local, 2 workers"]
    h.record(
        "ray",
        f"SDMX {n:,} cases on a joined cluster, 2 workers",
        f"{n / w2.median:,.0f} cases/s ({w2.median:.2f} s)",
        against=f"1 worker {n / w1.median:,.0f} cases/s ({w1.median:.2f} s)",
        note=f"speed-up {w1.median / w2.median:.2f}x (local 1 -> 2 workers at the same time: "
        f"{l1.median / l2.median:.2f}x); median of {ARGS.rounds}; load {w2.load_range}",
    )


def _sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> None:
    global ARGS
    ARGS = h.options(
        __doc__.splitlines()[0],
        full={"sdmx": "1000,10000,100000", "sql": "300,3000", "rounds": 3},
        quick={"sdmx": "1000,10000", "sql": "300", "rounds": 2},
        extra=lambda p: p.add_argument("--scaling", action="store_true"),
    )
    try:
        import ray  # noqa: F401
    except ImportError:
        print("bench_ray: ray is not installed (pip install 'queryeval[ray]'); skipped")
        return
    print(f"Ray executor against the local one; {h.machine()}")
    with tempfile.TemporaryDirectory(prefix="qe-bench-ray-", dir="/tmp") as tmp:
        folder = Path(tmp)
        # one machine, clusters started and joined by this script: Ray's token check is off
        # (a run with its own new cluster would write a new token over the joined one's)
        os.environ.update(HOME=str(folder), TMPDIR=str(folder), RAY_AUTH_MODE="disabled")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(h.ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_CLUSTER.format(cpus=h.cores())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert holder.stdout is not None
            joined = holder.stdout.readline().strip()
            assert joined, "the cluster did not start"
            time.sleep(2)  # its first workers started
            for shape, write, sizes in (
                ("SDMX", _sdmx_data.write_suite, _sizes(ARGS.sdmx)),
                ("SQL", _sql_data.write_suite, _sizes(ARGS.sql)),
            ):
                if sizes:
                    results = {
                        n: measure(shape, write, n, folder, joined, holder.pid) for n in sizes
                    }
                    payoff(shape, results)
            if ARGS.scaling:
                scaling(max(_sizes(ARGS.sdmx) or [10_000]), folder, joined, holder.pid)
        finally:
            if holder.stdin is not None:
                holder.stdin.close()
            holder.wait(timeout=60)


ARGS: Any = None

if __name__ == "__main__":
    main()
