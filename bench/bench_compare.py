"""Benchmark: compare two 1,000,000-row x 5-column results, order- and column-order-free;
small results per call; and 5,000,000 rows against DuckDB's EXCEPT ALL.

Each measurement runs in a fresh subprocess pinned to one core (so pyarrow's thread pool
gets no more cores than the pure-Python sides) that builds the data, resets the kernel's
peak-RSS counter (``/proc/self/clear_refs``), runs the comparison once and reports the
wall time, the CPU and system time and the peak RSS above the level before the comparison
(this sees Arrow and NumPy memory, which ``tracemalloc`` does not); then it runs the same
comparison again ("warm"). The first run is the headline figure, what one comparison in a
fresh process costs. On a virtual machine that returns freed memory to the hypervisor
(free page reporting), the first touch of pages the process has not used lately costs a
hypervisor fault, seen as system time: a large comparison, whose arrays are mapped fresh,
pays it, a small one, served from memory the allocator kept, does not. The warm run shows
the growth without it. The cases run in interleaved rounds; medians are reported.
Alternatives measured in the same run:

- ``counter``: ``collections.Counter`` over row tuples (pred columns reordered by name
  first), the multiset intersection counted with ``&``: what a user would write;
- ``arrow_group_by``: pyarrow ``group_by`` over all five columns of both sides at once;
- ``duckdb_except_all``: DuckDB ``EXCEPT ALL`` over the two Arrow tables (gold rows not
  found in the prediction; DuckDB limited to as many threads as the side has cores).

Then, unless --quick, the same at 5,000,000 rows (queryeval's Arrow path and DuckDB's
``EXCEPT ALL``; target: no slower than EXCEPT ALL, and at most 6x the 1M time).

Small results (1, 10, 100 rows, given as Python rows as the engines hand them over; the
prediction has the same rows shuffled and its columns reordered, or one row changed), per
call, in this process, interleaved rounds of many calls: ``compare_results`` with its
defaults (float tolerance 1e-9, no ``legacy_recall``) against the ``Counter`` compare a
user writes (columns reordered by name, ``Counter`` of each side, ``&``, the matched count
and the exact verdict). Three shapes: ``plain`` (an int id, a string, an int count),
``typed`` (an int id, a float amount with 10% NULLs, a ``Decimal`` price and a ``date``:
what an ``AVG``, a price column and a day give; the wrong row changed in every cell) and
``typed_number`` (the same columns, the wrong row's amount alone moved: a wrong aggregate).
Wall and CPU time (``process_time``) per
call, medians, the load beside them. Target (issue 31): within 2x per call.

Usage: ``python bench/bench_compare.py [--rows N] [--big-rows N] [--rounds R] [--cores C]
[--quick] [--small-only] [--shapes plain typed typed_number]``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE)]  # this checkout's queryeval
import _harness as h  # noqa: E402

CASES = {
    "queryeval_arrow": "queryeval compare_results, Arrow-backed results (as engines return)",
    "queryeval_rows": "queryeval compare_results, results given as Python row tuples",
    "counter": "collections.Counter over row tuples (baseline)",
    "arrow_group_by": "pyarrow Table.group_by over all columns (alternative)",
    "duckdb_except_all": "DuckDB EXCEPT ALL over the Arrow tables (alternative)",
}
SMALL_SIZES = (1, 10, 100)


def make_tables(n: int, seed: int = 7) -> tuple[object, object]:
    """Gold: ints/floats/strings with NULLs; pred: the same rows shuffled, columns reversed,
    and 1% of the rows changed (so the answer is not trivially "equal")."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    pool = np.array([f"customer_{i:06d}" for i in range(50_000)], dtype=object)
    cats = np.array(["alpha", "beta", "gamma", "delta", "epsilon"], dtype=object)
    null = lambda: rng.random(n) < 0.05  # noqa: E731
    gold = pa.table(
        {
            "order_id": pa.array(rng.integers(0, 10**9, n), mask=null()),
            "amount": pa.array(np.round(rng.normal(100, 30, n), 2), mask=null()),
            "customer": pa.array(pool[rng.integers(0, len(pool), n)], pa.string(), mask=null()),
            "quantity": pa.array(rng.integers(0, 100, n)),
            "segment": pa.array(cats[rng.integers(0, len(cats), n)], pa.string(), mask=null()),
        }
    )
    order = rng.permutation(n)
    pred = gold.take(pa.array(order)).select(list(reversed(gold.column_names)))
    changed = rng.random(n) < 0.01
    amount = pred.column("amount").to_numpy(zero_copy_only=False)
    amount = np.where(changed, amount + 0.01, amount)
    pred = pred.set_column(
        pred.column_names.index("amount"),
        "amount",
        pa.array(amount, mask=~pred.column("amount").is_valid().to_numpy(zero_copy_only=False)),
    )
    return pred, gold


