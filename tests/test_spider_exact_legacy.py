"""`spider_exact_match(legacy=True)`: the official reader's accepted and rejected forms.

Each corpus entry says whether test-suite-sql-eval's ``process_sql.get_sql`` reads it, as
worked out from its code (the reason beside each). ``scripts/spider_em_crosscheck.py
--corpus`` runs the official code on every (gold, prediction) pair of this corpus and on
published Spider dev predictions, verdict by verdict (docs/benchmarks.md has the counts).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from queryeval.metrics.benchmarks import (
    SpiderParseError,
    foreign_key_map,
    spider_exact_match,
    sqlite_schema,
)
from queryeval.metrics.benchmarks._spider_legacy import (
    legacy_spider_sql,
    legacy_tokens,
    official_prediction_text,
    word_tokenize,
)
from test_spider_exact_match import SCHEMA_DB, TABLES

CORPUS_DB = "school"
CORPUS_ENTRY = TABLES


def corpus_database(root: Path) -> Path:
    """The corpus's SQLite database (empty tables) under ``root``."""
    return SCHEMA_DB(root)


class Form(NamedTuple):
    name: str
    sql: str
    read: bool  # whether the official reader reads it


# fmt: off
FORMS = [
    Form("plain", "SELECT name FROM student WHERE age > 20", True),
    Form("table_aliases", "SELECT T1.name FROM student AS T1 JOIN dept AS T2 "
         "ON T1.dept_id = T2.dept_id WHERE T2.dname = 'CS'", True),
    Form("join_without_on", "SELECT T1.name FROM student AS T1 JOIN enroll AS T2 "
         "WHERE T2.grade > 3", True),
    Form("count_distinct", "SELECT count(DISTINCT dept_id) FROM student", True),
    Form("group_having", "SELECT dept_id , count(*) FROM student GROUP BY dept_id "
         "HAVING count(*) > 1", True),
    Form("order_limit", "SELECT name FROM student ORDER BY age DESC LIMIT 3", True),
    Form("not_in_nested", "SELECT name FROM student WHERE stu_id NOT IN "
         "(SELECT stu_id FROM enroll)", True),
    Form("intersect", "SELECT name FROM student WHERE age > 20 INTERSECT "
         "SELECT name FROM student WHERE age < 30", True),
    Form("between", "SELECT name FROM student WHERE age BETWEEN 18 AND 25", True),
    Form("like", "SELECT name FROM student WHERE name LIKE '%a%'", True),
    Form("spaced_operator", "SELECT name FROM student WHERE age ! = 20", True),
    Form("double_quoted_value", 'SELECT name FROM student WHERE name = "Bob"', True),
    Form("semicolon", "SELECT name FROM student;", True),
    # the value reader runs on past "T2.budget" to the next AND: the OR branch is dropped
    Form("column_value_or", "SELECT T1.name FROM student AS T1 JOIN dept AS T2 ON "
         "T1.dept_id = T2.dept_id WHERE T1.age = T2.budget OR T1.age > 3", True),
    Form("ignored_tail", "SELECT name FROM student ORDER BY age LIMIT 1 OFFSET 2", True),
    Form("column_minus_column", "SELECT age - dept_id FROM student", True),
    Form("limit_value", "SELECT name FROM student ORDER BY age LIMIT value", True),  # -> 1
    Form("nested_from", "SELECT count(*) FROM (SELECT name FROM student)", True),
    Form("lower_case", "select name from student where age >= 20", True),
    # rejected
    Form("alias_without_as", "SELECT s.name FROM student s", False),  # 's' is no table
    Form("column_alias", "SELECT count(*) AS n FROM student", False),  # reads 'as' as a column
    Form("inner_join", "SELECT student.name FROM student INNER JOIN dept "
         "ON student.dept_id = dept.dept_id", False),  # 'inner' read as a table
    Form("left_join", "SELECT student.name FROM student LEFT JOIN dept "
         "ON student.dept_id = dept.dept_id", False),
    Form("comma_join", "SELECT student.name FROM student , dept "
         "WHERE student.dept_id = dept.dept_id", False),  # ',' read as a table
    Form("quoted_column", 'SELECT "name" FROM student', False),  # a text value, no column
    Form("backquoted_column", "SELECT `name` FROM student", False),
    Form("angle_not_equal", "SELECT name FROM student WHERE age <> 20", False),
    Form("is_not_null", "SELECT name FROM student WHERE age IS NOT NULL", False),
    Form("exists", "SELECT name FROM student WHERE EXISTS (SELECT * FROM enroll)", False),
    Form("parenthesised_condition", "SELECT name FROM student WHERE (age > 20 OR age < 10)",
         False),
    Form("in_list", "SELECT name FROM student WHERE age IN (18, 19)", False),
    Form("no_space_equals", "SELECT name FROM student WHERE age=20", False),  # one token
    Form("alias_named_as_table", "SELECT student.name FROM student AS student", False),
    Form("odd_quotes", "SELECT name FROM student WHERE name = \"O'Brien\"", False),
    Form("function", "SELECT lower(name) FROM student", False),
    Form("nested_from_alias", "SELECT count(*) FROM (SELECT name FROM student) AS t", False),
    Form("space_after_dot", "SELECT T1. name FROM student AS T1", False),
    Form("column_plus_number", "SELECT age + 1 FROM student", False),
    Form("number_then_period", "SELECT name FROM student WHERE age > 3. ORDER BY age", False),
    Form("not_a_query", "DROP TABLE student", False),
    Form("empty", "", False),
]
# fmt: on

