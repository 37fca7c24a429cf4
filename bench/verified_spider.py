"""EX vs verified for published systems' Spider dev predictions, on Spider's real dev
databases (`--databases DIR`: a folder of `DB_ID.sqlite` files or Spider's
`database/DB_ID/DB_ID.sqlite` layout, matched case-insensitively), or, without it, on
Spider's own schemas (tables.json: tables, column types, primary and foreign keys) with
**synthetic rows** (30 a table, seeded; text values from the dev golds' literals).

Inputs (public repositories, brought with the search tool's `fetch`):
- tables.json, dev.json: samlhuillier/text-sql-with-execution-evaluation, spider/;
- the dev databases: bench/spider_dev_sqlite.py rebuilds 19 of the 20 from a public
  PostgreSQL re-dump with the real rows (jsperson/querydawg); cases on a database not
  found are left out and counted (`missing_database`);
- predictions with golds: the DIN-SQL repository's GPT4_results/*.csv (NLQ, PREDICTED SQL,
  GOLD SQL, DATABASE), e.g. SZU-AdvTech-2024/124-DIN-SQL-...

    .venv/bin/python bench/verified_spider.py TABLES_JSON DEV_JSON CSV... [--cases 300]
        [--databases DIR]
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import random
import re
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from queryeval.cases import Attempt, Case, Output
from queryeval.config import ScorerConfig
from queryeval.runner import load_suite
from queryeval.scorers import ScoringContext, build_scorer, score_case


def build_databases(tables_json: Path, dev_json: Path, folder: Path) -> Path:
    """A SQLite file per dev database (Spider's schema, 30 synthetic rows a table) and a
    suite naming them; returns the suite file."""
    tables = {t["db_id"]: t for t in json.loads(tables_json.read_text())}
    dev = json.loads(dev_json.read_text())
    dbs = sorted({x["db_id"] for x in dev})
    literals: dict[str, set[str]] = {}
    for x in dev:
        for a, b in re.findall(r'"([^"]*)"|\'([^\']*)\'', x["query"]):
            literals.setdefault(x["db_id"], set()).add(a or b)
    for db in dbs:
        _one_database(tables[db], sorted(literals.get(db, set())), folder / f"{db}.sqlite")
    lines = ["name: spider-synthetic", "cases: cases.jsonl", "databases:"]
    lines += [f"  {db}: {{engine: sqlite, path: {db}.sqlite}}" for db in dbs]
    lines += ["systems:", "  - {name: s, predictions: p.jsonl}", "scorers: [verified_match]"]
    (folder / "cases.jsonl").write_text("")
    (folder / "p.jsonl").write_text("")
    (folder / "suite.yaml").write_text("\n".join(lines) + "\n")
    return folder / "suite.yaml"


def real_databases(dev_json: Path, databases: Path, folder: Path) -> Path:
    """A suite naming Spider's real dev databases found under `databases` (read-only)."""
    dev = json.loads(dev_json.read_text())
    dbs = sorted({x["db_id"] for x in dev})
    found = {p.stem.lower(): p.resolve() for p in databases.rglob("*.sqlite")}
    missing = [db for db in dbs if db.lower() not in found]
    if missing:  # their cases are left out and counted (`missing_database`)
        print(f"{databases}: no .sqlite file for {', '.join(missing)}", file=sys.stderr)
    lines = ["name: spider-dev", "cases: cases.jsonl", "databases:"]
    lines += [f"  {db}: {{engine: sqlite, path: '{found[db.lower()]}'}}"
              for db in dbs if db.lower() in found]  # fmt: skip
    lines += ["systems:", "  - {name: s, predictions: p.jsonl}", "scorers: [verified_match]"]
    (folder / "cases.jsonl").write_text("")
    (folder / "p.jsonl").write_text("")
    (folder / "suite.yaml").write_text("\n".join(lines) + "\n")
    return folder / "suite.yaml"


def _one_database(t: dict[str, Any], vocab: list[str], path: Path) -> None:
    rng = random.Random(t["db_id"])
    names, cols, types = t["table_names_original"], t["column_names_original"], t["column_types"]
    pk = {p for p in t["primary_keys"] if isinstance(p, int)}
    pk |= {q for p in t["primary_keys"] if isinstance(p, list) for q in p}
    fks = {a: b for a, b in t["foreign_keys"]}
    con = sqlite3.connect(path)
    values: dict[int, list[Any]] = {}
    vocab = [*vocab, "a", "b", "c", "d"]
    for ti, table in enumerate(names):
        if table.lower().startswith("sqlite_"):
            continue
        cs = [(ci, c, types[ci]) for ci, (owner, c) in enumerate(cols) if owner == ti]
        defs = [f'"{c}" {"INTEGER" if ty == "number" else "TEXT"}' for _, c, ty in cs]
        keys = [f'"{c}"' for ci, c, _ in cs if ci in pk]
        if keys:
            defs.append(f"PRIMARY KEY ({', '.join(keys)})")
        for ci, c, _ in cs:
            if ci in fks:
                parent = cols[fks[ci]]
                defs.append(f'FOREIGN KEY ("{c}") REFERENCES "{names[parent[0]]}"("{parent[1]}")')
        con.execute(f'CREATE TABLE "{table}" ({", ".join(defs)})')
        rows = []
        for r in range(30):
            row: list[Any] = []
            for ci, _, ty in cs:
                if ci in fks and values.get(fks[ci]):
                    row.append(rng.choice(values[fks[ci]]))
                elif ci in pk:
                    row.append(r + 1 if ty == "number" else f"k{r}")
                else:
                    row.append(rng.randint(1, 60) if ty == "number" else rng.choice(vocab))
            rows.append(row)
        for k, (ci, _, _) in enumerate(cs):
            values[ci] = [r[k] for r in rows]
        marks = ",".join("?" * len(cs))
        con.executemany(f'INSERT OR IGNORE INTO "{table}" VALUES ({marks})', rows)
    con.commit()
    con.close()


def score_system(suite: Path, predictions: Path, cases: int) -> dict[str, Any]:
    """EX and verified counts of one system's predictions, counterexample kinds, and one
    worked example per kind."""
    rows = list(csv.reader(predictions.open()))[1 : cases + 1]
    cache = Path(tempfile.mkdtemp(prefix="verified-spider-"))
    ctx = ScoringContext(load_suite(suite), cache_dir=cache)
    scorer = build_scorer(ScorerConfig(name="verified_match"))
    out: dict[str, Any] = {"system": predictions.stem, "cases": 0, "ex": 0, "verified": 0}
    kinds: collections.Counter[str] = collections.Counter()
    examples: dict[str, Any] = {}
    start = time.process_time()
    known = set(ctx.suite.databases) if ctx.suite is not None else set()
    for i, (_, pred, gold, db) in enumerate(rows):
        if db not in known:
            out["missing_database"] = out.get("missing_database", 0) + 1
            continue
        target = {"query": {"text": gold, "database": db}}
        case = Case.model_validate(
            {"id": str(i), "conversation": [{"content": "q", "target": target}]}
        )
        s = score_case(scorer, case, Output(attempts=[Attempt(query=pred)]), ctx)
        out["cases"] += 1
        metrics = s.details.get("metrics") or {}
        out["ex"] += metrics.get("ex") == 1.0
        out["verified"] += metrics.get("verified") == 1.0
        witness = s.details.get("counterexample")
        if witness:
            kind = witness["variant"].split(" ")[0]
            kinds[kind] += 1
            assumed = [a["text"] for a in witness["assumptions"]]
            examples.setdefault(kind, {"case": i, "database": db, "gold": gold, "prediction": pred,
                                       "variant": witness["variant"], "rows": witness["rows"],
                                       "gold_result": witness["gold"], "assumptions": assumed,
                                       "prediction_result": witness["prediction"],
                                       "script": witness["script"]})  # fmt: skip
            out.setdefault("witnesses", []).append(
                {"case": i, "database": db, "variant": witness["variant"],
                 "rows": witness["rows"], "gold": gold, "prediction": pred,
                 "assumptions": [a["kind"] for a in witness["assumptions"]]})  # fmt: skip
    out["cpu_s_per_case"] = round((time.process_time() - start) / max(1, out["cases"]), 3)
    out["kinds"] = dict(kinds)
    out["examples"] = examples
    ctx.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("tables", type=Path)
    parser.add_argument("dev", type=Path)
    parser.add_argument("predictions", type=Path, nargs="+")
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--databases", type=Path, default=None,
                        help="Spider's dev databases (else synthetic rows)")  # fmt: skip
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="spider-"))
    if args.databases is not None:
        suite = real_databases(args.dev, args.databases, folder)
    else:
        suite = build_databases(args.tables, args.dev, folder)
    for predictions in args.predictions:
        result = score_system(suite, predictions, args.cases)
        json.dump(result, sys.stdout, indent=1, default=str)
        print(flush=True)


if __name__ == "__main__":
    main()
