"""A small synthetic sales database (DuckDB) and text-to-SQL cases on it, seeded, for
bench_sql_scoring: distinct gold queries of five everyday shapes (a count, a GROUP BY, an
ordered listing, a join with ORDER BY and LIMIT, a range scan), and predictions that are
right in other words, right with columns reordered, wrong, or failing to run."""

from __future__ import annotations

import json
import random
from pathlib import Path

COUNTRIES = ["FR", "DE", "US", "JP", "BR", "IN", "NG", "CA", "ES", "IT"]
STATUSES = ["placed", "shipped", "delivered", "returned"]
CUSTOMERS = 500
ORDERS = 20_000


def build_database(path: Path, seed: int = 7) -> None:
    """customers (500 rows) and orders (20,000 rows) in a DuckDB file, from DuckDB's own
    seeded random()."""
    import duckdb

    con = duckdb.connect(str(path))
    con.execute(f"SELECT setseed({seed % 1000 / 1000})")
    countries = "[" + ", ".join(f"'{c}'" for c in COUNTRIES) + "]"
    statuses = "[" + ", ".join(f"'{s}'" for s in STATUSES) + "]"
    con.execute(
        "CREATE TABLE customers AS SELECT i::INTEGER AS id, printf('customer %04d', i) AS name, "
        f"{countries}[1 + floor(random() * {len(COUNTRIES)})::INTEGER] AS country "
        f"FROM range({CUSTOMERS}) t(i)"
    )
    con.execute(
        "CREATE TABLE orders AS SELECT i::INTEGER AS order_id, "
        f"floor(random() * {CUSTOMERS})::INTEGER AS customer_id, "
        "round(5 + random() * 495, 2) AS amount, "
        f"{statuses}[1 + floor(random() * {len(STATUSES)})::INTEGER] AS status, "
        "DATE '2024-01-01' + floor(random() * 365)::INTEGER AS day "
        f"FROM range({ORDERS}) t(i) ORDER BY i"
    )
    con.close()


def _pair(k: int, rng: random.Random) -> tuple[str, str]:
    """Gold and predicted SQL of case `k`."""
    c, t = k % CUSTOMERS, k // CUSTOMERS  # every gold differs: (c, t) is unique per shape
    country = COUNTRIES[k % len(COUNTRIES)]
    low = (k // 5) % 480
    shape, fate = k % 5, rng.random()
    wrong = fate < 0.25
    if shape == 0:
        gold = f"SELECT count(*) AS n FROM orders WHERE customer_id = {c} AND amount > {t}"
        pred = (f"SELECT COUNT(order_id) FROM orders WHERE amount > {t} AND customer_id = "
                f"{c + wrong}")  # fmt: skip
    elif shape == 1:
        gold = (f"SELECT status, count(*) AS n FROM orders WHERE customer_id = {c} "
                f"AND day >= DATE '2024-01-01' + {t} GROUP BY status")  # fmt: skip
        pred = (f"SELECT count(*) AS orders, status FROM orders WHERE customer_id = {c} AND "
                f"day >= DATE '2024-01-01' + {t + 30 * wrong} GROUP BY status")  # fmt: skip
    elif shape == 2:
        gold = (f"SELECT order_id, amount FROM orders WHERE customer_id = {c} "
                f"AND order_id >= {t} ORDER BY order_id")  # fmt: skip
        pred = (f"SELECT o.order_id, o.amount FROM orders AS o WHERE o.customer_id = {c} "
                f"AND o.order_id >= {t} ORDER BY o.order_id{' DESC' if wrong else ''}")  # fmt: skip
    elif shape == 3:
        cut = f"{k * 0.13:.2f}"
        gold = ("SELECT c.name, sum(o.amount) AS total FROM orders o JOIN customers c "
                f"ON c.id = o.customer_id WHERE c.country = '{country}' AND o.amount > {cut} "
                "GROUP BY c.name ORDER BY total DESC, c.name LIMIT 5")  # fmt: skip
        pred = ("SELECT c.name, round(sum(o.amount), 2) AS total FROM customers c JOIN orders "
                f"o ON o.customer_id = c.id WHERE c.country = '{country}' AND o.amount > "
                f"{k * 0.13 + 50 * wrong:.2f} GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5")  # fmt: skip
    else:
        gold = f"SELECT name, country FROM customers WHERE id BETWEEN {low} AND {low + 20 + t}"
        pred = (f"SELECT country, name FROM customers WHERE id >= {low} AND id <= "
                f"{low + 20 + t - wrong}")  # fmt: skip
    if 0.25 <= fate < 0.35:  # does not run: a misspelt column or a syntax error
        pred = (
            pred.replace("customer_id", "customerid")
            if k % 2
            else pred.replace("SELECT", "SELEC", 1)
        )
    return gold, pred


def write_suite(folder: Path, n: int, seed: int = 7) -> Path:
    """shop.duckdb, cases.jsonl, predictions.jsonl and suite.yaml (executes,
    execution_match, results_f1; json report) with `n` cases; returns the suite path."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    build_database(folder / "shop.duckdb", seed)
    with (folder / "cases.jsonl").open("w") as cf, (folder / "predictions.jsonl").open("w") as pf:
        for k in range(n):
            gold, pred = _pair(k, rng)
            turn = {"role": "user", "content": f"question {k}", "target": {"query": gold}}
            case = {"id": f"c{k}", "conversation": [turn]}
            cf.write(json.dumps(case) + "\n")
            pf.write(json.dumps({"case_id": f"c{k}", "query": pred, "language": "sql"}) + "\n")
    (folder / "suite.yaml").write_text(
        "name: bench-sql\ncases: cases.jsonl\n"
        "databases:\n  shop: {engine: duckdb, path: shop.duckdb}\n"
        "systems:\n  - {name: sys, predictions: predictions.jsonl}\n"
        "scorers: [executes, execution_match, results_f1]\nreports: [json]\n"
    )
    return folder / "suite.yaml"


def pairs(folder: Path) -> list[tuple[str, str]]:
    """(gold, predicted) SQL of every case of a suite written by `write_suite`."""
    with (folder / "cases.jsonl").open() as cf, (folder / "predictions.jsonl").open() as pf:
        return [
            (json.loads(c)["conversation"][0]["target"]["query"], json.loads(p)["query"])
            for c, p in zip(cf, pf, strict=True)
        ]
