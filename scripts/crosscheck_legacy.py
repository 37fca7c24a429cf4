"""Run the published Spider and BIRD scorers on the corner-case table of the tests and
compare their verdicts with queryeval's `*_legacy` rules (and Spider's exact-set-match and
hardness with `spider_exact_match` on the worked examples).

The originals are not vendored: point this at checkouts of them.

    python scripts/crosscheck_legacy.py \\
        --test-suite-eval PATH/test-suite-sql-eval --bird-mini-dev PATH/mini_dev

Needs sqlparse and nltk (the originals import them); func_timeout, psycopg2 and pymysql are
stubbed (only SQLite is used; the stub runs the function without a time limit). nltk's
word_tokenize is called with ``preserve_line=True`` (no sentence splitter model to download;
a SQL query is one line). Prints one line per disagreement and a count; exits 1 on any.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def _stub_modules() -> None:
    timeout = types.ModuleType("func_timeout")

    class FunctionTimedOut(Exception):
        pass

    def func_timeout(_seconds: float, func: Any, args: tuple[Any, ...] = ()) -> Any:
        return func(*args)

    timeout.FunctionTimedOut = FunctionTimedOut  # type: ignore[attr-defined]
    timeout.func_timeout = func_timeout  # type: ignore[attr-defined]
    sys.modules["func_timeout"] = timeout
    for name in ("psycopg2", "pymysql"):
        sys.modules.setdefault(name, types.ModuleType(name))


def _load(folder: Path, *names: str) -> list[Any]:
    sys.path.insert(0, str(folder))
    try:
        return [importlib.import_module(n) for n in names]
    finally:
        sys.path.remove(str(folder))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test-suite-eval", type=Path, required=True)
    parser.add_argument("--bird-mini-dev", type=Path, required=True)
    args = parser.parse_args()
    _stub_modules()

    from benchmark_files import make_db
    from test_spider_exact_match import SCHEMA_DB, WORKED
    from test_sql_legacy_rules import PAIRS

    exec_eval, evaluation, process_sql = _load(
        args.test_suite_eval, "exec_eval", "evaluation", "process_sql"
    )
    (bird,) = _load(args.bird_mini_dev / "evaluation", "evaluation_ex")
    from nltk.tokenize import word_tokenize

    process_sql.word_tokenize = lambda text: word_tokenize(text, preserve_line=True)

    disagreements = checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        db = make_db(Path(tmp) / "concert" / "concert.sqlite")
        for pair in PAIRS:
            for keep, expected in ((False, pair.spider_legacy), (True, pair.spider_keep_distinct)):
                got = exec_eval.eval_exec_match(
                    str(db), pair.pred.replace("value", "1"), pair.gold, False, keep, False
                )
                checked += 1
                if bool(got) != expected:
                    disagreements += 1
                    print(f"spider keep_distinct={keep} {pair.name}: original {bool(got)}, "
                          f"table {expected}")  # fmt: skip
            got = bird.execute_model(pair.pred, pair.gold, str(db), 0, 30.0, "SQLite")["res"]
            checked += 1
            if bool(got) != pair.bird_legacy:
                disagreements += 1
                print(f"bird {pair.name}: original {bool(got)}, table {pair.bird_legacy}")

        schema_db = SCHEMA_DB(Path(tmp))
        schema = process_sql.Schema(process_sql.get_schema(str(schema_db)))
        kmaps = evaluation.build_foreign_key_map_from_json(str(schema_db.parent / "tables.json"))
        for example in WORKED:
            g_sql = process_sql.get_sql(schema, example.gold)
            hardness = evaluation.Evaluator().eval_hardness(g_sql)
            try:
                p_sql = process_sql.get_sql(schema, example.pred)
            except Exception:  # the original's fallback: the empty query
                p_sql = {"except": None, "from": {"conds": [], "table_units": []}, "groupBy": [],
                         "having": [], "intersect": None, "limit": None, "orderBy": [],
                         "select": [False, []], "union": None, "where": []}  # fmt: skip
            kmap = kmaps["school"]
            g_valid = evaluation.build_valid_col_units(g_sql["from"]["table_units"], schema)
            g_sql = evaluation.rebuild_sql_col(g_valid, evaluation.rebuild_sql_val(g_sql), kmap)
            p_valid = evaluation.build_valid_col_units(p_sql["from"]["table_units"], schema)
            p_sql = evaluation.rebuild_sql_col(p_valid, evaluation.rebuild_sql_val(p_sql), kmap)
            exact = bool(evaluation.Evaluator().eval_exact_match(p_sql, g_sql))
            checked += 2
            if exact != example.exact or hardness != example.hardness:
                disagreements += 1
                print(f"exact-set-match {example.name}: original ({exact}, {hardness}), "
                      f"table ({example.exact}, {example.hardness})")  # fmt: skip
        real_checked, real_diff = _real_examples(args.test_suite_eval, evaluation, process_sql,
                                                 Path(tmp))  # fmt: skip
        checked += real_checked
        disagreements += real_diff
    print(f"{checked} verdicts checked, {disagreements} disagreement(s)")
    return 1 if disagreements else 0


def _empty_databases(tables_json: Path, root: Path) -> dict[str, Path]:
    """An empty SQLite database per schema of tables.json (the parser needs names only)."""
    import json
    import sqlite3

    paths = {}
    for entry in json.loads(tables_json.read_text()):
        path = root / "dbs" / f"{entry['db_id']}.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(path)
        for t, table in enumerate(entry["table_names_original"]):
            if table.lower().startswith("sqlite_"):
                continue
            cols = [c for i, c in entry["column_names_original"] if i == t]
            con.execute(f'CREATE TABLE "{table}" ({", ".join(f"[{c}]" for c in cols)})')
        con.close()
        paths[entry["db_id"]] = path
    return paths


def _real_examples(repo: Path, evaluation: Any, process_sql: Any, root: Path) -> tuple[int, int]:
    """Exact-set-match and hardness of evaluation_examples/predict.txt against gold.txt
    (453 real predictions shipped with test-suite-sql-eval), original against queryeval."""
    from queryeval.metrics.benchmarks import (
        SpiderParseError,
        foreign_key_map,
        spider_exact_match,
        sqlite_schema,
    )

    tables_json = repo / "tables.json"
    import json

    entries = {e["db_id"]: e for e in json.loads(tables_json.read_text())}
    dbs = _empty_databases(tables_json, root)
    kmaps = evaluation.build_foreign_key_map_from_json(str(tables_json))
    gold_lines = (repo / "evaluation_examples" / "gold.txt").read_text().splitlines()
    pred_lines = (repo / "evaluation_examples" / "predict.txt").read_text().splitlines()
    checked = differ = skipped = 0
    for gold_line, pred_line in zip(gold_lines, pred_lines, strict=True):
        if not gold_line.strip():
            continue
        g_str, db = gold_line.strip().split("\t")
        p_str = pred_line.strip().split("\t")[0].replace("value", "1")
        schema = process_sql.Schema(process_sql.get_schema(str(dbs[db])))
        try:
            g_sql = process_sql.get_sql(schema, g_str)
        except Exception:
            skipped += 1
            continue
        hardness = evaluation.Evaluator().eval_hardness(g_sql)
        try:
            p_sql = process_sql.get_sql(schema, p_str)
        except Exception:
            p_sql = None
        if p_sql is None:
            p_sql = {"except": None, "from": {"conds": [], "table_units": []}, "groupBy": [],
                     "having": [], "intersect": None, "limit": None, "orderBy": [],
                     "select": [False, []], "union": None, "where": []}  # fmt: skip
        kmap = kmaps[db]
        g_valid = evaluation.build_valid_col_units(g_sql["from"]["table_units"], schema)
        g_sql = evaluation.rebuild_sql_col(g_valid, evaluation.rebuild_sql_val(g_sql), kmap)
        p_valid = evaluation.build_valid_col_units(p_sql["from"]["table_units"], schema)
        p_sql = evaluation.rebuild_sql_col(p_valid, evaluation.rebuild_sql_val(p_sql), kmap)
        exact = bool(evaluation.Evaluator().eval_exact_match(p_sql, g_sql))
        checked += 2
        try:
            mine = spider_exact_match(p_str, g_str, schema=sqlite_schema(dbs[db]),
                                      foreign_keys=foreign_key_map(entries[db]))  # fmt: skip
        except SpiderParseError as error:
            differ += 1
            print(f"real {db}: queryeval cannot read the gold ({error}): {g_str}")
            continue
        if (mine.exact, mine.hardness) != (exact, hardness):
            differ += 1
            print(f"real {db}: original ({exact}, {hardness}), queryeval ({mine.exact}, "
                  f"{mine.hardness})\n  gold: {g_str}\n  pred: {p_str}")  # fmt: skip
    print(f"real examples: {checked // 2} pairs, {differ} differ, {skipped} golds the original "
          "cannot parse")  # fmt: skip
    return checked, differ


if __name__ == "__main__":
    sys.exit(main())
