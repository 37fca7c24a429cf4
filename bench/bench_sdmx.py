"""Benchmark: SDMX term selection end to end (load, score, store, summary; no Excel).

Sides, each a fresh process timed from outside (process start included), in interleaved
rounds, medians reported:

- the loop a user would otherwise write from the seed (bench/_sdmx_loop.py: json,
  per-dimension sets, macro P/R, nothing validated or stored), pinned to 1 core;
- `queryeval run` pinned to 1 core with `settings: {workers: 1}` (like for like);
- `queryeval run` on every usable core, as it runs by default (one forked worker per core);
  its ratio against the 1-core loop is printed with the core counts.

Also `queryeval --help` against `python -c pass` (interleaved, medians).

    .venv/bin/python bench/bench_sdmx.py [--cases 100000] [--rounds 5] [--quick]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

import _harness as h  # noqa: E402
from _sdmx_data import write_suite  # noqa: E402

LOOP = "seed-style loop, 1 core"
ONE = "queryeval run, 1 core"


def compile_package() -> None:
    """Bytecode for the package, as a wheel install leaves it (an editable install does not,
    and PYTHONDONTWRITEBYTECODE stops Python caching it): `make` does the same."""
    import compileall

    compileall.compile_dir(str(h.ROOT / "src" / "queryeval"), quiet=1)


def main() -> None:
    args = h.options(
        __doc__.splitlines()[0],
        full={"cases": 100_000, "rounds": 5},
        quick={"cases": 20_000, "rounds": 3},
    )
    n, usable = args.cases, h.cores()
    compile_package()
    print(f"SDMX end to end, {n:,} cases (load, score, store, summary; no Excel); {h.machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        suite = write_suite(folder, n)
        single = folder / "suite_1core.yaml"
        single.write_text(suite.read_text() + "settings: {workers: 1}\n")
        sides = [
            h.Side(
                LOOP,
                lambda: h.run_child(
                    [sys.executable, str(HERE / "_sdmx_loop.py"), str(folder)], cores=1
                ),
                cores=1,
            ),
            h.Side(ONE, lambda: h.queryeval_run(single, folder / "run1", cores=1), cores=1),
        ]
        if usable > 1:
            every = f"queryeval run, {usable} cores"
            sides.append(
                h.Side(
                    every,
                    lambda: h.queryeval_run(suite, folder / "run", cores=usable),
                    cores=usable,
                )
            )
        timings = h.interleaved(sides, args.rounds)
        for run in ("run1", "run") if usable > 1 else ("run1",):
            lines = (folder / run / "results.jsonl").read_bytes().count(b"\n")
            assert lines == n, (run, lines)
    print(h.table(timings, reference=LOOP, per=(n, "cases/s")))
    loop, one = timings[LOOP], timings[ONE]
    h.record(
        "sdmx",
        f"SDMX end to end, {n:,} cases, 1 core",
        f"{n / one.median:,.0f} cases/s ({one.median:.2f} s)",
        against=f"seed-style loop {n / loop.median:,.0f} cases/s, 1 core",
        note=f"queryeval takes {h.ratio(one, loop)} the loop's time; median of {args.rounds}",
    )
    if usable > 1:
        par = timings[f"queryeval run, {usable} cores"]
        h.record(
            "sdmx",
            f"SDMX end to end, {n:,} cases, {usable} cores (default)",
            f"{n / par.median:,.0f} cases/s ({par.median:.2f} s)",
            against=f"seed-style loop {n / loop.median:,.0f} cases/s, 1 core",
            note=f"{h.ratio(par, loop)} the loop's time; median of {args.rounds}",
        )

    py = [sys.executable, "-c", "pass"]
    helps = h.interleaved(
        [
            h.Side(
                "queryeval --help",
                lambda: h.run_child([*py[:1], "-m", "queryeval", "--help"], cores=1),
                1,
            ),
            h.Side("python -c pass", lambda: h.run_child(py, cores=1), cores=1),
        ],
        7,
        progress=False,
    )
    print(h.table(helps, reference="python -c pass"))
    q, p = helps["queryeval --help"], helps["python -c pass"]
    h.record(
        "cli",
        "queryeval --help",
        f"{q.median * 1000:.0f} ms",
        against=f"python -c pass {p.median * 1000:.0f} ms",
        note="median of 7, interleaved",
    )


if __name__ == "__main__":
    main()
