"""Work done once per case however many scorers ask: each distinct SQL text is parsed at
most once (the sandbox's read-only check needs only tokens when they settle it; the gold's
ordering), the predicted and gold results are compared once for execution_match and
results_f1, and seed 002's legacy_recall is computed only when results_match_legacy is
configured."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from queryeval.cases import Attempt, Case, Output
from queryeval.config import ScorerConfig, load_suite
from queryeval.languages import sql
from queryeval.scorers import ScoringContext, build_scorer
from queryeval.scorers.execution import Gold

SQL_SUITE = Path(__file__).resolve().parents[1] / "examples" / "sql" / "suite.yaml"
GOLD = "SELECT country, count(*) AS n FROM customers GROUP BY country ORDER BY n DESC, 1"


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[ScoringContext]:
    context = ScoringContext(load_suite(SQL_SUITE), cache_dir=tmp_path)
    yield context
    context.close()


def case() -> Case:
    target = {"query": {"text": GOLD, "database": "sales"}}
    return Case.model_validate({"id": "c", "conversation": [{"content": "q", "target": target}]})


def out(query: str) -> Output:
    return Output(attempts=[Attempt(query=query)])


def scorer(name: str, **options: Any) -> Any:
    return build_scorer(ScorerConfig(name=name, options=options))


def test_each_distinct_query_is_parsed_once(ctx: ScoringContext) -> None:
    sql.parsed.cache_clear()
    pred = "SELECT country, count(customer_id) FROM customers GROUP BY 1 ORDER BY 2 DESC, 1"
    for name in ("executes", "execution_match", "results_f1"):
        scorer(name).score(case(), out(pred), ctx)
    assert sql.parsed.cache_info().misses == 1  # the gold, once, for its ordering
    # the read-only checks of both needed only tokens; a query they cannot clear is parsed
    sql.read_only_refusal("SELECT 1; SELECT 2", "duckdb")
    sql.read_only_refusal("SELECT 1; SELECT 2", "duckdb")
    assert sql.parsed.cache_info().misses == 2


def test_a_gold_ordering_is_kept_with_the_gold_cache(tmp_path: Path) -> None:
    """A second run reads the gold's ordering from the gold cache: no parse, the same
    scores (the ordering's row policy and sort keys, as compare_results finds them)."""
    pred = "SELECT country, count(customer_id) FROM customers GROUP BY 1 ORDER BY 2 DESC, 1"
    scores = []
    for _ in range(2):
        sql.parsed.cache_clear()
        context = ScoringContext(load_suite(SQL_SUITE), cache_dir=tmp_path)
        scores.append([scorer(n).score(case(), out(pred), context)
                       for n in ("execution_match", "results_f1")])  # fmt: skip
        context.close()
    assert sql.parsed.cache_info().misses == 0  # the second run parsed nothing
    first, second = ([s.model_dump() for s in run] for run in scores)
    for a, b in zip(first, second, strict=True):
        a["details"]["execution"].pop("elapsed_s")
        b["details"]["execution"].pop("elapsed_s")
    assert first == second
    comparison = first[0]["details"]["comparisons"][0]
    assert comparison["rows"] == "ordered" and comparison["notes"] == []


@pytest.mark.parametrize(
    ("gold", "policy"),
    [
        (GOLD, {}),
        ("SELECT country, count(*) AS n FROM customers GROUP BY country", {}),
        ("SELECT country, count(*) AS n FROM customers GROUP BY country", {"rows": "ordered"}),
        (GOLD, {"rows": "ordered"}),
        (GOLD, {"rows": "multiset"}),
        ("SELECT country, count(*) AS n FROM customers GROUP BY country QUALIFY", {}),
    ],
)
def test_the_ordering_read_once_gives_what_compare_results_finds(
    ctx: ScoringContext, gold: str, policy: dict[str, Any]
) -> None:
    from queryeval.metrics import compare_results

    execution = ctx.gold_execution("sales", GOLD)
    pred = ctx.execute("sales", "SELECT country, count(*) FROM customers GROUP BY 1")
    got = scorer("execution_match", comparison=policy)._compare(
        pred, Gold(0, "query", execution.result, gold, database="sales"), policy, "duckdb",
        case(), ctx,
    )  # fmt: skip
    direct = compare_results(pred.result, execution.result, **policy, gold_query=gold,
                             language="duckdb", legacy=False)  # fmt: skip
    assert got == direct


def test_a_parse_error_is_kept_as_its_message() -> None:
    first = sql.parsed("SELECT (", "duckdb")
    assert isinstance(first, str) and first == sql.parsed("SELECT (", "duckdb")
    with pytest.raises(ValueError, match="cannot parse SQL"):
        sql.top_level_order("SELECT (", "duckdb")


def test_execution_scorers_share_one_comparison(
    ctx: ScoringContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    import queryeval.metrics as metrics

    calls: list[bool] = []
    original = metrics.compare_results

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["legacy"])
        return original(*args, **kwargs)

    monkeypatch.setattr(metrics, "compare_results", counted)
    pred = "SELECT country, count(*) FROM customers GROUP BY 1 ORDER BY 2 DESC, 1"
    ex = scorer("execution_match").score(case(), out(pred), ctx)
    f1 = scorer("results_f1").score(case(), out(pred), ctx)
    assert calls == [False]  # compared once, without legacy_recall
    assert ex.value == f1.value == 1.0
    assert "legacy_recall" not in ex.details["comparisons"][0]


def test_legacy_recall_only_when_a_scorer_reports_it(ctx: ScoringContext) -> None:
    pred = "SELECT country, count(*) AS n FROM customers GROUP BY 1 ORDER BY 2 DESC, 1"
    legacy = scorer("results_match_legacy")
    legacy.prepare([case()], ctx)  # the run prepares every scorer before scoring
    ex = scorer("execution_match").score(case(), out(pred), ctx)
    assert ex.details["comparisons"][0]["legacy_recall"] == 1.0
    assert legacy.score(case(), out(pred), ctx).value == 1.0


def test_legacy_recall_is_added_to_a_shared_comparison_made_without_it(
    ctx: ScoringContext,
) -> None:
    pred = "SELECT country, count(*) AS n FROM customers GROUP BY 1 ORDER BY 2 DESC, 1"
    ex = scorer("execution_match").score(case(), out(pred), ctx)
    assert "legacy_recall" not in ex.details["comparisons"][0]
    score = scorer("results_match_legacy").score(case(), out(pred), ctx)  # not prepared
    assert score.value == 1.0 and score.details["metrics"] == {"legacy_recall": 1.0}


TRICKY = [
    "SELECT 1; DROP TABLE t",
    "SELECT * INTO t2 FROM t",
    "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x",
    "with t as (select 1) insert into u select * from t",
    "SELECT 'DROP TABLE t' AS s",
    "SELECT 1;",
    "SELECT " + "(" * 3000 + "1" + ")" * 3000,
    "SELECT replace(a, 'x', 'y') FROM t",
    'select "drop" from t',
    "SELECT * FROM t FOR UPDATE",
    "SELECT a FROM t WHERE b IN (SELECT c FROM u) ORDER BY 1",
]


@pytest.mark.parametrize("query", TRICKY)
@pytest.mark.parametrize("dialect", [None, "duckdb", "sqlite", "postgres"])
def test_the_token_pass_lets_through_only_what_the_parse_does(
    query: str, dialect: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = sql._plainly_read_only(query, dialect)
    monkeypatch.setattr(sql, "_plainly_read_only", lambda q, d: False)
    try:
        full = sql.read_only_refusal(query, dialect)
    except RecursionError:
        full = "nested too deeply"
    assert not fast or full is None


_PIECES = [
    " ", "\n", "\t", "(", ")", "*", ",", ".", ";", "'", '"', "`", "[", "]", "--", "/*", "*/",
    "#", "$", "$$", "@", ":", "0x", "0b", "1", "2e", "1_0", "_", "a", "users", "offset", "set",
    "Set", "insert", "INTO", "drop", "load", "use", "copy", "call", "Replace", "N'", "E'",
    "U&'", "$tag$", "=", "-", "+", "/", "|", "?", "{", "}", "FROM", "WHERE", "ORDER BY", "''",
]  # fmt: skip


def test_the_text_pass_clears_only_what_the_token_pass_does() -> None:
    """`_plain_text` (a regular expression, no tokens) never clears a query that the token
    pass would send to the parse, in any dialect: hand-picked traps and random ones."""
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import SqlglotError

    dialects = sorted(set(sql.DIALECTS.values()), key=str)
    for d in dialects:  # the head check relies on no multi-word keyword after SELECT/WITH
        keywords = Dialect.get_or_raise(d).tokenizer_class.KEYWORDS
        assert not [k for k in keywords if k.upper().startswith(("SELECT ", "WITH "))]
    rng = random.Random(16)
    heads = ["SELECT ", "select\n", "WITH ", "SELECT(", "SELECT*", "  SELECT "]
    queries = [*TRICKY, "SELECT 1set", "SELECT 0xSET", "SELECT $set", "SELECT a FROM users"]
    queries += [rng.choice(heads) + "".join(rng.choices(_PIECES, k=rng.randrange(1, 12)))
                for _ in range(1500)]  # fmt: skip
    cleared = [q for q in queries if sql._plain_text(q)]
    assert len(cleared) > 500
    for query in cleared:
        for d in dialects:
            try:
                Dialect.get_or_raise(d).tokenize(query)
            except SqlglotError:
                continue  # the parse fails too, and so does the token fallback: it runs
            assert sql._plain_tokens(query, d), (d, query)
