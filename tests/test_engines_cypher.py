"""Cypher on a real embedded ArcadeDB (bundled JRE, Bolt plugin on 127.0.0.1) through the
official neo4j driver. One server serves the whole session (it takes seconds to start; see
tests/graph_support.py); the example suite's selftest and predictions run on it too."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph_support import share_engine, with_built_fixtures
from queryeval.cases import Attempt, Output, load_cases
from queryeval.engines import Engine, engine_from_context
from queryeval.runner import load_suite, selftest
from queryeval.scorers import ScoringContext, build_scorer

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "examples" / "cypher" / "suite.yaml"
LIMIT_S = 2.0  # the suite's options.timeout_s


@pytest.fixture(scope="module")
def ctx(
    tmp_path_factory: pytest.TempPathFactory, movies_engine: Engine
) -> Iterator[ScoringContext]:
    suite = load_suite(SUITE)
    context = ScoringContext(suite, cache_dir=tmp_path_factory.mktemp("cache"))
    share_engine(context, "movies", movies_engine)  # the session's server (tests/conftest.py)
    yield context
    context.close()


@pytest.fixture(scope="module")
def graph(ctx: ScoringContext) -> Engine:
    engine = engine_from_context(ctx, "movies")
    assert engine.limits.timeout_s == LIMIT_S
    return engine


def fingerprint(engine: Engine) -> tuple[int, int, str]:
    """Node and relationship counts and a checksum of every label, type and property."""
    nodes = engine.execute("MATCH (n) RETURN labels(n) AS labels, properties(n) AS props").result
    rels = engine.execute(
        "MATCH (a)-[r]->(b) RETURN type(r) AS type, properties(r) AS props, "
        "properties(a) AS start, properties(b) AS end"
    ).result
    assert nodes is not None and rels is not None
    lines = sorted(json.dumps(row, sort_keys=True, default=str) for row in nodes.rows)
    lines += sorted(json.dumps(row, sort_keys=True, default=str) for row in rels.rows)
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    return len(nodes.rows), len(rels.rows), digest


def test_the_fixture_graph_is_what_the_seed_says(graph: Engine) -> None:
    from queryeval.engines._graph import load_graph_seed

    seed = load_graph_seed(SUITE.parent / "fixtures" / "movies.yaml")
    nodes, rels, _ = fingerprint(graph)
    assert (nodes, rels) == (len(seed.nodes), len(seed.relationships))
    assert len(seed.nodes) == 22 + 50 + 9  # movies, people, genres
    run = graph.execute(
        "MATCH (p:Person)-[r:ACTED_IN]->(:Movie {title: 'The Matrix'}) "
        "RETURN p.name AS name, r.roles AS roles ORDER BY name"
    )
    assert run.result is not None
    assert run.result.rows[0] == ("Carrie-Anne Moss", ["Trinity"])


WRITES = [
    "MATCH (n) DETACH DELETE n",
    "MATCH ()-[r:ACTED_IN]->() DELETE r",
    "CREATE (:Person {name: 'Intruder'})",
    "MERGE (:Movie {title: 'New'})",
    "MATCH (m:Movie) SET m.rating = 0",
    "MATCH (p:Person) REMOVE p.born",
]


@pytest.mark.parametrize("query", WRITES)
def test_writes_are_refused_and_the_graph_is_unchanged(graph: Engine, query: str) -> None:
    before = fingerprint(graph)
    assert graph.execute(query).outcome.kind == "refused"
    assert fingerprint(graph) == before


@pytest.mark.parametrize("query", ["MATCH (n) DETACH DELETE n", "CREATE (:Person {name: 'x'})"])
def test_the_server_itself_refuses_writes(graph: Engine, query: str) -> None:
    """Defence in depth: past the parser, the read-only user is refused by the server."""
    before = fingerprint(graph)
    with pytest.raises(Exception) as info:
        graph._run(query)
    assert graph.classify(info.value)[0] == "refused"
    assert fingerprint(graph) == before


def test_a_write_past_the_parser_is_rolled_back(graph: Engine) -> None:
    """ArcadeDB checks an update's permission at commit; the READ transaction is rolled
    back instead, so the change never lands."""
    before = fingerprint(graph)
    graph._run("MATCH (m:Movie) SET m.rating = 0 RETURN count(m)")
    assert fingerprint(graph) == before
    rated = graph.execute("MATCH (m:Movie) WHERE m.rating = 0 RETURN count(m) AS n")
    assert rated.result is not None and rated.result.rows == ((0,),)


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (a), (b), (c), (d), (e) RETURN a.name, b.name, c.name, d.name, e.name",
        "MATCH p = (a)-[*]-(b) RETURN count(p)",
    ],
)
def test_a_runaway_query_times_out_and_the_next_one_runs(graph: Engine, query: str) -> None:
    start = time.perf_counter()
    run = graph.execute(query)
    assert run.outcome.kind == "timeout", run.outcome.message
    tries = 2 if "quiet slot" in run.outcome.message else 1  # once more on a loaded machine
    assert time.perf_counter() - start < 1.5 * LIMIT_S * tries
    after = graph.execute("MATCH (m:Movie) RETURN count(m) AS n")
    assert after.result is not None and after.result.rows == ((22,),)


@pytest.mark.parametrize(
    "query",
    [
        "UNWIND range(1, 1000000000) AS x RETURN count(x)",
        "UNWIND range(1, 1000000000) AS x RETURN collect(x)",
        "UNWIND range(1, 1000000000) AS x WITH x ORDER BY x DESC RETURN x LIMIT 1",
    ],
    ids=["count", "collect", "sort"],
)
def test_a_memory_bomb_ends_within_the_limits(graph: Engine, query: str) -> None:
    """A billion rows: cut by the time limit or by the queries' heap budget, never the
    server's death; the next query runs."""
    start = time.perf_counter()
    run = graph.execute(query)
    assert run.outcome.kind in ("timeout", "resource_limit"), run.outcome.message
    tries = 2 if "quiet slot" in run.outcome.message else 1  # once more on a loaded machine
    assert time.perf_counter() - start < 1.5 * LIMIT_S * tries
    after = graph.execute("MATCH (m:Movie) RETURN count(m) AS n")
    assert after.result is not None and after.result.rows == ((22,),)


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("MATCH (p:Person RETURN p", "syntax"),
        ("MATCH (n) RETURN undefined_variable", "syntax"),
        ("RETURN 1 / 0", "runtime"),
        # Cypher answers no rows; a name the graph lacks is the query's schema error
        ("MATCH (n:NoSuchLabel) RETURN n", "schema"),
    ],
)
def test_failures_are_classified(graph: Engine, query: str, kind: str) -> None:
    assert graph.execute(query).outcome.kind == kind


