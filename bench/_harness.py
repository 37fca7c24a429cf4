"""What every benchmark here shares, so that each figure is honest in the same way:

- both sides run in the same script, in interleaved rounds (A B, B A, A B, ...: neither side
  always runs first or always right after the other), and the *median* of each side's rounds
  is reported beside its range; a ratio is always median against median;
- the cores each side may use are stated beside it (`pinned` restricts a child process to n
  CPUs; in-process sides use the script's cores);
- the machine's load average (1, 5, 15 min, from `os.getloadavg`, as `uptime` shows it) is
  recorded before and after every measurement and printed beside its figures;
- `--quick` (smaller sizes, fewer rounds) for `bench/run_all.py --quick`;
- `record()` prints a figure and, when bench/run_all.py asks (`QE_BENCH_RESULTS`), appends it
  as a JSON line so that run_all can print one summary table of the whole run.

Why hand-written: pyperf and pytest-benchmark time one function in isolation (pyperf
spawns worker processes per benchmark and calibrates loops); these benchmarks compare two
whole workflows (often a fresh process each) side by side and must report load and cores,
which neither tool records.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS_ENV = "QE_BENCH_RESULTS"


def load_average() -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages (what `uptime` prints)."""
    return os.getloadavg()


def cores() -> int:
    """CPUs this process may run on (its affinity), which may be fewer than the machine's."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def machine() -> str:
    """One line: CPUs, the process's cores and the current load average."""
    return f"{os.cpu_count()} CPUs ({cores()} usable here), load {fmt_load(load_average())}"


def fmt_load(load: Sequence[float]) -> str:
    return "/".join(f"{x:.2f}" for x in load)


@dataclass
class Side:
    """One side of a comparison: a label, how many cores it may use, and its measurement.

    `run` returns its own seconds as a float (a child process timing itself, say), a dict
    with "seconds" and any other figures (kept in `extra`), or anything else (None) to be
    timed around the call.
    """

    label: str
    run: Callable[[], Any]
    cores: int | str


@dataclass
class Timing:
    """A side's rounds: seconds per round, extra figures per round, load before and after."""

    label: str
    cores: int | str
    seconds: list[float] = field(default_factory=list)
    extra: list[dict[str, Any]] = field(default_factory=list)
    loads: list[tuple[float, float, float]] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def extra_median(self, key: str) -> float:
        return statistics.median(e[key] for e in self.extra)

    @property
    def load_range(self) -> str:
        ones = [x[0] for x in self.loads]
        return f"{min(ones):.1f}-{max(ones):.1f}"


