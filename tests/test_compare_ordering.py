"""top_level_order: top-level ordering found by parsing SQL, KQL and Cypher."""

from __future__ import annotations

import pytest

from queryeval.languages import OrderInfo, kql, top_level_order


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("SELECT a FROM t", OrderInfo(False)),
        ("SELECT a, b FROM t ORDER BY a", OrderInfo(True, (0,))),
        (
            "SELECT name, COUNT(*) AS n FROM t GROUP BY name ORDER BY n DESC, 1",
            OrderInfo(True, (1, 0)),
        ),
        ("SELECT a AS x FROM t ORDER BY a LIMIT 3", OrderInfo(True, (0,))),
        ("SELECT t.a, COUNT(*) FROM t GROUP BY 1 ORDER BY COUNT(*) DESC", OrderInfo(True, (1,))),
        ("SELECT a FROM t ORDER BY lower(b)", OrderInfo(True, (None,))),
        ("SELECT a FROM t ORDER BY b", OrderInfo(True, ("b",))),
        ("SELECT * FROM t ORDER BY b", OrderInfo(True, ("b",))),
        # ORDER BY only inside a subquery, a CTE or a window: the result is not ordered
        ("SELECT * FROM (SELECT a FROM t ORDER BY a) s", OrderInfo(False)),
        ("WITH c AS (SELECT a FROM t ORDER BY a) SELECT a FROM c", OrderInfo(False)),
        ("SELECT a, ROW_NUMBER() OVER (ORDER BY a) AS r FROM t", OrderInfo(False)),
        ("SELECT a FROM t WHERE a IN (SELECT a FROM u ORDER BY a LIMIT 3)", OrderInfo(False)),
        # a UNION's trailing ORDER BY orders the whole union
        ("SELECT a FROM x UNION SELECT a FROM y ORDER BY a", OrderInfo(True, (0,))),
        ("(SELECT a FROM t ORDER BY a)", OrderInfo(True, (0,))),
        ("SELECT 'ORDER BY a' AS s FROM t", OrderInfo(False)),
        ("SELECT a FROM t -- ORDER BY a", OrderInfo(False)),
        ("CREATE TEMP TABLE x AS SELECT 1; SELECT a FROM t ORDER BY a", OrderInfo(True, (0,))),
    ],
)
def test_sql(query: str, expected: OrderInfo) -> None:
    assert top_level_order(query, "sql") == expected


def test_sql_dialects() -> None:
    assert top_level_order("SELECT TOP 3 a FROM t ORDER BY a", "tsql").ordered
    assert top_level_order("SELECT a FROM t ORDER BY a NULLS LAST", "duckdb").ordered
    assert top_level_order("SELECT a FROM t ORDER BY a", "sql", dialect="sqlite").ordered


def test_sql_parse_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="cannot parse SQL"):
        top_level_order("SELECT FROM WHERE (", "sql")


def test_unknown_language() -> None:
    with pytest.raises(ValueError, match="unknown query language"):
        top_level_order("x", "prolog")


KQL_CASES = [
    ("T | where x > 1", OrderInfo(False)),
    ("T | sort by a desc, b asc", OrderInfo(True, ("a", "b"))),
    ("T | order by a", OrderInfo(True, ("a",))),
    ("T | top 5 by x", OrderInfo(True, ("x",))),
    ("T | sort by a | take 10", OrderInfo(True, ("a",))),
    ("T | sort by a nulls first | project a, b | extend c = 1", OrderInfo(True, ("a",))),
    ("T | sort by tolower(a), b", OrderInfo(True, (None, "b"))),
    # order discarded by a later operator
    ("T | sort by a | summarize count() by b", OrderInfo(False)),
    ("T | sort by a | distinct a", OrderInfo(False)),
    ("T | sort by a | join (U) on k", OrderInfo(False)),
    ("T | sort by a | count", OrderInfo(False)),
    # ordering only inside a subquery
    ("T | join (U | sort by a) on k", OrderInfo(False)),
    ("let t = T | sort by a; t | project a", OrderInfo(False)),
    ("let n = 5;\nT | top n by x desc", OrderInfo(True, ("x",))),
    ("T | where s == 'a | sort by b' | project s", OrderInfo(False)),
    ("T // | sort by a\n| project a", OrderInfo(False)),
    # sort keys follow renames and are lost when projected away or overwritten
    (
        "T | summarize n = count() by level | sort by n desc | project Level = level, Count = n",
        OrderInfo(True, ("Count",)),
    ),
    ("T | sort by a, b | project b, c", OrderInfo(True, (None, "b"))),
    ("T | sort by a | project-rename c = a", OrderInfo(True, ("c",))),
    ("T | sort by a, b | extend a = 1, d = 2", OrderInfo(True, (None, "b"))),
    ("T | sort by a, b | project-away b", OrderInfo(True, ("a", None))),
    (
        "Traces | where timestamp > ago(1h) | summarize count() by level | order by count_ desc",
        OrderInfo(True, ("count_",)),
    ),
]


