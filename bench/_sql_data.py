"""A small synthetic sales database (DuckDB) and text-to-SQL cases on it, seeded, for
bench_sql_scoring: distinct gold queries of five everyday shapes (a count, a GROUP BY, an
ordered listing, a join with ORDER BY and LIMIT, a range scan), and predictions that are
right in other words, right with columns reordered, wrong, or failing to run. Two more
suite shapes (`SHAPES`): ten templates on a 3,000-row table with `max_rows` 100,000, and
results of thousands of rows through Arrow."""

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


SHAPES = {
    "bench": "five shapes on 500 customers and 20,000 orders (the default limits)",
    "templates": "ten templates on a 3,000-row sales table, max_rows 100,000 (small results, "
    "numbers and strings as Arrow, dates as rows; floats, decimals, dates, NULLs)",
    "large": "results of 2,000-40,000 rows of a 60,000-row sales table, max_rows 100,000 "
    "(through Arrow)",
}
REGIONS = ["north", "south", "east", "west", "centre", None]
PRODUCTS = [f"p{i:02d}" for i in range(40)]


def build_sales(path: Path, rows: int, seed: int = 7) -> None:
    """sales (`rows` rows: an id, a region with NULLs, a product, a quantity, a DECIMAL
    price, a DOUBLE amount, a day) in a DuckDB file, from DuckDB's seeded random()."""
    import duckdb

    con = duckdb.connect(str(path))
    con.execute(f"SELECT setseed({seed % 1000 / 1000})")
    regions = "[" + ", ".join(f"'{r}'" if r else "NULL" for r in REGIONS) + "]"
    con.execute(
        "CREATE TABLE sales AS SELECT i::INTEGER AS id, "
        f"{regions}[1 + floor(random() * {len(REGIONS)})::INTEGER] AS region, "
        f"printf('p%02d', floor(random() * {len(PRODUCTS)})::INTEGER) AS product, "
        "(1 + floor(random() * 20))::INTEGER AS qty, "
        "round(1 + random() * 999, 2)::DECIMAL(10, 2) AS price, "
        "round(random() * 1000, 3)::DOUBLE AS amount, "
        "DATE '2024-01-01' + floor(random() * 365)::INTEGER AS day "
        f"FROM range({rows}) t(i) ORDER BY i"
    )
    con.close()