def interleaved(sides: Sequence[Side], rounds: int, *, progress: bool = True) -> dict[str, Timing]:
    """Run every side once per round, the order reversed every other round; returns each
    side's timings by label. The 1-minute load is taken before and after every run."""
    out = {s.label: Timing(s.label, s.cores) for s in sides}
    for r in range(rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for side in order:
            before = load_average()
            start = time.perf_counter()
            got = side.run()
            wall = time.perf_counter() - start
            timing = out[side.label]
            if isinstance(got, dict):
                timing.seconds.append(float(got["seconds"]))
                timing.extra.append(got)
            elif isinstance(got, int | float) and not isinstance(got, bool):
                timing.seconds.append(float(got))
            else:
                timing.seconds.append(wall)
            timing.loads += [before, load_average()]
        if progress:
            done = ", ".join(f"{t.label} {t.seconds[-1]:.2f} s" for t in out.values())
            print(f"  round {r + 1}/{rounds}: {done}", flush=True)
    return out


def table(
    timings: Mapping[str, Timing],
    *,
    reference: str | None = None,
    per: tuple[float, str] | None = None,
) -> str:
    """A plain-text table: median, range, rounds, cores, load (1-min, min-max over the
    rounds), an optional rate (`per` = (units, "cases/s")) and each median over the
    reference's median."""
    head = ["side", "median s", "range s", "rounds", "cores", "load"]
    if per:
        head.append(per[1])
    if reference:
        head.append("/ reference")
    rows = [head]
    ref = timings[reference].median if reference else None
    for t in timings.values():
        row = [
            t.label,
            f"{t.median:.3f}",
            f"{min(t.seconds):.3f}-{max(t.seconds):.3f}",
            str(len(t.seconds)),
            str(t.cores),
            t.load_range,
        ]
        if per:
            row.append(f"{per[0] / t.median:,.0f}")
        if ref:
            row.append(f"{t.median / ref:.2f}x")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = []
    for k, r in enumerate(rows):
        cells = [r[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    note = "load: the 1-minute load average around the rounds (lowest-highest)"
    lines.append(f"({note}{f'; reference: {reference}' if reference else ''})")
    return "\n".join(lines)


def record(bench: str, figure: str, value: str, *, against: str = "", note: str = "") -> None:
    """Print one headline figure (with the load now) and hand it to run_all when it asks."""
    load = fmt_load(load_average())
    line = f"[{bench}] {figure}: {value}" + (f" | against {against}" if against else "")
    print(line + (f" | {note}" if note else "") + f" | load {load}", flush=True)
    target = os.environ.get(RESULTS_ENV)
    if target:
        entry = {
            "bench": bench,
            "figure": figure,
            "value": value,
            "against": against,
            "note": note,
            "load": load,
            "cores": cores(),
        }
        with open(target, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


def ratio(a: Timing, b: Timing) -> str:
    """`a`'s median over `b`'s, with the cores of each when they differ."""
    text = f"{a.median / b.median:.2f}x"
    if a.cores != b.cores:
        text += f" ({a.cores} vs {b.cores} cores)"
    return text


def options(
    description: str | None,
    *,
    full: Mapping[str, Any],
    quick: Mapping[str, Any],
    extra: Callable[[argparse.ArgumentParser], None] | None = None,
    argv: Sequence[str] | None = None,
) -> argparse.Namespace:
    """Parse --quick, --rounds and one option per key of `full` (its type from the value);
    an option not given takes its `quick` value under --quick, its `full` value otherwise.
    `extra` may add the script's own options."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds")
    for name, value in full.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=None)
    if extra:
        extra(parser)
    args = parser.parse_args(argv)
    for name, value in full.items():
        if getattr(args, name) is None:
            setattr(args, name, quick[name] if args.quick else value)
    return args


def pinned(n: int) -> Callable[[], None] | None:
    """A `preexec_fn` that restricts a child process to the first `n` usable CPUs (None
    when the platform cannot)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    chosen = sorted(os.sched_getaffinity(0))[:n]
    return lambda: os.sched_setaffinity(0, chosen)


def run_child(cmd: Sequence[str], *, cores: int | None = None, **kw: Any) -> float:
    """Run a command to completion (its output discarded unless asked for); wall seconds,
    process start included."""
    kw.setdefault("stdout", subprocess.DEVNULL)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, preexec_fn=pinned(cores) if cores else None, **kw)
    return time.perf_counter() - start


def queryeval_run(suite: Path, out: Path, *, cores: int | None = None) -> float:
    """`queryeval run SUITE --out OUT` in a fresh process (pinned to `cores` CPUs when
    given), as a user calls it; wall seconds, process start included."""
    cmd = [sys.executable, "-m", "queryeval", "run", str(suite), "--out", str(out)]
    return run_child([*cmd, "--overwrite", "--no-progress"], cores=cores)


def child_json(code: str, *, cores: int | None = None, env: Mapping[str, str] | None = None):
    """Run Python `code` in a fresh interpreter (src/ and bench/ on its path) and return the
    JSON object it prints last."""
    paths = [str(ROOT / "src"), str(ROOT / "bench")]
    prelude = f"import sys; sys.path[:0] = {paths!r}\n"
    out = subprocess.run(
        [sys.executable, "-c", prelude + code],
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=pinned(cores) if cores else None,
        env={**os.environ, **(env or {})},
    )
    if out.returncode:
        raise RuntimeError(f"child failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def peak_reset() -> bool:
    """Reset this process's peak RSS (VmHWM) to its current RSS; False where not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def rss_mib() -> dict[str, float]:
    """Current (VmRSS) and peak (VmHWM) resident memory in MiB, from /proc/self/status."""
    values = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in {"VmRSS", "VmHWM"}:
                values[key] = int(rest.split()[0]) / 1024
    return values
