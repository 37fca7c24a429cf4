"""The parsing half of the sandbox, and the value codec of the gold cache (no engine runs)."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queryeval.engines._values import dumps, loads, plain_value
from queryeval.languages import cypher, kql, sql

READ_SQL = [
    "SELECT 1",
    "select * from orders where status = 'delete me'",  # a keyword inside a string
    "WITH t AS (SELECT 1 AS a) SELECT a FROM t",
    "SELECT 1 UNION ALL SELECT 2",
    "(SELECT 1)",
    "FROM orders",  # DuckDB's FROM-first query
    "SELECT update_count FROM t",  # a column named like a keyword
]
WRITE_SQL = [
    "DROP TABLE orders",
    "DELETE FROM orders",
    "UPDATE orders SET status = 'x'",
    "INSERT INTO orders VALUES (1)",
    "CREATE TABLE t AS SELECT 1",
    "ALTER TABLE orders ADD COLUMN x INT",
    "ATTACH 'other.db' AS other",
    "COPY orders TO 'out.csv'",
    "SELECT 1; DROP TABLE orders",
    "WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d",
    "SELECT * INTO backup FROM orders",
    "PRAGMA table_info(orders)",
    "SET threads = 1",
    "VACUUM",
    "INSTALL httpfs",
]


@pytest.mark.parametrize("query", READ_SQL)
@pytest.mark.parametrize("dialect", ["duckdb", "sqlite", "postgres"])
def test_read_queries_may_run(query: str, dialect: str) -> None:
    assert sql.read_only_refusal(query, dialect) is None


@pytest.mark.parametrize("query", WRITE_SQL)
def test_writes_and_statements_other_than_queries_are_refused(query: str) -> None:
    reason = sql.read_only_refusal(query, "duckdb")
    assert reason is not None


def test_unparseable_sql_with_a_write_keyword_is_refused_by_tokens() -> None:
    # sqlglot cannot parse this, so the token check decides: DROP is there.
    assert sql.read_only_refusal("SELEC 1; DROP TABLE orders", "duckdb") is not None
    # no write keyword: left to the (read-only) engine, which reports the syntax error
    assert sql.read_only_refusal("SELEC 1 FROM orders", "duckdb") is None


@pytest.mark.parametrize(
    "query",
    [
        ".drop table Logs",
        ".set T <| Logs",
        ".append Logs <| Logs | take 1",
        ".set-or-replace Logs <| Logs",
        "// a comment first\n.drop table Logs",
        ".create table T (a: int)",
    ],
)
def test_kql_control_commands_that_write_are_refused(query: str) -> None:
    assert kql.read_only_refusal(query) is not None


@pytest.mark.parametrize("query", ["Logs | take 3", ".show tables", "print x = '.drop'"])
def test_kql_queries_and_show_commands_may_run(query: str) -> None:
    assert kql.read_only_refusal(query) is None


@pytest.mark.parametrize(
    ("query", "clause"),
    [
        ("MATCH (n) DETACH DELETE n", "DETACH"),
        ("MATCH (n) DELETE n", "DELETE"),
        ("CREATE (:Person {name: 'x'})", "CREATE"),
        ("MERGE (p:Person {name: 'x'})", "MERGE"),
        ("MATCH (p:Person) SET p.name = 'x'", "SET"),
        ("MATCH (p:Person) REMOVE p.name", "REMOVE"),
        ("match (p) set p:Admin", "SET"),
        ("LOAD CSV FROM 'file:///x.csv' AS row RETURN row", "LOAD"),
        ("MATCH (m) FOREACH (x IN [1] | SET m.y = x)", "FOREACH"),
        ("DROP INDEX my_index", "DROP"),
    ],
)
def test_cypher_write_clauses_are_refused(query: str, clause: str) -> None:
    reason = cypher.read_only_refusal(query)
    assert reason is not None and clause in reason


def test_cypher_writing_procedures_and_several_statements_are_refused() -> None:
    assert cypher.read_only_refusal("CALL apoc.create.node(['X'], {}) YIELD node RETURN node")
    assert cypher.read_only_refusal("MATCH (n) RETURN n; MATCH (n) RETURN n")


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (n:Person) RETURN n.name",
        "MATCH (n) WHERE n.name = 'CREATE (x)' RETURN n",  # inside a string
        "MATCH (n) RETURN n.set, n.delete",  # properties named like clauses
        "MATCH (n) RETURN n {.name, create: 1}",  # a map key
        "MATCH (n:`DELETE`) RETURN n",  # a quoted label
        "MATCH (n) // DELETE n\nRETURN n",  # a comment
        "MATCH (n)-[:MERGE]->(m) RETURN m",  # a relationship type
        "CALL db.labels() YIELD label RETURN label",
        "MATCH (n) RETURN n;",  # one statement with a trailing semicolon
        "MATCH (a)-[r]->(b) RETURN a AS start, b AS delete",  # aliases
    ],
)
def test_cypher_reads_may_run(query: str) -> None:
    assert cypher.read_only_refusal(query) is None


@pytest.mark.parametrize(
    ("query", "refused"),
    [
        # one lexer for every Cypher reader: a number ends where its digits do, so a clause
        # glued to it is still a clause; a letter glued to a keyword makes one name
        ("MATCH (n) WITH n, 1CREATE (m:X) RETURN m", True),
        ("MATCH (n) WITH 1e5CREATE (m:X) RETURN m", True),
        ("MATCH (n) RETURN n.éCREATE", False),
        # an unterminated string or comment is no cover: what follows is read as code
        ("MATCH (n) RETURN 'x CREATE (m)", True),
        ("MATCH (n) /* DELETE n", True),
        ("MATCH (n) WHERE n.id = $create RETURN n", False),  # a parameter
        ("MATCH (n) WHERE n.id = $2SET n.x = 1", True),  # $2, then a SET clause
    ],
)
def test_cypher_lexer_edges(query: str, refused: bool) -> None:
    assert (cypher.read_only_refusal(query) is not None) is refused


VALUES = [
    None,
    True,
    3,
    -2.5,
    float("inf"),
    decimal.Decimal("1299.00"),
    dt.datetime(2024, 6, 1, 12, 0, tzinfo=dt.UTC),
    dt.datetime(2024, 6, 1, 12, 0, 0, 123456),
    dt.date(2024, 6, 1),
    dt.time(23, 59, 1),
    dt.timedelta(days=1, seconds=2, microseconds=3),
    b"\x00\xff",
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "text",
    [1, "a", None],
    {"labels": ["Movie"], "properties": {"title": "Heat", "rating": 8.3}},
]


def test_codec_keeps_every_value_and_its_type() -> None:
    back = loads(dumps(VALUES))
    assert back == VALUES
    assert [type(v) for v in back] == [type(v) for v in VALUES]


def test_codec_keeps_nan() -> None:
    (value,) = loads(dumps([float("nan")]))
    assert math.isnan(value)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text() | st.decimals(allow_nan=False)
        | st.floats(allow_nan=False) | st.datetimes() | st.dates() | st.binary(),
        lambda inner: st.lists(inner, max_size=4),
        max_leaves=12,
    )
)  # fmt: skip
def test_codec_round_trips_random_values(value: object) -> None:
    assert loads(dumps(value)) == value


def test_plain_value_turns_neo4j_time_values_into_datetime_ones() -> None:
    # (graph values are checked against the real engine in test_engines_cypher.py)
    import neo4j.time

    assert plain_value(neo4j.time.Date(2024, 6, 1)) == dt.date(2024, 6, 1)
    assert plain_value(neo4j.time.DateTime(2024, 6, 1, 12, 30)) == dt.datetime(2024, 6, 1, 12, 30)
    assert plain_value(neo4j.time.Duration(days=1, seconds=5)) == dt.timedelta(days=1, seconds=5)
    months = plain_value(neo4j.time.Duration(months=2))
    assert months == {"months": 2, "days": 0, "seconds": 0, "nanoseconds": 0}
    assert plain_value([neo4j.time.Date(2024, 1, 2)]) == [dt.date(2024, 1, 2)]
