"""The loop a user writes instead of queryeval for SQL execution scoring: execute the gold
and the prediction of every case with duckdb, compare the rows with collections.Counter
(executes, exact match as multisets, row F1). Prints one JSON line of its counts.

    python bench/_sql_loop.py FOLDER     (a folder written by bench/_sql_data.write_suite)
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path


def main(folder: Path) -> dict[str, float]:
    import duckdb

    con = duckdb.connect(str(folder / "shop.duckdb"), read_only=True)
    executes = exact = 0
    f1_sum = 0.0
    n = 0
    with (folder / "cases.jsonl").open() as cf, (folder / "predictions.jsonl").open() as pf:
        for case_line, pred_line in zip(cf, pf, strict=True):
            gold_sql = json.loads(case_line)["conversation"][0]["target"]["query"]
            pred_sql = json.loads(pred_line)["query"]
            n += 1
            gold = Counter(con.execute(gold_sql).fetchall())
            try:
                pred = Counter(con.execute(pred_sql).fetchall())
            except duckdb.Error:
                continue
            executes += 1
            exact += pred == gold
            matched = sum((pred & gold).values())
            p = matched / pred.total() if pred else float(not gold)
            r = matched / gold.total() if gold else float(not pred)
            f1_sum += 2 * p * r / (p + r) if p + r else 0.0
    return {"cases": n, "executes": executes / n, "exact": exact / n, "f1": f1_sum / n}


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
