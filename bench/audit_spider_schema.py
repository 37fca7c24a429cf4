"""`queryeval audit` on Spider dev without Spider's databases (issue 32; docs/benchmarks.md).

Spider's SQLite databases are not stored in any public repository this machine has; its
dev golds (dev.json) and schemas (tables.json) are (`taoyds/spider`). This builds one empty
SQLite database per dev database from tables.json (tables, columns with their declared
types, primary and foreign keys), runs the audit's checks that hold on a schema alone, and
prints counts by kind:

- gold_fails: a gold that does not run against its declared schema (an audit finding);
- nondeterministic patterns (sqlglot): LIMIT without ORDER BY, ORDER BY ... LIMIT, SQLite
  bare columns: candidates only (a tie or a row-order dependence needs the data to show);
- conflicting_golds candidates: one normalised question on one database with golds whose
  texts differ (the results need the data to compare).

non_discriminating, unknown_literal, disputed and the results of the others need rows.

With `--databases DIR` (SQLite files with the real rows, e.g. bench/spider_dev_sqlite.py's
19 of 20), the full audit runs on them instead (cases on a database not found are left out
and counted), and with `--predictions CSV...` (the DIN-SQL repository's GPT4_results, one
row a dev pair in dev order) `disputed` too: every finding kind, counted, one example each.

    python bench/audit_spider_schema.py /work/.mirror/taoyds+spider/repo OUT_DIR
        [--databases DIR] [--predictions CSV...]
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

TYPES = {"number": "NUMERIC", "text": "TEXT", "time": "TEXT", "boolean": "NUMERIC"}


def _show(git_dir: str, path: str) -> object:
    text = subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"HEAD:{path}"], check=True, capture_output=True
    ).stdout
    return json.loads(text)


def build_schema_db(schema: dict, path: Path) -> None:
    """An empty SQLite database with `schema`'s tables, columns, keys (tables.json)."""
    tables = schema["table_names_original"]
    columns = schema["column_names_original"]
    types = schema["column_types"]
    pks = (
        set(schema["primary_keys"])
        if all(isinstance(k, int) for k in schema["primary_keys"])
        else set()
    )
    fks: dict[int, list[tuple[int, int]]] = {}
    for a, b in schema["foreign_keys"]:
        fks.setdefault(columns[a][0], []).append((a, b))
    con = sqlite3.connect(path)
    for t, name in enumerate(tables):
        if name.lower().startswith("sqlite_"):  # SQLite's own (sqlite_sequence): it exists
            continue
        cols = [(i, c) for i, (tt, c) in enumerate(columns) if tt == t]
        parts = [f'"{c}" {TYPES.get(types[i], "TEXT")}' for i, c in cols]
        keys = [f'"{c}"' for i, c in cols if i in pks]
        if keys:
            parts.append(f"PRIMARY KEY ({', '.join(keys)})")
        for a, b in fks.get(t, []):
            parts.append(
                f'FOREIGN KEY ("{columns[a][1]}") REFERENCES '
                f'"{tables[columns[b][0]]}" ("{columns[b][1]}")'
            )
        con.execute(f'CREATE TABLE "{name}" ({", ".join(parts)})')
    con.commit()
    con.close()


