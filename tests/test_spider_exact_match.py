"""Spider's exact-set-match and hardness on worked examples.

Expected values were worked out by hand from the official rules (test-suite-sql-eval's
``evaluation.py``: values ignored, DISTINCT ignored, foreign keys folded, clause-by-clause
set comparison; ``eval_hardness``'s counts); ``scripts/crosscheck_legacy.py`` runs the
original on the same examples.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import NamedTuple

import pytest

from queryeval.metrics.benchmarks import (
    SpiderParseError,
    foreign_key_map,
    spider_exact_match,
    spider_hardness,
    sqlite_schema,
)

TABLES = {
    "db_id": "school",
    "table_names_original": ["student", "dept", "enroll"],
    "column_names_original": [
        [-1, "*"],
        [0, "stu_id"],
        [0, "name"],
        [0, "age"],
        [0, "dept_id"],
        [1, "dept_id"],
        [1, "dname"],
        [1, "budget"],
        [2, "stu_id"],
        [2, "course"],
        [2, "grade"],
    ],
    "foreign_keys": [[4, 5], [8, 1]],
}


def SCHEMA_DB(root: Path) -> Path:
    """The school database (empty tables) and its tables.json under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "school.sqlite"
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE student (stu_id INT, name TEXT, age INT, dept_id INT);"
        "CREATE TABLE dept (dept_id INT, dname TEXT, budget REAL);"
        "CREATE TABLE enroll (stu_id INT, course TEXT, grade INT);"
    )
    con.close()
    (root / "tables.json").write_text(json.dumps([TABLES]))
    return path


class Worked(NamedTuple):
    name: str
    pred: str
    gold: str
    exact: bool
    hardness: str  # of the gold


# fmt: off
WORKED = [
    # values are ignored: 30 vs 20. Hardness: one component (WHERE), nothing else: easy
    Worked("values_ignored", "SELECT name FROM student WHERE age > 30",
           "SELECT name FROM student WHERE age > 20", True, "easy"),
    # aliases and table order do not matter; JOIN ... ON conditions are not compared.
    # Hardness: WHERE + one join = 2 components: medium
    Worked("aliases_and_join_order",
           "SELECT student.name FROM dept JOIN student ON dept.dept_id = student.dept_id "
           "WHERE dept.dname = 'Math'",
           "SELECT T1.name FROM student AS T1 JOIN dept AS T2 ON T1.dept_id = T2.dept_id "
           "WHERE T2.dname = 'CS'", True, "medium"),
    Worked("distinct_ignored", "SELECT name FROM student", "SELECT DISTINCT name FROM student",
           True, "easy"),
    # ORDER BY direction differs. Hardness: ORDER BY + LIMIT = 2 components: medium
    Worked("order_direction", "SELECT name FROM student ORDER BY age LIMIT 1",
           "SELECT name FROM student ORDER BY age DESC LIMIT 1", False, "medium"),
    # select items match as a set; GROUP BY columns without their table. Hardness: GROUP BY
    # (1 component) and two select columns (1 "other"): medium
    Worked("select_as_a_set", "SELECT count(*), dept_id FROM student GROUP BY student.dept_id",
           "SELECT dept_id, count(*) FROM student GROUP BY dept_id", True, "medium"),
    # a foreign key and the key it references are one column
    Worked("foreign_key_folded",
           "SELECT T1.dept_id FROM student AS T1 JOIN dept AS T2 ON T1.dept_id = T2.dept_id",
           "SELECT T2.dept_id FROM student AS T1 JOIN dept AS T2 ON T1.dept_id = T2.dept_id",
           True, "easy"),
    # nested queries are compared (their values dropped, their operators kept).
    # Hardness: one nested query with one component: hard
    Worked("nested_operator",
           "SELECT name FROM student WHERE stu_id IN (SELECT stu_id FROM enroll WHERE grade < 90)",
           "SELECT name FROM student WHERE stu_id IN (SELECT stu_id FROM enroll WHERE grade > 90)",
           False, "hard"),
    Worked("iuen", "SELECT name FROM student WHERE age > 20 INTERSECT SELECT name FROM student "
           "WHERE age < 10", "SELECT name FROM student WHERE age > 20 UNION SELECT name FROM "
           "student WHERE age < 10", False, "hard"),
    # a prediction Spider cannot read is the empty query
    Worked("unknown_column", "SELECT nonexistent FROM student", "SELECT name FROM student",
           False, "easy"),
    # AND vs OR. Hardness: WHERE + OR + LIKE = 3 components, a 5-item WHERE (1 other): hard
    Worked("and_or", "SELECT name FROM student WHERE age > 20 AND dept_id = 1 AND name LIKE 'A%'",
           "SELECT name FROM student WHERE age > 20 AND dept_id = 1 OR name LIKE 'A%'",
           False, "hard"),
    # the parser's quirk: after "= T2.dept_id" (a column) the original reads on to the next
    # AND, so the OR branch is not in its structure: the same WHERE, and hardness WHERE +
    # one join = medium (not hard)
    Worked("or_after_a_column",
           "SELECT T1.name FROM student AS T1 JOIN dept AS T2 ON T1.stu_id = T2.budget "
           "WHERE T1.dept_id = T2.dept_id",
           "SELECT T1.name FROM student AS T1 JOIN dept AS T2 ON T1.stu_id = T2.budget "
           "WHERE T1.dept_id = T2.dept_id OR T1.age > 20", True, "medium"),
    Worked("spaced_not_equal", "SELECT name FROM student WHERE age != 1",
           "SELECT name FROM student WHERE age ! = 2", True, "easy"),
    # the quirk: in HAVING the "and" counts as an aggregation, count(*) and avg(age) do not;
    # one aggregation is not "more than one", so GROUP BY alone makes it easy
    Worked("having_counting_quirk",
           "SELECT dept_id FROM student GROUP BY dept_id HAVING count(*) > 1 AND avg(age) > 20",
           "SELECT dept_id FROM student GROUP BY dept_id HAVING count(*) > 1 AND avg(age) > 20",
           True, "easy"),
]
# fmt: on


