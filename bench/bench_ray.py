"""Benchmark: the Ray executor against the local one on a large SDMX run, and how its
throughput grows from one worker to two.

Sides, each `queryeval run` in a fresh process timed from outside (process start
included), interleaved rounds, medians, the load average beside each figure:

- `local`: the default executor (forked workers, one per core);
- `ray, new cluster`: `--executor ray` alone: the command starts a local Ray cluster sized
  to the machine, runs, and shuts it down (what a user without a cluster gets);
- `ray, joined`: `--executor ray --address ADDR`: a cluster started once by this script
  (in a child process holding `ray.init`, ended with it: no `ray stop`, which would end
  other users' clusters on the machine) is joined by each run;
- scaling: on the joined cluster, one task at a time (`task_cpus` = the cluster's CPUs)
  against two (`task_cpus` = half of them), beside the local executor's one process against
  two forked workers in the same rounds (what this machine allowed at that moment).

Ray's files (sockets and logs in TMPDIR) go to a temporary folder; token authentication is
off (`RAY_AUTH_MODE=disabled`: one machine, clusters this script starts).

    .venv/bin/python bench/bench_ray.py [--cases 100000] [--rounds 3] [--quick]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

import _harness as h  # noqa: E402
from _sdmx_data import write_suite  # noqa: E402

HOLD_CLUSTER = """
import logging, sys, ray
ray.init(num_cpus={cpus}, include_dashboard=False, logging_level=logging.WARNING)
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()  # until the benchmark closes it
ray.shutdown()
"""


def _variant(suite: Path, name: str, settings: str) -> Path:
    path = suite.with_name(f"suite_{name}.yaml")
    path.write_text(suite.read_text() + f"settings: {settings}\n")
    return path


def main() -> None:
    args = h.options(
        __doc__.splitlines()[0],
        full={"cases": 100_000, "rounds": 3},
        quick={"cases": 20_000, "rounds": 2},
    )
    try:
        import ray  # noqa: F401
    except ImportError:
        print("bench_ray: ray is not installed (pip install 'queryeval[ray]'); skipped")
        return
    n, cpus = args.cases, h.cores()
    print(f"Ray executor, SDMX {n:,} cases; {h.machine()}")
    with tempfile.TemporaryDirectory(prefix="qe-bench-ray-", dir="/tmp") as tmp:
        folder = Path(tmp)
        # one machine, clusters started and joined by this script: Ray's token check is off
        # (a run with its own new cluster would write a new token over the joined one's)
        os.environ.update(HOME=str(folder), TMPDIR=str(folder), RAY_AUTH_MODE="disabled")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(h.ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        suite = write_suite(folder / "suite", n)
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_CLUSTER.format(cpus=cpus)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert holder.stdout is not None
            address = holder.stdout.readline().strip()
            assert address, "the cluster did not start"
            local = _variant(suite, "local", "{executor: local}")
            fresh = _variant(suite, "fresh", "{executor: ray}")
            joined = _variant(suite, "joined", f"{{executor: ray, ray: {{address: '{address}'}}}}")
            one = _variant(
                suite, "one", f"{{executor: ray, ray: {{address: '{address}', task_cpus: {cpus}}}}}"
            )
            two = _variant(
                suite,
                "two",
                f"{{executor: ray, ray: {{address: '{address}', task_cpus: {cpus / 2:g}}}}}",
            )
            out = folder / "runs"
            sides = [
                h.Side("local (forked workers)", lambda: h.queryeval_run(local, out / "l"), cpus),
                h.Side("ray, new cluster", lambda: h.queryeval_run(fresh, out / "f"), cpus),
                h.Side("ray, joined", lambda: h.queryeval_run(joined, out / "j"), cpus),
            ]
            timings = h.interleaved(sides, args.rounds)
            print(h.table(timings, reference="local (forked workers)", per=(n, "cases/s")))
            summaries = {(out / s / "summary.json").read_bytes() for s in ("l", "f", "j")}
            assert len(summaries) == 1, "the executors' summaries differ"
            serial = _variant(suite, "serial", "{executor: local, workers: 1}")
            scaling = h.interleaved(
                [
                    h.Side("ray, 1 worker", lambda: h.queryeval_run(one, out / "1"), 1),
                    h.Side("ray, 2 workers", lambda: h.queryeval_run(two, out / "2"), 2),
                    # the same step on this machine at the same moment, for reference
                    h.Side("local, 1 process", lambda: h.queryeval_run(serial, out / "s"), 1),
                    h.Side("local, 2 workers", lambda: h.queryeval_run(local, out / "l"), 2),
                ],
                args.rounds,
            )
            print(h.table(scaling, reference="ray, 1 worker", per=(n, "cases/s")))
        finally:
            if holder.stdin is not None:
                holder.stdin.close()
            holder.wait(timeout=60)
    base = timings["local (forked workers)"]
    for label in ("ray, new cluster", "ray, joined"):
        t = timings[label]
        h.record(
            "ray",
            f"SDMX {n:,} cases, {label}",
            f"{n / t.median:,.0f} cases/s ({t.median:.2f} s)",
            against=f"local executor {n / base.median:,.0f} cases/s ({base.median:.2f} s)",
            note=f"{h.ratio(t, base)} the local time; median of {args.rounds}; load {t.load_range}",
        )
    w1, w2 = scaling["ray, 1 worker"], scaling["ray, 2 workers"]
    l1, l2 = scaling["local, 1 process"], scaling["local, 2 workers"]
    h.record(
        "ray",
        f"SDMX {n:,} cases on a joined cluster, 2 workers",
        f"{n / w2.median:,.0f} cases/s ({w2.median:.2f} s)",
        against=f"1 worker {n / w1.median:,.0f} cases/s ({w1.median:.2f} s)",
        note=f"speed-up {w1.median / w2.median:.2f}x (local 1 -> 2 workers at the same time: "
        f"{l1.median / l2.median:.2f}x); median of {args.rounds}; load {w2.load_range}",
    )


if __name__ == "__main__":
    main()
