"""`sql.plainly_unordered` (the text has no word ORDER) never says unordered where the parse
finds a top-level ordering, in any dialect; the comparator and the gold's ordering skip the
parse for such a query and answer as the parse does."""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

import pytest

from queryeval.languages import OrderInfo, plainly_unordered, result_ordering, sql
from queryeval.metrics import compare_results

ROOT = Path(__file__).resolve().parents[1]

TRAPS = [
    "SELECT a FROM t ORDER BY a",
    "select a from t order by a",
    "SELECT a FROM t ORDER/* x */BY a",
    "SELECT a FROM t ORDER\n-- c\nBY a",
    "SELECT a FROM t\tOrder\tBy 1",
    "SELECT 1ORDER BY 1",
    "SELECT 1e5ORDER BY 1",
    "SELECT 0xORDER BY 1",
    "SELECT a FROM t ORDER SIBLINGS BY a",
    "SELECT a FROM t SORT BY a",
    "SELECT a FROM t DISTRIBUTE BY a SORT BY a",
    "SELECT a FROM t CLUSTER BY a",
    "SELECT $order FROM t ORDER BY 1",
    "(SELECT a FROM t) ORDER BY a",
    "SELECT a FROM t UNION SELECT b FROM u ORDER BY 1",
    "SELECT * FROM (SELECT a FROM t ORDER BY a) s",
    "SELECT orders.order_id FROM orders",
    "SELECT a FROM t -- order by a",
    "SELECT 'order by a' FROM t",
    'SELECT "order" FROM t',
    "SELECT row_number() OVER (ORDER BY a) FROM t",
    "SELECT TOP 3 a FROM t",
    "SELECT a FROM t LIMIT 3",
    "SELECT a FROM t QUALIFY",
    "SELECT (",
    "SELECT a FROM t ORDÉR BY a",
]
_PIECES = [
    " ", "\n", "(", ")", "*", ",", ";", "'", '"', "`", "--", "/*", "*/", "#", "$", "@", "1",
    "2e", "0x", "_", "a", "t", "FROM", "WHERE", "ORDER", "order", "BY", "by", "ORDER BY",
    "SORT BY", "SIBLINGS", "orders", "LIMIT", "UNION", "SELECT", "OVER", "=",
]  # fmt: skip


def _corpus() -> tuple[list[str], list[str]]:
    """(real golds and predictions: the examples', the SQL bench's shapes; the traps and
    random texts built of SQL pieces)."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from _sql_data import _large_pair, _pair, _template_pair
    finally:
        sys.path.remove(str(ROOT / "bench"))
    rng = random.Random(31)
    real = []
    for pair in (_pair, _template_pair, _large_pair):
        for k in range(6):
            real.extend(pair(k, rng))
    for line in (ROOT / "examples" / "sql" / "predictions" / "baseline.jsonl").open():
        real.append(json.loads(line)["query"])
    made = list(TRAPS) + [
        rng.choice(["SELECT ", "select ", "(SELECT ", "WITH x AS (SELECT 1) SELECT "])
        + "".join(rng.choices(_PIECES, k=rng.randrange(1, 10)))
        for _ in range(20)
    ]
    return real, made


def test_no_word_order_means_no_ordering_in_any_dialect() -> None:
    """Real queries in the engines' dialects, made ones in every dialect sqlglot reads."""
    real, made = _corpus()
    every = sorted(set(sql.DIALECTS.values()), key=str)
    cases = [(q, ["duckdb", "sqlite"]) for q in real]
    cases += [(q, every) for q in made]
    cleared = [(q, dialects) for q, dialects in cases if sql.plainly_unordered(q)]
    assert 25 < len(cleared) < len(cases) - 25  # both answers are exercised
    for query, dialects in cleared:
        for dialect in dialects:
            try:
                order = sql.top_level_order(query, dialect)
            except (ValueError, RecursionError):
                continue  # not parsed: compared as a multiset all the same
            assert order == OrderInfo(False), (dialect, query)


def test_any_word_order_is_parsed() -> None:
    ordered = [t for t in TRAPS if re.search("ORDER(?![S_])", t.upper())]
    assert len(ordered) == 17
    assert not [t for t in ordered if sql.plainly_unordered(t)]


def test_the_fast_answer_is_the_comparators_for_sql_only() -> None:
    assert result_ordering("SELECT a FROM t QUALIFY", "duckdb") == OrderInfo(False)
    assert result_ordering("SELECT a FROM t ORDER BY a", "sqlite") == OrderInfo(True, (0,))
    assert not plainly_unordered("T | sort by a", "kql")
    assert not plainly_unordered("SELECT a FROM t", "prolog")  # unknown: the parse says so
    with pytest.raises(ValueError, match="unknown query language"):
        result_ordering("SELECT a FROM t", "prolog")
    gold = (["a"], [(1,), (2,)])
    got = compare_results((["a"], [(2,), (1,)]), gold, gold_query="SELECT a FROM t QUALIFY",
                          language="duckdb")  # fmt: skip
    assert got.exact and got.rows == "multiset" and got.notes == ()
