"""A small suite with planted gold defects of every audit kind, on SQLite and DuckDB (and
KQL from the example's fixture), and the (case, kind) pairs planted: `tests/test_audit*.py`
and `tests/test_overlay*.py`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

PEOPLE = [
    (1, "Ada", "Paris", 30),
    (2, "Bob", "London", 25),
    (3, "Cy", "Paris", 25),
    (4, "Dee", "Berlin", 41),
    (5, "Eve", "London", 35),
    (6, "Fay", "Berlin", 52),
]
ORDERS = [(1, 1, 10.0), (2, 1, 5.5), (3, 2, 7.0), (4, 4, 12.0), (5, 6, 3.0)]

QUESTIONS = {
    # clean golds: nothing to find
    "ok-count": ("How many people are there?", "SELECT count(*) FROM people"),
    "ok-paris": (
        "Who lives in Paris?",
        "SELECT name FROM people WHERE city = 'Paris' ORDER BY name",
    ),
    "ok-group": ("Average age per city?", "SELECT city, avg(age) FROM people GROUP BY city"),
    "ok-top": (
        "Who is the youngest (by name on ties)?",
        "SELECT name FROM people ORDER BY age, name LIMIT 1",
    ),
    "ok-join": (
        "Total spent per person?",
        "SELECT p.name, sum(o.amount) FROM people p JOIN "
        "orders o ON o.person_id = p.id GROUP BY p.name",
    ),
    "ok-in": (
        "How many live in London or Berlin?",
        "SELECT count(*) FROM people WHERE city IN ('London', 'Berlin')",
    ),
    "ok-max": ("Who is the oldest?", "SELECT name, max(age) FROM people"),
    "ok-same-a": (
        "How many people live in London?",
        "SELECT count(*) FROM people WHERE city = 'London'",
    ),
    "ok-same-b": (
        "how many people live in london ?",
        "SELECT count(id) FROM people WHERE city = 'London'",
    ),
    "ok-older": (
        "How many people are older than 26?",
        "SELECT count(*) FROM people WHERE age > 26",
    ),
    # planted defects
    "bad-fails": ("How many products?", "SELECT count(*) FROM products"),
    "bad-limit": ("Name two people.", "SELECT name FROM people LIMIT 2"),
    "bad-ties": ("Who is the youngest?", "SELECT name FROM people ORDER BY age LIMIT 1"),
    "bad-bare": ("A name per city?", "SELECT city, name, count(*) FROM people GROUP BY city"),
    "bad-empty": ("Who is over 100?", "SELECT name FROM people WHERE age > 100"),
    "bad-null": ("Oldest age over 100?", "SELECT max(age) FROM people WHERE age > 100"),
    "bad-ignores": ("How many people are there at least?", "SELECT count(*) >= 0 FROM people"),
    "bad-case": (
        "How many live in Paris?",
        "SELECT name FROM people WHERE city = 'paris' OR age > 50",
    ),
    "bad-typo": (
        "How many live in London?",
        "SELECT name FROM people WHERE city IN ('Londn', 'Berlin')",
    ),
    "bad-disputed": (
        "How many people are older than 30?",
        "SELECT count(*) FROM people WHERE age > 40",
    ),
    "bad-conflict-a": (
        "How many people live in Berlin?",
        "SELECT count(*) FROM people WHERE city = 'Berlin'",
    ),
    "bad-conflict-b": ("How many people live in Berlin?", "SELECT count(*) FROM people"),
}

PLANTED = {
    ("bad-fails", "gold_fails"),
    ("bad-limit", "nondeterministic"),
    ("bad-ties", "nondeterministic"),
    ("bad-bare", "nondeterministic"),
    ("bad-empty", "non_discriminating"),
    ("bad-null", "non_discriminating"),
    ("bad-ignores", "non_discriminating"),
    ("bad-case", "unknown_literal"),
    ("bad-typo", "unknown_literal"),
    ("bad-disputed", "disputed"),
    ("bad-conflict-a", "conflicting_golds"),
    ("bad-conflict-b", "conflicting_golds"),
    # on DuckDB
    ("duck-fails", "gold_fails"),
    ("duck-limit", "nondeterministic"),
    ("duck-typo", "unknown_literal"),
    ("duck-empty", "non_discriminating"),
    # on KQL (the example's logs)
    ("kql-fails", "gold_fails"),
    ("kql-empty", "non_discriminating"),
    ("kql-take", "nondeterministic"),
    ("kql-typo", "unknown_literal"),
    ("kql-conflict-a", "conflicting_golds"),
    ("kql-conflict-b", "conflicting_golds"),
}

DUCK = {
    "duck-ok": ("Cities by name?", "SELECT DISTINCT city FROM people ORDER BY city"),
    "duck-ok-literal": ("Berliners?", "SELECT name FROM people WHERE city = 'Berlin' ORDER BY 1"),
    "duck-fails": ("Broken?", "SELECT nope FROM people"),
    "duck-limit": ("Any three names?", "SELECT name FROM people LIMIT 3"),
    "duck-typo": (
        "Berliners count?",
        "SELECT name FROM people WHERE city LIKE 'Berl_n%' OR city = 'Paaris' ORDER BY 1",
    ),
    "duck-empty": ("Nobody?", "SELECT name FROM people WHERE age < 0"),
}

KQL = {
    "kql-ok": ("How many log records are there?", "Logs | count"),
    "kql-fails": ("Broken KQL?", "NoSuchTable | count"),
    "kql-empty": ("Negative durations?", "Logs | where DurationMs < 0 | project Message"),
    "kql-ok-sorted": (
        "The first two messages?",
        "Logs | sort by Timestamp asc, OperationId asc | take 2 | project Message",
    ),
    "kql-ok-literal": ("How many errors?", "Logs | where Level =~ 'error' | count"),
    "kql-take": ("Any three messages?", "Logs | take 3 | project Message"),
    "kql-typo": (
        "Errors and warnings per level?",
        "Logs | where Level in ('Eror', 'Warning') | summarize n = count() by Level",
    ),
    "kql-conflict-a": ("Records per level?", "Logs | summarize n = count() by Level"),
    "kql-conflict-b": ("Records per level?", "Logs | summarize n = count() by Service"),
}


def make_databases(folder: Path) -> None:
    """shop.sqlite and shop.duckdb with the same rows."""
    import duckdb

    folder.mkdir(parents=True, exist_ok=True)
    ddl = [
        "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, city TEXT, age INTEGER)",
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER, amount DOUBLE)",
    ]
    con = sqlite3.connect(folder / "shop.sqlite")
    for statement in ddl:
        con.execute(statement)
    con.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", PEOPLE)
    con.executemany("INSERT INTO orders VALUES (?, ?, ?)", ORDERS)
    con.commit()
    con.close()
    duck = duckdb.connect(str(folder / "shop.duckdb"))
    for statement in ddl:
        duck.execute(statement)
    duck.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", PEOPLE)
    duck.executemany("INSERT INTO orders VALUES (?, ?, ?)", ORDERS)
    duck.close()


def _case(case_id: str, question: str, query: str, database: str, language: str = "sql") -> dict:
    return {
        "id": case_id,
        "conversation": [
            {
                "content": question,
                "target": {"query": {"text": query, "database": database, "language": language}},
            }
        ],
    }


def make_suite(
    folder: Path, *, kql: bool = True, extra: str = "", only: set[str] | None = None
) -> Path:
    """The planted suite in `folder` (databases, cases, three systems' predictions); `only`:
    just these cases."""
    make_databases(folder)
    cases = [_case(i, q, s, "shop") for i, (q, s) in QUESTIONS.items()]
    cases += [_case(i, q, s, "duck") for i, (q, s) in DUCK.items()]
    if kql:
        cases += [_case(i, q, s, "logs", "kql") for i, (q, s) in KQL.items()]
    if only is not None:
        cases = [c for c in cases if c["id"] in only]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "preds").mkdir(exist_ok=True)
    for n, system in enumerate(["a", "b", "c"]):
        lines = []
        for case_id, (_, gold) in QUESTIONS.items():
            if only is not None and case_id not in only:
                continue
            query = gold
            if case_id == "bad-disputed":
                query = "SELECT count(*) FROM people WHERE age > 30"
            if case_id == "ok-older":  # three systems wrong, each differently: no dispute
                query = f"SELECT count(*) FROM people WHERE age > {27 + 10 * n}"
            lines.append(json.dumps({"case_id": case_id, "query": query}))
        (folder / "preds" / f"{system}.jsonl").write_text("\n".join(lines) + "\n")
    logs = ""
    if kql:
        fixture = EXAMPLES / "kql" / "fixtures" / "logs"
        logs = (
            f"  logs: {{engine: kql, fixture: '{fixture}', "
            "options: {now: '2024-06-01T12:00:00Z', timeout_s: 5}}\n"
        )
    suite = folder / "suite.yaml"
    suite.write_text(
        "name: planted\ncases: cases.jsonl\ndatabases:\n"
        "  shop: {engine: sqlite, path: shop.sqlite, options: {timeout_s: 5}}\n"
        "  duck: {engine: duckdb, path: shop.duckdb, options: {timeout_s: 5}}\n"
        + logs
        + "systems:\n"
        "  - {name: a, predictions: preds/a.jsonl}\n"
        "  - {name: b, predictions: preds/b.jsonl}\n"
        "  - {name: c, predictions: preds/c.jsonl}\n"
        "scorers: [execution_match]\n" + extra
    )
    return suite