def test_graph_values_come_back_plain(graph: Engine) -> None:
    run = graph.execute(
        "MATCH p = (:Person {name: 'Al Pacino'})-[:ACTED_IN]->(m:Movie {title: 'Heat'}) RETURN m, p"
    )
    assert run.result is not None
    movie, path = run.result.rows[0]
    heat = {"title": "Heat", "released": 1995, "runtime": 170, "rating": 8.3}
    assert movie == {"labels": ["Movie"], "properties": heat}
    assert path["relationships"] == [
        {"type": "ACTED_IN", "properties": {"roles": ["Vincent Hanna"]}}
    ]
    assert [n["labels"] for n in path["nodes"]] == [["Person"], ["Movie"]]


def test_the_row_cap_truncates(ctx: ScoringContext, graph: Engine) -> None:
    from dataclasses import replace

    capped = graph.limits
    graph.limits = replace(capped, max_rows=5)
    try:
        run = graph.execute("MATCH (p:Person) RETURN p.name")
    finally:
        graph.limits = capped
    assert run.outcome.truncated and run.outcome.row_count == 5


def test_schema_lists_labels_types_and_patterns(graph: Engine) -> None:
    schema = graph.schema()
    assert schema["labels"]["Person"] == ["born", "name"]
    assert schema["relationship_types"]["ACTED_IN"] == ["roles"]
    assert ["Person", "DIRECTED", "Movie"] in schema["patterns"]


def test_selftest_ceiling_is_one(ctx: ScoringContext, graph: Engine) -> None:
    assert ctx.suite is not None
    cases = load_cases(ctx.suite.cases, ctx.suite.base_dir)
    report = selftest(ctx.suite, cases, ctx)
    assert report.checked == 22 and report.skipped == ["cy-22"]
    assert report.ceiling == 1.0, report.failures


EXPECTED_KINDS = {"cy-07": "refused", "cy-09": "refused", "cy-12": "syntax", "cy-14": "timeout",
                  "cy-15": "schema", "cy-18": "syntax"}  # fmt: skip
EXPECTED_MATCH = {"cy-02", "cy-05", "cy-08", "cy-13", "cy-19", "cy-21", "cy-22"}


def test_example_predictions_score_as_designed(ctx: ScoringContext, graph: Engine) -> None:
    assert ctx.suite is not None
    cases = {c.id: c for c in load_cases(ctx.suite.cases, ctx.suite.base_dir)}
    scorer = build_scorer(ctx.suite.scorers[1])
    assert scorer.name == "execution_match"
    lines = (SUITE.parent / "predictions" / "baseline.jsonl").read_text().splitlines()
    matched, kinds = set(), {}
    for line in lines:
        record = json.loads(line)
        output = Output(attempts=[Attempt(query=record["query"], language="cypher")])
        score = scorer.score(cases[record["case_id"]], output, ctx)
        kinds[record["case_id"]] = score.details["execution"]["kind"]
        if score.value == 1.0:
            matched.add(record["case_id"])
    assert matched == EXPECTED_MATCH
    assert {k: v for k, v in kinds.items() if v != "ok"} == EXPECTED_KINDS


def test_the_query_heap_budget_ends_a_query_as_a_resource_limit(
    tmp_path_factory: pytest.TempPathFactory, built_fixtures: Path
) -> None:
    """A live ArcadeDB with a small `memory_limit` (its queries' heap budget) and a long
    time limit: a sort of 5 million rows runs out of budget, not time, and is the query's
    `resource_limit` (it was `runtime`); the server answers the next query."""
    suite = load_suite(SUITE)
    movies = suite.databases["movies"]
    movies.options = {**movies.options, "timeout_s": 60.0, "memory_limit": "8MiB"}
    cache = with_built_fixtures(tmp_path_factory.mktemp("budget") / "cache", built_fixtures)
    context = ScoringContext(suite, cache_dir=cache)  # its own server, the session's graph
    try:
        engine = engine_from_context(context, "movies")
        run = engine.execute("UNWIND range(1, 5000000) AS x WITH x ORDER BY x DESC RETURN x")
        assert run.outcome.kind == "resource_limit", (run.outcome.kind, run.outcome.message)
        assert "heap" in run.outcome.message.lower(), run.outcome.message
        after = engine.execute("MATCH (m:Movie) RETURN count(m) AS n")
        assert after.result is not None and after.result.rows == ((22,),)
    finally:
        context.close()
