"""Peak memory of a whole `queryeval run` over the hostile query catalogue (issue 14):
memory bombs, runaway joins and recursions, 3 MB and 60 MB generated query texts and a gold
that is a bomb, on DuckDB, SQLite, duckdb-kql and (full run) an embedded ArcadeDB, with the
default limits (`memory_limit` 1 GiB) and `timeout_s: 5` (the default 30 s only makes the
runaway queries slower). Target: the evaluator's peak RSS under 3 GiB, where these queries
took it to 24 GB before. The catalogue is tests/hostile_catalogue.py; every bomb must end as
`resource_limit` or `timeout` (checked here too). One measurement (a peak, not a timing).

    .venv/bin/python bench/bench_hostile.py [--quick]   (about a minute; --quick: no ArcadeDB)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "bench"), str(ROOT / "tests")]

import _harness as h  # noqa: E402
from hostile_catalogue import (  # noqa: E402
    BOMBS,
    GRAPH_BOMBS,
    outcomes,
    run_measured,
    write_hostile_suite,
)

TARGET_MIB = 3 * 1024


def main() -> int:
    args = h.options(__doc__.splitlines()[0], full={"graph": True}, quick={"graph": False})
    print(h.machine())
    folder = Path(tempfile.mkdtemp(prefix="qe-bench-hostile-"))
    suite = write_hostile_suite(folder / "suite", {"timeout_s": 5.0}, graph=args.graph)
    before = h.load_average()
    start = time.perf_counter()
    code, stderr, own, tree = run_measured(["run", str(suite), "--out", str(folder / "run")])
    wall = time.perf_counter() - start
    load = f"{h.fmt_load(before)} -> {h.fmt_load(h.load_average())}"
    if code != 0:
        print(stderr[-3000:])
        return 1
    found = outcomes(folder / "run")
    bombs = {**BOMBS, **(GRAPH_BOMBS if args.graph else {})}
    kinds: dict[str, int] = {}
    for case_id in bombs:
        kinds[found[case_id][0]] = kinds.get(found[case_id][0], 0) + 1
    print(f"{len(bombs)} bombs: {kinds}; run {wall:.1f} s, load {load}")
    engines = "DuckDB, SQLite, duckdb-kql" + (", ArcadeDB" if args.graph else "")
    h.record(
        "hostile",
        f"peak RSS of a run of {len(bombs)} bombs ({engines})",
        f"{own:,.0f} MiB",
        against=f"target {TARGET_MIB:,} MiB; before issue 14: killed at 24 GB",
        note=(f"the run with ArcadeDB's server, together: {tree:,.0f} MiB; " if args.graph else "")
        + f"{wall:.0f} s; outcomes {kinds}",
    )
    bounded = set(kinds) <= {"resource_limit", "timeout"}
    return 0 if bounded and own < TARGET_MIB else 1


if __name__ == "__main__":
    raise SystemExit(main())