def run_case(case: str, n: int, threads: int = 1) -> dict[str, float]:
    """Build the data, run one comparison, return its seconds (wall, CPU, system), the
    extra peak MiB and the answer; then run it again in this process (`warm_seconds`:
    its memory is no longer fresh from the kernel, see the module docstring)."""
    import gc

    from queryeval.metrics import ResultSet

    pred_table, gold_table = make_tables(n)
    pred_arg: object
    gold_arg: object
    con = None
    if case == "queryeval_arrow":
        pred_arg, gold_arg = ResultSet.from_arrow(pred_table), ResultSet.from_arrow(gold_table)
    elif case == "duckdb_except_all":
        import duckdb

        con = duckdb.connect(config={"threads": threads})
        con.register("pred", pred_table)
        con.register("gold", gold_table)
        pred_arg, gold_arg = pred_table, gold_table
    elif case in {"queryeval_rows", "counter"}:
        pred_arg = ResultSet(
            pred_table.column_names, zip(*(c.to_pylist() for c in pred_table.columns), strict=False)
        )
        gold_arg = ResultSet(
            gold_table.column_names, zip(*(c.to_pylist() for c in gold_table.columns), strict=False)
        )
    else:
        pred_arg, gold_arg = pred_table, gold_table
    gc.collect()
    resettable = h.peak_reset()
    before = h.rss_mib()["VmRSS"]
    sys_start = os.times().system
    cpu_start = time.process_time()
    start = time.perf_counter()
    matched = compare_once(case, pred_arg, gold_arg, con, pred_table, gold_table, n)
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    system = os.times().system - sys_start
    peak = h.rss_mib()["VmHWM"] - before if resettable else float("nan")
    start = time.perf_counter()  # the same comparison again: its pages are no longer new
    again = compare_once(case, pred_arg, gold_arg, con, pred_table, gold_table, n)
    warm = time.perf_counter() - start
    assert again == matched
    return {"seconds": seconds, "cpu_seconds": cpu, "system_seconds": system,
            "warm_seconds": warm, "extra_peak_mib": peak, "matched": matched}  # fmt: skip


def compare_once(
    case: str, pred_arg: object, gold_arg: object, con: object, pred_table: object,
    gold_table: object, n: int,
) -> int:  # fmt: skip
    """One comparison by `case`; the matched row count."""
    from collections import Counter
    from operator import itemgetter

    import pyarrow as pa

    from queryeval.metrics import ResultSet, compare_results

    if case.startswith("queryeval"):
        result = compare_results(pred_arg, gold_arg, rows="multiset", columns="by_name")
        matched = result.matched_rows
    elif case == "counter":
        assert isinstance(pred_arg, ResultSet) and isinstance(gold_arg, ResultSet)
        reorder = itemgetter(*(pred_arg.columns.index(c) for c in gold_arg.columns))
        common = Counter(map(reorder, pred_arg.rows)) & Counter(gold_arg.rows)
        matched = sum(common.values())
    elif con is not None:
        cols = ", ".join(f'"{c}"' for c in gold_table.column_names)
        missing = con.execute(
            f"SELECT count(*) FROM (SELECT {cols} FROM gold EXCEPT ALL SELECT {cols} FROM pred)"
        ).fetchone()
        assert missing is not None
        matched = gold_table.num_rows - int(missing[0])
    else:
        cols = list(gold_table.column_names)
        both = pa.concat_tables(
            [
                pred_table.select(cols).append_column("side", pa.array([1] * n, pa.int64())),
                gold_table.select(cols).append_column("side", pa.array([0] * n, pa.int64())),
            ]
        )
        groups = both.group_by(cols).aggregate([("side", "sum"), ([], "count_all")])
        pred_counts = groups["side_sum"].to_numpy()
        gold_counts = groups["count_all"].to_numpy() - pred_counts
        import numpy as np

        matched = int(np.minimum(pred_counts, gold_counts).sum())
    return matched