@pytest.mark.parametrize(("query", "expected"), KQL_CASES)
def test_kql(query: str, expected: OrderInfo) -> None:
    assert top_level_order(query, "kql") == expected


@pytest.mark.parametrize(("query", "expected"), KQL_CASES)
def test_kql_pipe_splitter_agrees_with_the_parser(query: str, expected: OrderInfo) -> None:
    assert kql.order_by_pipes(query) == expected


def test_kql_operators_the_parser_cannot_lower_use_the_splitter() -> None:
    query = "T | mv-apply x on (sort by y) | sort by z | project z"
    assert top_level_order(query, "kql") == OrderInfo(True, ("z",))
    assert top_level_order("T | sort by ['my col']", "kql") == OrderInfo(True, ("my col",))


def test_kql_the_grammar_misses_falls_back_to_the_splitter() -> None:
    # duckdb-kql's grammar rejects a bare `serialize`, which Kusto accepts
    assert top_level_order("T | sort by a | serialize", "kql") == OrderInfo(True, ("a",))


@pytest.mark.parametrize(
    ("query", "language"),
    [("T | where (", "kql"), ("T | where x)", "kql"), ("MATCH (m RETURN m", "cypher")],
)
def test_unbalanced_brackets_are_parse_errors(query: str, language: str) -> None:
    with pytest.raises(ValueError, match="cannot parse"):
        top_level_order(query, language)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("MATCH (m:Movie) RETURN m.title", OrderInfo(False)),
        (
            "MATCH (m:Movie) RETURN m.title AS title, m.year ORDER BY m.year DESC, title LIMIT 5",
            OrderInfo(True, (1, 0)),
        ),
        (
            "MATCH (p)-[:ACTED_IN]->(m) RETURN p.name, count(m) AS n ORDER BY n DESC SKIP 1",
            OrderInfo(True, (1,)),
        ),
        ("MATCH (m) RETURN DISTINCT m.year ORDER BY m.year", OrderInfo(True, (0,))),
        ("MATCH (m) RETURN * ORDER BY m", OrderInfo(True, ("m",))),
        ("MATCH (m) RETURN m.title ORDER BY toLower(m.title)", OrderInfo(True, (None,))),
        # WITH ... ORDER BY, or one inside CALL { }, does not order the final result
        ("MATCH (m) WITH m ORDER BY m.year LIMIT 3 RETURN m.title", OrderInfo(False)),
        ("CALL { MATCH (m) RETURN m ORDER BY m.year } RETURN m.title", OrderInfo(False)),
        (
            "MATCH (m) RETURN m.title ORDER BY m.title "
            "UNION MATCH (n) RETURN n.title ORDER BY n.title",
            OrderInfo(False),
        ),
        ("MATCH (m) WHERE m.t = 'RETURN x ORDER BY y' RETURN m.t", OrderInfo(False)),
        ("MATCH (m) // RETURN m ORDER BY m\nRETURN m.title", OrderInfo(False)),
        ("MATCH (m) RETURN m.title AS `the title` ORDER BY `the title`", OrderInfo(True, (0,))),
        (
            "MATCH (m) RETURN [x IN m.tags | x] AS tags, m.year ORDER BY m.year",
            OrderInfo(True, (1,)),
        ),
    ],
)
def test_cypher(query: str, expected: OrderInfo) -> None:
    assert top_level_order(query, "cypher") == expected