@pytest.fixture(scope="module")
def schema(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    return sqlite_schema(SCHEMA_DB(tmp_path_factory.mktemp("school")))


@pytest.mark.parametrize("example", WORKED, ids=[w.name for w in WORKED])
def test_worked_examples(schema: dict[str, list[str]], example: Worked) -> None:
    result = spider_exact_match(
        example.pred, example.gold, schema=schema, foreign_keys=foreign_key_map(TABLES)
    )
    assert result.exact is example.exact
    assert result.hardness == example.hardness
    assert spider_hardness(example.gold, schema) == example.hardness


def test_clause_scores(schema: dict[str, list[str]]) -> None:
    order = spider_exact_match(WORKED[3].pred, WORKED[3].gold, schema=schema)
    assert order.partial["order"].f1 == 0 and order.partial["select"].f1 == 1
    assert order.partial["keywords"].f1 == 0  # "desc" is a keyword, "asc" the default
    and_or = spider_exact_match(WORKED[9].pred, WORKED[9].gold, schema=schema)
    assert and_or.partial["and/or"].f1 == 0 and and_or.partial["where"].f1 == 1
    assert not spider_exact_match(
        "SELECT x FROM nope", "SELECT name FROM student", schema=schema
    ).pred_parsed


def test_without_foreign_keys_the_columns_differ(schema: dict[str, list[str]]) -> None:
    example = WORKED[5]
    assert not spider_exact_match(example.pred, example.gold, schema=schema).exact


def test_a_gold_spider_cannot_read_is_an_error(schema: dict[str, list[str]]) -> None:
    with pytest.raises(SpiderParseError):
        spider_exact_match("SELECT 1", "SELECT nope FROM student", schema=schema)


def test_foreign_key_groups_take_their_lowest_column() -> None:
    kmap = foreign_key_map(TABLES)
    assert kmap["__dept.dept_id__"] == kmap["__student.dept_id__"] == "__student.dept_id__"
    assert kmap["__enroll.stu_id__"] == "__student.stu_id__"
