"""The script a user would otherwise write from seed 001 (json, per-dimension sets, macro
precision/recall; nothing validated, nothing stored): `python _sdmx_loop.py FOLDER` prints
the two means. bench_sdmx.py runs it as a fresh process, as queryeval's run is."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def main(folder: Path) -> tuple[float, float]:
    preds = {}
    with (folder / "predictions.jsonl").open() as f:
        for line in f:
            rec = json.loads(line)
            preds[rec["case_id"]] = rec["indicator_selection"]
    precisions, recalls = [], []
    with (folder / "cases.jsonl").open() as f:
        for line in f:
            case = json.loads(line)
            target = case["conversation"][-1]["target"]["indicator_selection"]
            chosen = preds.get(case["id"], [])
            gold = {
                d["dimension_name"]: {v["id"] for v in d["values"]}
                for ds in target
                for d in ds["dimensions"]
            }
            got = {
                d["dimension_name"]: {v["id"] for v in d["values"]}
                for ds in chosen
                for d in ds["dimensions"]
            }
            ps, rs = [], []
            for dim in gold.keys() | got.keys():
                g, p = gold.get(dim, set()), got.get(dim, set())
                tp = len(g & p)
                ps.append(tp / len(p) if p else float(not g))
                rs.append(tp / len(g) if g else float(not p))
            precisions.append(sum(ps) / len(ps))
            recalls.append(sum(rs) / len(rs))
    return statistics.fmean(precisions), statistics.fmean(recalls)


if __name__ == "__main__":
    print(*main(Path(sys.argv[1])))