CORPUS_PREDICTIONS = [f.sql for f in FORMS]
CORPUS_GOLDS = [f.sql for f in FORMS if f.read and "value" not in f.sql]


@pytest.fixture(scope="module")
def schema(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    return sqlite_schema(corpus_database(tmp_path_factory.mktemp("school")))


@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
def test_the_official_reader_reads_or_fails(schema: dict[str, list[str]], form: Form) -> None:
    text = official_prediction_text(form.sql)
    if form.read:
        assert legacy_spider_sql(text, schema)["select"][1]
    else:
        with pytest.raises(SpiderParseError, match="official"):
            legacy_spider_sql(text, schema)


def test_what_the_original_reads_differently(schema: dict[str, list[str]]) -> None:
    """The original's own readings: LIMIT as 1, the OR after a column value dropped, the
    last ORDER BY direction written, the text after the last clause ignored."""
    order = legacy_spider_sql("SELECT name FROM student ORDER BY age DESC, name ASC", schema)
    assert order["orderBy"][0] == "asc"
    assert legacy_spider_sql("SELECT name FROM student LIMIT 7", schema)["limit"] == 1
    where = legacy_spider_sql(FORMS[13].sql, schema)["where"]
    assert len(where) == 1  # the OR branch is not in the structure
    tail = legacy_spider_sql("SELECT name FROM student ORDER BY age nulls last", schema)
    assert tail["orderBy"][1] and tail["limit"] is None


def test_a_prediction_the_original_cannot_read_scores_as_empty(
    schema: dict[str, list[str]],
) -> None:
    """The default reads modern SQL (aliases without AS, INNER JOIN, quoted names) and
    scores it; the legacy mode gives the official 0."""
    gold = "SELECT T1.name FROM student AS T1 JOIN dept AS T2 ON T1.dept_id = T2.dept_id"
    kmap = foreign_key_map(TABLES)
    for pred in (
        "SELECT s.name FROM student s JOIN dept d ON s.dept_id = d.dept_id",
        "SELECT student.name FROM student INNER JOIN dept ON student.dept_id = dept.dept_id",
        'SELECT "student"."name" FROM student JOIN dept ON student.dept_id = dept.dept_id',
    ):
        default = spider_exact_match(pred, gold, schema=schema, foreign_keys=kmap)
        legacy = spider_exact_match(pred, gold, schema=schema, foreign_keys=kmap, legacy=True)
        assert default.exact and default.pred_parsed
        assert not legacy.exact and not legacy.pred_parsed
    same = "SELECT T1.name FROM student AS T1 JOIN dept AS T2 ON T1.dept_id = T2.dept_id"
    assert spider_exact_match(same, gold, schema=schema, foreign_keys=kmap, legacy=True).exact


def test_join_without_on_is_read_in_both_modes(schema: dict[str, list[str]]) -> None:
    gold = FORMS[2].sql
    pred = "SELECT T1.name FROM student AS T1 JOIN enroll AS T2 WHERE T2.grade > 9"
    for legacy in (False, True):
        result = spider_exact_match(pred, gold, schema=schema, legacy=legacy)
        assert result.exact and result.hardness == "medium"


def test_a_gold_the_original_cannot_read_is_unscored(schema: dict[str, list[str]]) -> None:
    with pytest.raises(SpiderParseError):
        spider_exact_match(FORMS[0].sql, "SELECT s.name FROM student s", schema=schema, legacy=True)
    # the default reads it
    assert spider_exact_match(FORMS[0].sql, "SELECT s.name FROM student s", schema=schema)


def test_value_in_the_prediction_becomes_1_as_officially(schema: dict[str, list[str]]) -> None:
    placeholder = "SELECT name FROM student WHERE age > value"
    assert spider_exact_match(placeholder, FORMS[0].sql, schema=schema, legacy=True).exact
    # the gold is not rewritten: 'value' is read as a column, which fails
    with pytest.raises(SpiderParseError):
        spider_exact_match(FORMS[0].sql, placeholder, schema=schema, legacy=True)


def test_tokens_as_word_tokenize_makes_them() -> None:
    from nltk.tokenize import word_tokenize as nltk_word_tokenize

    one_line = "SELECT count(*) , T1.name FROM singer AS T1 WHERE T1.age >= 3.5 ; "
    assert word_tokenize(one_line) == nltk_word_tokenize(one_line, preserve_line=True)
    # a period and a space end a Punkt sentence: the number loses its period there
    assert word_tokenize("a > 3. ORDER BY b")[:4] == ["a", ">", "3", "."]
    toks = legacy_tokens("SELECT a FROM t WHERE b = 'x' AND c ! = 2 AND d = 'It''s'")
    assert toks[7:12] == ['"x"', "and", "c", "!=", "2"]
    # two quoted texts side by side stay one token of both placeholders, as officially
    assert toks[-1] == "__val_50_53____val_54_56__"


def test_the_scorers_legacy_option(tmp_path: Path) -> None:
    """`spider_exact_match` with `legacy: true` on a suite's database: the official 0 for
    an alias without AS, named in the explanation; the default scores it 1."""
    from benchmark_files import concert_context
    from queryeval.cases import Attempt, Case, Output
    from queryeval.config import ScorerConfig
    from queryeval.scorers import build_scorer

    ctx = concert_context(tmp_path)
    case = Case.model_validate(
        {
            "id": "c",
            "conversation": [
                {"content": "q", "target": {"query": {"text": "SELECT name FROM singer"}}}
            ],
        }
    )
    pred = Output(attempts=[Attempt(query="SELECT s.name FROM singer s")])
    try:
        scores = {}
        for legacy in (False, True):
            config = ScorerConfig(
                name="spider_exact_match", options={"database": "concert", "legacy": legacy}
            )
            scores[legacy] = build_scorer(config).score(case, pred, ctx)
    finally:
        ctx.close()
    assert scores[False].value == 1.0
    assert scores[True].value == 0.0 and scores[True].details["pred_parsed"] is False
    assert "official reader" in scores[True].explanation