def _template_pair(k: int, rng: random.Random) -> tuple[str, str]:
    """Gold and predicted SQL of case `k` of the ten-template shape: right in other words
    or with columns reordered, wrong in a parameter (25%), failing (10%)."""
    region = REGIONS[k % 5]
    product = PRODUCTS[(k // 10) % len(PRODUCTS)]
    q, d, a = k % 17 + 1, (k * 7) % 300, (k * 13) % 2900
    fate = rng.random()
    w = fate < 0.25
    templates = [
        (f"SELECT count(*) FROM sales WHERE region = '{region}' AND qty > {q}",
         f"SELECT COUNT(id) AS n FROM sales WHERE qty > {q + w} AND region = '{region}'"),
        (f"SELECT product, sum(qty) AS units FROM sales WHERE region = '{region}' "
         f"AND qty <= {q} GROUP BY product",
         f"SELECT sum(qty), product FROM sales WHERE qty <= {q - w} AND region = '{region}' "
         "GROUP BY product"),
        (f"SELECT avg(amount) FROM sales WHERE product = '{product}' AND qty >= {q}",
         f"SELECT avg(amount) AS mean FROM sales WHERE qty >= {q + 2 * w} "
         f"AND product = '{product}'"),
        (f"SELECT id, amount FROM sales WHERE qty = {q} AND region = '{region}' ORDER BY id",
         f"SELECT s.id, s.amount FROM sales s WHERE s.region = '{region}' AND s.qty = {q} "
         f"ORDER BY s.id{' DESC' if w else ''}"),
        (f"SELECT region, max(price) AS top FROM sales WHERE day >= DATE '2024-01-01' + {d} "
         "GROUP BY region",
         f"SELECT max(price), region FROM sales WHERE day >= DATE '2024-01-01' + {d + 40 * w} "
         "GROUP BY region"),
        (f"SELECT day, count(*) AS n FROM sales WHERE product = '{product}' "
         f"AND day >= DATE '2024-01-01' + {d} GROUP BY day ORDER BY day LIMIT 10",
         f"SELECT day, count(*) FROM sales WHERE product = '{product}' AND "
         f"day > DATE '2024-01-01' + {d - 1 + 3 * w} GROUP BY 1 ORDER BY 1 LIMIT 10"),
        (f"SELECT product, avg(price) AS mean FROM sales WHERE qty > {q} GROUP BY product "
         f"HAVING count(*) > {q}",
         f"SELECT product, avg(price) FROM sales WHERE qty > {q} GROUP BY product "
         f"HAVING count(*) > {q + 5 * w}"),
        (f"SELECT id, region, product FROM sales WHERE id BETWEEN {a} AND {a + 30}",
         f"SELECT product, id, region FROM sales WHERE id >= {a} AND id <= {a + 30 - w}"),
        (f"SELECT sum(amount) FROM sales WHERE region = '{region}' "
         f"AND day < DATE '2024-01-01' + {d}",
         f"SELECT sum(amount) AS total FROM sales WHERE day < DATE '2024-01-01' + {d + w} "
         f"AND region = '{region}'"),
        ("SELECT region, product, count(*) AS n FROM sales WHERE qty > "
         f"{q} GROUP BY region, product ORDER BY n DESC, region, product LIMIT 5",
         "SELECT region, product, count(*) AS n FROM sales WHERE qty > "
         f"{q + w} GROUP BY ALL ORDER BY 3 DESC, 1, 2 LIMIT 5"),
    ]  # fmt: skip
    gold, pred = templates[k % 10]
    if 0.25 <= fate < 0.35:  # does not run
        pred = pred.replace("qty", "quantity") if k % 2 else pred.replace("SELECT", "SELEC", 1)
    return gold, pred


def _large_pair(k: int, rng: random.Random) -> tuple[str, str]:
    """Gold and predicted SQL returning 2,000-40,000 rows of the 60,000-row table."""
    low = (k * 997) % 20_000
    size = 2_000 + (k * 3_571) % 38_000
    fate = rng.random()
    w = fate < 0.25
    if k % 2:
        gold = f"SELECT id, qty, amount FROM sales WHERE id >= {low} AND id < {low + size}"
        pred = f"SELECT amount, id, qty FROM sales WHERE id BETWEEN {low} AND {low + size - 1 - w}"
    else:
        gold = (f"SELECT product, region, qty, count(*) AS n FROM sales WHERE id < {low + size} "
                "GROUP BY ALL")  # fmt: skip
        pred = (f"SELECT count(*), product, region, qty FROM sales WHERE id <= {low + size - 1} "
                f"AND qty > {int(w)} GROUP BY product, region, qty")  # fmt: skip
    if 0.25 <= fate < 0.35:
        pred = pred.replace("SELECT", "SELEC", 1)
    return gold, pred


def write_suite(folder: Path, n: int, seed: int = 7, shape: str = "bench") -> Path:
    """shop.duckdb, cases.jsonl, predictions.jsonl and suite.yaml (executes,
    execution_match, results_f1; json report) with `n` cases of a shape (`SHAPES`); returns
    the suite path."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    options = ""
    if shape == "bench":
        build_database(folder / "shop.duckdb", seed)
        pair = _pair
    else:
        build_sales(folder / "shop.duckdb", 3_000 if shape == "templates" else 60_000, seed)
        pair = _template_pair if shape == "templates" else _large_pair
        options = ", options: {max_rows: 100000}"
    with (folder / "cases.jsonl").open("w") as cf, (folder / "predictions.jsonl").open("w") as pf:
        for k in range(n):
            gold, pred = pair(k, rng)
            turn = {"role": "user", "content": f"question {k}", "target": {"query": gold}}
            case = {"id": f"c{k}", "conversation": [turn]}
            cf.write(json.dumps(case) + "\n")
            pf.write(json.dumps({"case_id": f"c{k}", "query": pred, "language": "sql"}) + "\n")
    (folder / "suite.yaml").write_text(
        "name: bench-sql\ncases: cases.jsonl\n"
        f"databases:\n  shop: {{engine: duckdb, path: shop.duckdb{options}}}\n"
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