def small_pair(n: int, wrong: bool, seed: int = 11, shape: str = "plain") -> tuple[object, object]:
    """A gold result of `n` rows and its prediction: the same rows shuffled with the columns
    reordered, or (`wrong`) one row changed. ``plain``: (id, name, count); ``typed``: (id,
    amount: float with NULLs, price: Decimal, day: date), the wrong row changed in every
    cell; ``typed_number``: the same columns, the wrong row's amount moved by 0.5 and its
    other cells kept (a wrong aggregate)."""
    import datetime as dt
    import random
    from decimal import Decimal

    from queryeval.metrics import ResultSet

    rng = random.Random(seed + n)
    if shape in ("typed", "typed_number"):
        day0 = dt.date(2020, 1, 1)
        rows = [(rng.randrange(10**6),
                 None if rng.random() < 0.1 else round(rng.uniform(0, 1000), 2),
                 Decimal(rng.randrange(10**5)).scaleb(-2),
                 day0 + dt.timedelta(days=rng.randrange(2000)))
                for _ in range(n)]  # fmt: skip
        other: tuple[object, ...] = (-1, 1.5, Decimal("0.01"), dt.date(1999, 1, 1))
        names = ["id", "amount", "price", "day"]
    else:
        rows = [(rng.randrange(10**6), f"name {rng.randrange(1000)}", rng.randrange(50))
                for _ in range(n)]  # fmt: skip
        other = (-1, "nobody", 0)
        names = ["id", "name", "n"]
    shuffled = rows[:]
    rng.shuffle(shuffled)
    if wrong and shape == "typed_number":
        row = shuffled[0]
        shuffled[0] = (row[0], 0.5 if row[1] is None else row[1] + 0.5, *row[2:])
    elif wrong:
        shuffled[0] = other
    order = list(reversed(range(len(names))))
    pred = ResultSet([names[i] for i in order], [tuple(r[i] for i in order) for r in shuffled])
    return pred, ResultSet(names, rows)


def counter_compare(pred: object, gold: object) -> tuple[bool, int]:
    """What a user writes: predicted columns reordered by name, a Counter of each side."""
    from collections import Counter
    from operator import itemgetter

    reorder = itemgetter(*(pred.columns.index(c) for c in gold.columns))  # type: ignore[attr-defined]
    p, g = Counter(map(reorder, pred.rows)), Counter(gold.rows)  # type: ignore[attr-defined]
    return p == g, sum((p & g).values())


def per_call(call: Any, shape: str, n: int, wrong: bool, reps: int) -> dict[str, float]:
    """Seconds and CPU seconds per call of ``call(pred, gold)`` over `reps` calls, each on
    a pair of its own built beforehand (fresh objects, as a run's results come from the
    engines: a ``Decimal`` caches its hash, so reusing one pair would let the ``Counter``
    side skip hashing them)."""
    pairs = [small_pair(n, wrong, shape=shape) for _ in range(reps)]
    cpu = time.process_time()
    start = time.perf_counter()
    for pred, gold in pairs:
        call(pred, gold)
    wall = (time.perf_counter() - start) / reps
    return {"seconds": wall, "cpu_seconds": (time.process_time() - cpu) / reps}


