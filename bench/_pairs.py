"""Seeded generators of benchmark pairs: (prediction, reference) queries for the string
benches, (answer, reference) sentences for the embedding benches."""

from __future__ import annotations

import json
import random
from pathlib import Path

_CORPUS = Path(__file__).resolve().parent.parent / "examples" / "rag" / "data" / "corpus.jsonl"

_LABELS = ["Person", "Movie", "Genre", "User", "Company", "Product", "Order", "City"]
_RELS = ["ACTED_IN", "DIRECTED", "RATED", "IN_GENRE", "WORKS_AT", "BOUGHT", "LIVES_IN"]
_PROPS = ["name", "title", "released", "rating", "born", "price", "id", "since", "imdbRating"]
_VALUES = ["'Tom Hanks'", "'The Matrix'", "1999", "3.5", "'Berlin'", "$name", "10", "'Sci-Fi'"]
_SQL_TABLES = ["orders", "customers", "products", "sales_2024", "line_items"]


def _cypher(rng: random.Random) -> str:
    a, b = rng.sample(_LABELS, 2)
    rel = rng.choice(_RELS)
    p1, p2, p3 = rng.sample(_PROPS, 3)
    parts = [f"MATCH (n:{a})-[r:{rel}]->(m:{b})"]
    if rng.random() < 0.8:
        op = rng.choice(["=", ">", "<", ">=", "CONTAINS", "STARTS WITH"])
        parts.append(f"WHERE n.{p1} {op} {rng.choice(_VALUES)}")
        if rng.random() < 0.4:
            parts.append(f"AND m.{p2} IS NOT NULL")
    if rng.random() < 0.5:
        parts.append(f"WITH n, count(m) AS c{rng.randint(1, 3)}")
    ret = rng.choice(
        [
            f"RETURN n.{p1}, m.{p2}",
            f"RETURN n.{p1} AS {p1}, collect(m.{p3})[..5] AS items",
            f"RETURN avg(m.{p2}) AS avg_{p2}",
            "RETURN count(*)",
            f"RETURN DISTINCT m.{p3}",
        ]
    )
    parts.append(ret)
    if rng.random() < 0.5:
        parts.append(f"ORDER BY n.{p1} {rng.choice(['ASC', 'DESC'])}")
    if rng.random() < 0.4:
        parts.append(f"LIMIT {rng.randint(1, 50)}")
    return rng.choice([" ", "\n"]).join(parts)


def _sql(rng: random.Random) -> str:
    t = rng.choice(_SQL_TABLES)
    c1, c2 = rng.sample(_PROPS, 2)
    q = f"SELECT {c1}, SUM({c2}) AS total FROM {t} WHERE {c1} >= {rng.randint(0, 999)}.5"
    return q + rng.choice(["", f" GROUP BY {c1}", f" GROUP BY {c1} ORDER BY total DESC LIMIT 5;"])


def _mutate(rng: random.Random, text: str) -> str:
    tokens = text.split(" ")
    for _ in range(rng.randint(0, 4)):
        i = rng.randrange(len(tokens))
        kind = rng.random()
        if kind < 0.3:
            tokens[i] = rng.choice(_PROPS + _RELS + _VALUES)
        elif kind < 0.5 and len(tokens) > 1:
            del tokens[i]
        elif kind < 0.7:
            j = rng.randrange(len(tokens))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        else:
            tokens.insert(i, rng.choice(["DISTINCT", "OPTIONAL", "n.name", "LIMIT 10", ","]))
    out = " ".join(tokens)
    return out.lower() if rng.random() < 0.1 else out


def query_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """`n` (prediction, reference) pairs: Cypher (80 %) and SQL queries, the prediction a
    noisy edit of the reference (or, 10 % of the time, an unrelated query)."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        ref = _cypher(rng) if rng.random() < 0.8 else _sql(rng)
        pred = _mutate(rng, ref) if rng.random() < 0.9 else _cypher(rng)
        pairs.append((pred, ref))
    return pairs


def answer_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """`n` (answer, reference) pairs of the RAG example's corpus sentences (the answer one
    with a word dropped); every text distinct, so no side profits from duplicates."""
    rng = random.Random(seed)
    sentences = [
        s
        for line in _CORPUS.read_text(encoding="utf-8").splitlines()
        for s in json.loads(line)["text"].split(". ")
        if len(s.split()) > 4
    ]
    pairs = []
    for i in range(n):
        words = rng.choice(sentences).split()
        drop = rng.randrange(len(words))
        answer = " ".join(words[:drop] + words[drop + 1 :]) + f" (answer {i})"
        pairs.append((answer, f"{rng.choice(sentences)} (reference {i})"))
    return pairs
