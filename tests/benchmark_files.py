"""Small files in the formats of Spider, SParC, BIRD and Spider 2.0-lite, written by tests."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

SINGERS = [(1, "Ann", 31, "FR"), (2, "Bob", 25, "US"), (3, "Cid", 40, "FR")]
CONCERTS = [(10, 1, 2019), (11, 1, 2020), (12, 3, 2020)]


def make_db(path: Path, singers: list[tuple[Any, ...]] = SINGERS) -> Path:
    """A SQLite database with a singer and a concert table."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute(
        "CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, age INTEGER, country TEXT)"
    )
    con.execute(
        "CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, singer_id INTEGER "
        "REFERENCES singer(singer_id), year INTEGER)"
    )
    con.executemany("INSERT INTO singer VALUES (?, ?, ?, ?)", singers)
    con.executemany("INSERT INTO concert VALUES (?, ?, ?)", CONCERTS)
    con.commit()
    con.close()
    return path


TABLES = [
    {
        "db_id": "concert",
        "table_names_original": ["singer", "concert"],
        "table_names": ["singer", "concert"],
        "column_names_original": [
            [-1, "*"],
            [0, "singer_id"],
            [0, "name"],
            [0, "age"],
            [0, "country"],
            [1, "concert_id"],
            [1, "singer_id"],
            [1, "year"],
        ],
        "column_names": [
            [-1, "*"],
            [0, "singer id"],
            [0, "name"],
            [0, "age"],
            [0, "country"],
            [1, "concert id"],
            [1, "singer id"],
            [1, "year"],
        ],
        "column_types": ["text", "number", "text", "number", "text", "number", "number", "number"],
        "primary_keys": [1, 5],
        "foreign_keys": [[6, 1]],
    }
]

DEV = [
    {
        "db_id": "concert",
        "question": "How many singers are there?",
        "query": "SELECT count(*) FROM singer",
    },
    {
        "db_id": "concert",
        "question": "Names of singers older than 30.",
        "query": "SELECT name FROM singer WHERE age > 30",
    },
    {
        "db_id": "concert",
        "question": "Name and age of every singer, oldest first.",
        "query": "SELECT name, age FROM singer ORDER BY age DESC",
    },
    {
        "db_id": "concert",
        "question": "How many concerts per year?",
        "query": "SELECT year, count(*) FROM concert GROUP BY year",
    },
]

PREDICTIONS = [
    "SELECT count(singer_id) AS n FROM singer",  # another alias: right
    "SELECT name FROM singer WHERE age >= 31",  # right here, wrong on the variant
    "SELECT age, name FROM singer ORDER BY age",  # columns swapped (fine), wrong order
    "SELECT count(*), year FROM concert GROUP BY year\tignored after a TAB",  # right
]


def spider_folder(root: Path, *, variant: bool = True) -> Path:
    """``root/spider``: dev.json, tables.json, dev_gold.sql, database/concert/*.sqlite."""
    folder = root / "spider"
    make_db(folder / "database" / "concert" / "concert.sqlite")
    if variant:  # a test-suite variant where "age >= 31" and "age > 30" differ
        rows = [*SINGERS, (4, "Dee", 30.5, "DE")]
        make_db(folder / "database" / "concert" / "concert_1.sqlite", rows)
    (folder / "dev.json").write_text(json.dumps(DEV))
    (folder / "tables.json").write_text(json.dumps(TABLES))
    (folder / "dev_gold.sql").write_text("".join(f"{d['query']}\t{d['db_id']}\n" for d in DEV))
    return folder


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def concert_context(root: Path) -> Any:
    """A ScoringContext over a suite with one SQLite database, ``concert``."""
    from queryeval.config import SuiteConfig
    from queryeval.scorers import ScoringContext

    db = make_db(root / "concert" / "concert.sqlite")
    suite = SuiteConfig.model_validate(
        {
            "name": "t",
            "cases": "x",
            "systems": [{"name": "s", "predictions": "p"}],
            "databases": {"concert": {"engine": "sqlite", "path": str(db)}},
        }
    )
    return ScoringContext(suite, cache_dir=root / "cache")
