"""Benchmark: compare two 1,000,000-row x 5-column results, order- and column-order-free.

Each measurement runs in a fresh subprocess pinned to one core (so pyarrow's thread pool
gets no more cores than the pure-Python sides) that builds the data, resets the kernel's
peak-RSS counter (``/proc/self/clear_refs``), runs the comparison once and reports the
wall time, the CPU time and the peak RSS above the level before the comparison (this sees
Arrow and NumPy memory, which ``tracemalloc`` does not). The cases run in interleaved
rounds; medians are reported. Alternatives measured in the same run:

- ``counter``: ``collections.Counter`` over row tuples (pred columns reordered by name
  first), the multiset intersection counted with ``&``: what a user would write;
- ``arrow_group_by``: pyarrow ``group_by`` over all five columns of both sides at once.

Usage: ``python bench/bench_compare.py [--rows N] [--rounds R] [--cores C] [--quick]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as h

CASES = {
    "queryeval_arrow": "queryeval compare_results, Arrow-backed results (as engines return)",
    "queryeval_rows": "queryeval compare_results, results given as Python row tuples",
    "counter": "collections.Counter over row tuples (baseline)",
    "arrow_group_by": "pyarrow Table.group_by over all columns (alternative)",
}


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


def run_case(case: str, n: int) -> dict[str, float]:
    """Build the data, run one comparison, return seconds, extra peak MiB and the answer."""
    import gc
    from collections import Counter
    from operator import itemgetter

    import pyarrow as pa

    from queryeval.metrics import ResultSet, compare_results

    pred_table, gold_table = make_tables(n)
    pred_arg: object
    gold_arg: object
    if case == "queryeval_arrow":
        pred_arg, gold_arg = ResultSet.from_arrow(pred_table), ResultSet.from_arrow(gold_table)
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
    cpu_start = time.process_time()
    start = time.perf_counter()
    if case.startswith("queryeval"):
        result = compare_results(pred_arg, gold_arg, rows="multiset", columns="by_name")
        matched = result.matched_rows
    elif case == "counter":
        assert isinstance(pred_arg, ResultSet) and isinstance(gold_arg, ResultSet)
        reorder = itemgetter(*(pred_arg.columns.index(c) for c in gold_arg.columns))
        common = Counter(map(reorder, pred_arg.rows)) & Counter(gold_arg.rows)
        matched = sum(common.values())
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
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    peak = h.rss_mib()["VmHWM"] - before if resettable else float("nan")
    return {"seconds": seconds, "cpu_seconds": cpu, "extra_peak_mib": peak, "matched": matched}


def main() -> None:
    args = h.options(
        __doc__.splitlines()[0],
        full={"rows": 1_000_000, "rounds": 3, "cores": 1},
        quick={"rows": 100_000, "rounds": 3, "cores": 1},
        extra=lambda p: p.add_argument("--cases", nargs="*", default=list(CASES)),
    )
    print(f"{args.rows:,} rows x 5 columns per side; one fresh process per measurement")
    print(h.machine())

    def side(case: str) -> h.Side:
        code = (
            f"import json, bench_compare as b; print(json.dumps(b.run_case({case!r}, {args.rows})))"
        )
        return h.Side(case, lambda: h.child_json(code, cores=args.cores), cores=args.cores)

    timings = h.interleaved([side(c) for c in args.cases], args.rounds)
    reference = "counter" if "counter" in timings else None
    print(h.table(timings, reference=reference))
    print(f"{'case':<18}{'cpu s':>9}{'peak MiB':>10}{'matched':>11}")
    for case, t in timings.items():
        print(
            f"{case:<18}{t.extra_median('cpu_seconds'):>9.3f}"
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
            f"result comparison, {args.rows:,} x 5, multiset, by name",
            f"{ours.median:.2f} s, +{peak:.0f} MiB (Arrow-backed)",
            against=f"Counter {base.median:.2f} s",
            note=f"{h.ratio(ours, base)} Counter's time; {args.cores} core each, "
            f"median of {args.rounds}",
        )


if __name__ == "__main__":
    main()