def small(
    rounds: int, calls: int, shapes: tuple[str, ...] = ("plain", "typed", "typed_number")
) -> None:
    """compare_results (its defaults) against the Counter compare per call, 1-100 rows."""
    from functools import partial

    from queryeval.metrics import compare_results

    print(f"\nsmall results, per call (Python rows, in this process; {calls:,} calls a round):")
    print("  (us per call: wall median, CPU median; load: 1-minute, lowest-highest)")
    for shape in shapes:
        for wrong in (False, True):
            for n in SMALL_SIZES:
                pred, gold = small_pair(n, wrong, shape=shape)
                ours = compare_results(pred, gold)
                assert ours.legacy_recall is None  # the default leaves it out
                assert (ours.exact, ours.matched_rows) == counter_compare(pred, gold)
                reps = max(1, calls // max(n, 10))
                timings = h.interleaved(
                    [h.Side("compare_results",
                            partial(per_call, compare_results, shape, n, wrong, reps), 1),
                     h.Side("Counter", partial(per_call, counter_compare, shape, n, wrong, reps),
                            1)],
                    rounds,
                    progress=False,
                )  # fmt: skip
                q, c = timings["compare_results"], timings["Counter"]
                q_cpu, c_cpu = q.extra_median("cpu_seconds"), c.extra_median("cpu_seconds")
                label = (f"{shape}, {n} row{'s' if n > 1 else ''}, "
                         f"{'one row wrong' if wrong else 'equal'}")  # fmt: skip
                print(f"  {label:<30} compare_results {q.median * 1e6:7.1f} us "
                      f"(cpu {q_cpu * 1e6:7.1f})   Counter {c.median * 1e6:6.1f} us "
                      f"(cpu {c_cpu * 1e6:6.1f})   {q.median / c.median:5.2f}x wall "
                      f"{q_cpu / c_cpu:5.2f}x cpu   load {q.load_range}")  # fmt: skip
                h.record(
                    "compare",
                    f"compare_results per call, {label}",
                    f"{q.median * 1e6:.1f} us (cpu {q_cpu * 1e6:.1f} us)",
                    against=f"Counter compare {c.median * 1e6:.1f} us (cpu {c_cpu * 1e6:.1f} us)",
                    note=f"{h.ratio(q, c)} wall, {q_cpu / c_cpu:.2f}x cpu (target <= 2x); "
                    f"1 core each, median of {rounds}",
                )


def main() -> None:
    args = h.options(
        __doc__.splitlines()[0],
        full={"rows": 1_000_000, "big_rows": 5_000_000, "rounds": 3, "cores": 1, "calls": 20_000},
        quick={"rows": 100_000, "big_rows": 0, "rounds": 3, "cores": 1, "calls": 5_000},
        extra=_extra_options,
    )
    if args.small_only:
        print(h.machine())
        small(args.rounds * 2 + 1, args.calls, tuple(args.shapes))
        return
    print(h.machine())
    timings = sized(args.rows, args.cases, args.rounds, args.cores)
    if args.big_rows:
        big = sized(args.big_rows, ["queryeval_arrow", "duckdb_except_all"], args.rounds,
                    args.cores)  # fmt: skip
        ours, theirs = big["queryeval_arrow"], big["duckdb_except_all"]
        note = f"{h.ratio(ours, theirs)} EXCEPT ALL's time (target <= 1x)"
        if "queryeval_arrow" in timings:
            small_side = timings["queryeval_arrow"]
            growth = ours.median / small_side.median
            warm = ours.extra_median("warm_seconds") / small_side.extra_median("warm_seconds")
            note += (
                f"; {growth:.2f}x the {args.rows:,}-row time (target <= 6x), "
                f"{warm:.2f}x when run again in the process"
            )
        h.record(
            "compare",
            f"result comparison, {args.big_rows:,} x 5, multiset, by name",
            f"{ours.median:.2f} s, +{max(e['extra_peak_mib'] for e in ours.extra):.0f} MiB",
            against=f"DuckDB EXCEPT ALL {theirs.median:.2f} s ({args.cores} thread)",
            note=f"{note}; {args.cores} core each, median of {args.rounds}",
        )
    small(args.rounds * 2 + 1, args.calls, tuple(args.shapes))


def _extra_options(parser: object) -> None:
    parser.add_argument("--cases", nargs="*", default=list(CASES))  # type: ignore[attr-defined]
    parser.add_argument("--small-only", action="store_true",  # type: ignore[attr-defined]
                        help="only the per-call comparison of small results")  # fmt: skip
    parser.add_argument("--shapes", nargs="*", default=["plain", "typed", "typed_number"])  # type: ignore[attr-defined]


def sized(rows: int, cases: list[str], rounds: int, cores: int) -> dict[str, h.Timing]:
    """The cases at `rows` rows, each measurement a fresh process pinned to `cores`."""
    print(f"\n{rows:,} rows x 5 columns per side; one fresh process per measurement")

    def side(case: str) -> h.Side:
        code = (
            "import json, bench_compare as b; "
            f"print(json.dumps(b.run_case({case!r}, {rows}, {cores})))"
        )
        return h.Side(case, lambda: h.child_json(code, cores=cores), cores=cores)

    timings = h.interleaved([side(c) for c in cases], rounds)
    reference = "counter" if "counter" in timings else None
    print(h.table(timings, reference=reference))
    print(f"{'case':<18}{'cpu s':>9}{'system s':>10}{'warm s':>9}{'peak MiB':>10}{'matched':>11}")
    for case, t in timings.items():
        print(
            f"{case:<18}{t.extra_median('cpu_seconds'):>9.3f}"
            f"{t.extra_median('system_seconds'):>10.3f}{t.extra_median('warm_seconds'):>9.3f}"
            f"{max(e['extra_peak_mib'] for e in t.extra):>10.0f}{t.extra[0]['matched']:>11,}"
        )
    answers = {e["matched"] for t in timings.values() for e in t.extra}
    print("all cases agree on the matched row count:", len(answers) == 1)
    for case, text in CASES.items():
        if case in timings:
            print(f"  {case}: {text}")
    if "queryeval_arrow" in timings and reference:
        ours, base = timings["queryeval_arrow"], timings[reference]
        peak = max(e["extra_peak_mib"] for e in ours.extra)
        h.record(
            "compare",
            f"result comparison, {rows:,} x 5, multiset, by name",
            f"{ours.median:.2f} s, +{peak:.0f} MiB (Arrow-backed)",
            against=f"Counter {base.median:.2f} s",
            note=f"{h.ratio(ours, base)} Counter's time; {cores} core each, median of {rounds}",
        )
    return timings


if __name__ == "__main__":
    main()
