"""Benchmark: the fixed cost of starting queryeval (issue 31, target 4).

Each side is a fresh process, run to completion, in interleaved rounds (hyperfine-style
repeated runs); its CPU seconds are those of the whole process tree (user + system, from
``resource.getrusage(RUSAGE_CHILDREN)`` before and after), beside its wall time; medians,
with the load around the rounds:

- ``python -c pass``: the interpreter alone (the floor);
- the seed-style loop (bench/_sdmx_loop.py) over a 10-case SDMX suite: what a user would
  otherwise run;
- ``queryeval --help`` (target: under 0.15 s of CPU);
- ``queryeval run`` on the SDMX example (examples/sdmx: 2 systems, its codelist file) with
  a JSON report only (target: under 0.5 s of CPU).

The package is byte-compiled first, as a wheel install leaves it. ``--against SRC`` adds
both queryeval sides run from another checkout's ``src`` folder (e.g. ``git archive
COMMIT src | tar -x -C /tmp/before``), interleaved with this one's: a before/after.

Usage: ``python bench/bench_startup.py [--rounds R] [--quick] [--against SRC]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE)]  # this checkout's queryeval
import _harness as h  # noqa: E402
from _sdmx_data import write_suite  # noqa: E402

EXAMPLE = h.ROOT / "examples" / "sdmx"
TARGETS = {"queryeval --help": 0.15, "queryeval run (SDMX example, JSON report)": 0.5}


def measured(
    cmd: Sequence[str], ok: tuple[int, ...] = (0,), src: Path | None = None
) -> dict[str, float]:
    """Wall and CPU seconds (the process tree's user + system) of one run of `cmd` (`src`:
    queryeval imported from that folder)."""
    env = None if src is None else {**os.environ, "PYTHONPATH": str(src)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False, env=env
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in ok:
        raise RuntimeError(f"{cmd} exited {done.returncode}:\n{done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"seconds": wall, "cpu_seconds": cpu}


def example_suite(folder: Path) -> Path:
    """The SDMX example with a JSON report only (no Excel, HTML or console report)."""
    for name in ("cases", "predictions"):
        shutil.copytree(EXAMPLE / name, folder / name)
    shutil.copy(EXAMPLE / "codelists.xml", folder)
    text = (EXAMPLE / "suite.yaml").read_text(encoding="utf-8")
    lines = ["reports: [json]" if line.startswith("reports:") else line
             for line in text.splitlines()]  # fmt: skip
    suite = folder / "suite.yaml"
    suite.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return suite


def main() -> None:
    def against(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--against", type=Path, help="another checkout's src folder")

    args = h.options(
        __doc__.splitlines()[0], full={"rounds": 11}, quick={"rounds": 5}, extra=against
    )
    import compileall

    compileall.compile_dir(str(h.ROOT / "src" / "queryeval"), quiet=1)
    if args.against is not None:
        args.against = args.against.resolve()
        assert (args.against / "queryeval" / "__init__.py").is_file(), "--against: a src folder"
        compileall.compile_dir(str(args.against / "queryeval"), quiet=1)
    py = sys.executable
    print(f"fixed cost of a process; {h.machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        suite = example_suite(folder / "example")
        loop_data = folder / "loop"
        write_suite(loop_data, 10)
        run = [py, "-m", "queryeval", "run", str(suite), "--out", str(folder / "out"),
               "--overwrite", "--no-progress"]  # fmt: skip
        sides = [
            h.Side("python -c pass", lambda: measured([py, "-c", "pass"]), 1),
            h.Side("seed-style loop, 10 cases",
                   lambda: measured([py, str(HERE / "_sdmx_loop.py"), str(loop_data)]), 1),
            h.Side("queryeval --help", lambda: measured([py, "-m", "queryeval", "--help"]), 1),
            # exit 1: the example's gate fails for one system, as it is meant to
            h.Side("queryeval run (SDMX example, JSON report)",
                   lambda: measured(run, ok=(0, 1)), 1),
        ]  # fmt: skip
        if args.against is not None:
            src = args.against
            sides += [
                h.Side("queryeval --help (against)",
                       lambda: measured([py, "-m", "queryeval", "--help"], src=src), 1),
                h.Side("queryeval run (against)", lambda: measured(run, ok=(0, 1), src=src), 1),
            ]  # fmt: skip
        timings = h.interleaved(sides, args.rounds)
        assert (folder / "out" / "summary.json").exists()
    print(h.table(timings, reference="python -c pass"))
    print(f"{'side':<44}{'cpu s (median)':>15}{'cpu range':>16}")
    for label, t in timings.items():
        cpus = [e["cpu_seconds"] for e in t.extra]
        print(f"{label:<44}{t.extra_median('cpu_seconds'):>15.3f}"
              f"{min(cpus):>8.3f}-{max(cpus):.3f}")  # fmt: skip
    base = timings["python -c pass"].extra_median("cpu_seconds")
    loop = timings["seed-style loop, 10 cases"].extra_median("cpu_seconds")
    for label, target in TARGETS.items():
        t = timings[label]
        cpu = t.extra_median("cpu_seconds")
        h.record(
            "startup",
            f"{label}, CPU of the process tree",
            f"{cpu:.3f} s CPU, {t.median:.3f} s wall",
            against=f"python -c pass {base:.3f} s CPU; seed-style loop {loop:.3f} s CPU",
            note=f"target < {target} s CPU: {'met' if cpu < target else 'missed'}; "
            f"median of {args.rounds}, load {t.load_range}",
        )


if __name__ == "__main__":
    main()