def main(git_dir: str, out: Path, databases: Path | None = None,
         predictions: list[Path] | None = None) -> None:  # fmt: skip
    from queryeval.audit._checks import normalised_question
    from queryeval.audit._static import order_patterns
    from queryeval.cases import Case

    dev = _show(git_dir, "evaluation_examples/examples/dev.json")
    tables = {s["db_id"]: s for s in _show(git_dir, "evaluation_examples/examples/tables.json")}
    out.mkdir(parents=True, exist_ok=True)
    (out / "db").mkdir(exist_ok=True)
    dbs = sorted({q["db_id"] for q in dev})
    paths: dict[str, Path] = {}
    if databases is not None:
        found = {p.stem.lower(): p.resolve() for p in databases.glob("*.sqlite")}
        paths = {db: found[db.lower()] for db in dbs if db.lower() in found}
        if len(paths) < len(dbs):
            print(f"no database for {sorted(set(dbs) - set(paths))}", file=sys.stderr)
        return _real(dev, paths, out, predictions or [])
    for db in dbs:
        path = out / "db" / f"{db}.sqlite"
        path.unlink(missing_ok=True)
        build_schema_db(tables[db], path)
    with (out / "cases.jsonl").open("w") as fh:
        for n, q in enumerate(dev):
            case = {
                "id": f"dev-{n:04d}",
                "tags": [f"db:{q['db_id']}"],
                "conversation": [
                    {
                        "content": q["question"],
                        "target": {"query": {"text": q["query"], "database": q["db_id"]}},
                    }
                ],
            }
            fh.write(json.dumps(case) + "\n")
    databases = "".join(
        f"  {db}: {{engine: sqlite, path: db/{db}.sqlite, options: {{timeout_s: 10}}}}\n"
        for db in dbs
    )
    (out / "suite.yaml").write_text(
        "name: spider-dev-schema\ncases: cases.jsonl\ndatabases:\n"
        + databases
        + "systems:\n  - {name: none, predictions: none.jsonl}\nscorers: [execution_match]\n"
    )
    (out / "none.jsonl").write_text("")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "queryeval",
            "audit",
            str(out / "suite.yaml"),
            "--out",
            str(out / "audit"),
            "--cache-dir",
            str(out / "cache"),
        ],
        check=True,
        capture_output=True,
    )
    findings = json.loads((out / "audit" / "audit.json").read_text())
    fails = [f for f in findings if f["kind"] == "gold_fails"]
    patterns: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for n, q in enumerate(dev):
        for p in order_patterns(q["query"], "sqlite"):
            patterns[p] += 1
            examples.setdefault(p, f"dev-{n:04d}: {q['query']}")
    groups: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for n, q in enumerate(dev):
        case = Case(id=str(n), conversation=[{"content": q["question"]}])
        groups.setdefault((normalised_question(case), q["db_id"]), []).append((n, q["query"]))
    conflicts = [g for g in groups.values() if len({" ".join(s.lower().split()) for _, s in g}) > 1]
    report = {
        "golds": len(dev),
        "databases": len(dbs),
        "gold_fails": len(fails),
        "gold_fails_examples": [
            f"{f['case_id']}: {f['evidence']['query']} -> {f['message']}" for f in fails[:5]
        ],
        "nondeterministic_patterns": dict(patterns),
        "pattern_examples": examples,
        "same_question_groups": sum(1 for g in groups.values() if len(g) > 1),
        "conflicting_gold_text_groups": len(conflicts),
        "conflict_examples": [[f"dev-{n:04d}: {s}" for n, s in g] for g in conflicts[:3]],
        "other_kinds_on_empty_databases": {
            k: sum(1 for f in findings if f["kind"] == k)
            for k in ("non_discriminating", "unknown_literal")
        },
    }
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


def _real(dev: list, paths: dict[str, Path], out: Path, predictions: list[Path]) -> None:
    """The whole audit on databases with rows (`paths`), with the systems' predictions."""
    import csv
    import time

    kept = [(n, q) for n, q in enumerate(dev) if q["db_id"] in paths]
    with (out / "cases.jsonl").open("w") as fh:
        for n, q in kept:
            case = {"id": f"dev-{n:04d}", "tags": [f"db:{q['db_id']}"],
                    "conversation": [{"content": q["question"], "target": {"query": {
                        "text": q["query"], "database": q["db_id"]}}}]}  # fmt: skip
            fh.write(json.dumps(case) + "\n")
    systems = []
    for csv_path in predictions:
        rows = list(csv.reader(csv_path.open()))[1:]
        name = csv_path.stem
        with (out / f"{name}.jsonl").open("w") as fh:
            for n, row in enumerate(rows[: len(dev)]):
                if dev[n]["db_id"] in paths and row[1].strip():
                    fh.write(json.dumps({"case_id": f"dev-{n:04d}", "query": row[1]}) + "\n")
        systems.append(name)
    (out / "none.jsonl").write_text("")
    lines = "".join(f"  {db}: {{engine: sqlite, path: '{p}', options: {{timeout_s: 10}}}}\n"
                    for db, p in sorted(paths.items()))  # fmt: skip
    listed = "".join(f"  - {{name: {s}, predictions: {s}.jsonl}}\n" for s in systems)
    (out / "suite.yaml").write_text(
        "name: spider-dev\ncases: cases.jsonl\ndatabases:\n"
        + lines
        + "systems:\n"
        + (listed or "  - {name: none, predictions: none.jsonl}\n")
        + "scorers: [execution_match]\n"
    )
    command = [sys.executable, "-m", "queryeval", "audit", str(out / "suite.yaml"), "--out",
               str(out / "audit"), "--cache-dir", str(out / "cache")]  # fmt: skip
    if systems:
        command += ["--systems", ",".join(systems)]
    import resource

    start = time.perf_counter()
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu = (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr[-3000:])
    findings = json.loads((out / "audit" / "audit.json").read_text())
    counts = Counter(f["kind"] for f in findings)
    examples = {}
    for f in findings:
        examples.setdefault(f["kind"], f"{f['case_id']}: {f['evidence'].get('query')} -> "
                                       f"{f['message']}")  # fmt: skip
    report = {"golds": len(kept), "left_out": len(dev) - len(kept), "databases": len(paths),
              "systems": systems, "findings": len(findings), "by_kind": dict(counts),
              "cases_with_findings": len({f["case_id"] for f in findings}),
              "examples": examples, "wall_s": round(wall, 1),
              "child_cpu_s": round(child_cpu, 1)}  # fmt: skip
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("git_dir")
    parser.add_argument("out", type=Path)
    parser.add_argument("--databases", type=Path, default=None)
    parser.add_argument("--predictions", type=Path, nargs="*", default=[])
    args = parser.parse_args()
    main(args.git_dir, args.out, args.databases, args.predictions)
