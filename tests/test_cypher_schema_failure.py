"""A Cypher query naming a label, relationship type or property key the graph does not have
is the query's `schema` failure in every Cypher scorer, as an unknown table is in SQL (issue
28): Cypher answers it with no rows (Neo4j 5 only warns), and on the example suite garbage
such as `MATCH (n:NoSuchLabel) RETURN n` lifted `executes` to 1.000 and passed its gate.

The names a query reads come from the one Cypher lexer (`referenced_names`,
`referenced_properties`); the graph's from the engine's `schema()`. Never a valid gold
failed: what cannot be told from the text (a map's keys, `n[k]`, `properties(n)`, a key
another label has) is not flagged. Server tests run on a real embedded ArcadeDB over Bolt.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph_support import serve_session_engine, share_engine
from queryeval.cases import Attempt, Case, Output, load_cases
from queryeval.engines import Engine, engine_from_context
from queryeval.engines._cypher import unknown_names
from queryeval.languages.cypher import referenced_names, referenced_properties
from queryeval.runner import load_suite, run_suite, selftest
from queryeval.scorers import ScoringContext, build_scorer

pytestmark = pytest.mark.filterwarnings("ignore:ResultSummary.notifications:DeprecationWarning")
ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "examples" / "cypher" / "suite.yaml"
AGENTIC = ROOT / "examples" / "cypher" / "suite_agentic.yaml"
GARBAGE = "MATCH (n:NoSuchLabel) RETURN n"

# the movie graph's names (examples/cypher/fixtures/movies.yaml)
MOVIES = {
    "labels": {"Genre": ["name"], "Movie": ["rating", "released", "runtime", "title"],
               "Person": ["born", "name"]},
    "relationship_types": {"ACTED_IN": ["roles"], "DIRECTED": [], "IN_GENRE": []},
}  # fmt: skip


# --- what a query names (no server) -------------------------------------------------------------

UNKNOWN = [  # (query, the name it lacks)
    (GARBAGE, "label `NoSuchLabel`"),
    ("OPTIONAL MATCH (n:NoSuchLabel) RETURN n", "label `NoSuchLabel`"),
    ("MATCH (n:person) RETURN n", "label `person` (did you mean `Person`?)"),
    ("MATCH (n:`No Such`) RETURN n", "label `No Such`"),
    ("MATCH (n:Movie|Film) RETURN n", "label `Film`"),
    ("MATCH (n:!Film) RETURN count(n)", "label `Film`"),
    ("MATCH (n:Movie&Film) RETURN n", "label `Film`"),
    ("MATCH (n) WHERE n:Film RETURN n", "label `Film`"),
    ("MATCH (m:Movie) WHERE exists { (m)<-[:ACTED_IN]-(:Actor) } RETURN m", "label `Actor`"),
    ("MATCH p = (a)-->(b) RETURN [x IN nodes(p) WHERE x:Film]", "label `Film`"),
    ("MATCH ()-[r:NO_SUCH_TYPE]->() RETURN r", "relationship type `NO_SUCH_TYPE`"),
    ("MATCH (a)-[:ACTED_IN|PLAYED_IN]->(b) RETURN b", "relationship type `PLAYED_IN`"),
    ("MATCH (a)-[:ACTED_IN|:PLAYED_IN]->(b) RETURN b", "relationship type `PLAYED_IN`"),
    (
        "MATCH (a)-[:acted_in]->(b) RETURN b",
        "relationship type `acted_in` (did you mean `ACTED_IN`?)",
    ),
    ("MATCH (n) RETURN n.no_such_property", "property key `no_such_property`"),
    ("MATCH (n:Movie) RETURN n.Title", "property key `Title` (did you mean `title`?)"),
    ("MATCH (n:Movie {year: 1999}) RETURN n", "property key `year`"),
    ("MATCH ({year: 1999}) RETURN 1", "property key `year`"),
    ("MATCH (a)-[r:ACTED_IN {character: 'Neo'}]->(b) RETURN b", "property key `character`"),
    ("MATCH (m:Movie) RETURN m {.title, .year}", "property key `year`"),
    ("MATCH (m:Movie) RETURN collect(m {.year}) AS c", "property key `year`"),
    ("MATCH (m:Movie) RETURN m.`year`", "property key `year`"),
    ("MATCH (m:Movie) WHERE m.year IS NOT NULL RETURN m", "property key `year`"),
    ("MATCH (m:Movie) RETURN CASE WHEN m.year > 1 THEN 1 END", "property key `year`"),
]


@pytest.mark.parametrize(("query", "lacks"), UNKNOWN)
def test_a_name_the_graph_lacks_is_named(query: str, lacks: str) -> None:
    assert unknown_names(query, MOVIES) == f"the graph has no {lacks}"


VALID = [  # names the graph has, or names the query itself introduces
    "MATCH (m:Movie) RETURN count(m) AS movies",
    "MATCH (:Person {name: 'Keanu Reeves'})-[:ACTED_IN]->(m:Movie) RETURN m.title AS title",
    "MATCH (m:`Movie`) RETURN m.`title`",
    "MATCH (n:Movie|Person) RETURN n.title, n.name",
    "MATCH (n:!Movie) RETURN count(n)",
    "MATCH (a)-[r:ACTED_IN|DIRECTED]->(b) RETURN type(r)",
    # a key another label has reads null: not flagged (Neo4j does not warn either)
    "MATCH (p:Person) RETURN p.title",
    # aliases, maps, comprehension and reduce variables, procedure outputs, parameters
    "MATCH (m:Movie) WITH m.title AS title RETURN title ORDER BY title",
    "MATCH (m:Movie) WITH {year: m.released} AS info RETURN info.year, info {.year}",
    "UNWIND [{year: 1}] AS row RETURN row.year, row.anything",
    "MATCH (m:Movie) RETURN m {.title, year: m.released, .*} AS movie",
    "MATCH (m:Movie) RETURN [x IN collect(m {year: m.released}) | x.year] AS years",
    "MATCH (m:Movie) RETURN reduce(acc = {n: 0}, x IN [1] | {n: acc.n + x}).n",
    "CALL db.labels() YIELD label RETURN label",
    "CALL db.propertyKeys() YIELD propertyKey AS key RETURN key",
    "MATCH (m:Movie) RETURN properties(m).year, keys(m), m['year']",
    "MATCH (m:Movie {title: $title}) RETURN m.released",
    "RETURN point({latitude: 1.0, longitude: 2.0}).latitude, date({year: 2020}).year",
    "MATCH (m:Movie) RETURN date.truncate('year', date()).year",
    "MATCH (m:Movie) WHERE m.released IS :: INTEGER RETURN m.title",
    "MATCH (m:Movie) WHERE exists { (m)-[:IN_GENRE]->(:Genre {name: 'Drama'}) } RETURN m",
    "MATCH (m:Movie) WHERE COUNT { (m)<-[:ACTED_IN]-(:Person) } > 2 RETURN m.title",
    "MATCH (m:Movie) RETURN m.title // (x:Comment {year: 1}) and m.year\n",
    "MATCH (m:Movie) WHERE m.title = 'a:Film' RETURN m.title",
    "MATCH p = (:Person)-[:ACTED_IN*1..2]-() RETURN [n IN nodes(p) | n.anything]",
]


@pytest.mark.parametrize("query", VALID)
def test_a_name_the_graph_has_or_the_query_makes_is_not_flagged(query: str) -> None:
    assert unknown_names(query, MOVIES) is None


def test_the_lexer_tells_labels_types_and_keys_apart() -> None:
    names = referenced_names(
        "MATCH (p:Person {name: $name})-[r:ACTED_IN {roles: ['x']}]->(m:Movie) "
        "WHERE [x IN nodes(p) WHERE x:Film | x.title] AND m.rating :: FLOAT "
        "RETURN m {.title}, r.roles"
    )
    assert names == {
        "labels": {"Person", "Movie", "Film"},
        "types": {"ACTED_IN"},  # a list's `[` is no relationship; `::` no label
        "parameters": {"name"},
    }
    assert referenced_properties(
        "MATCH (p:Person {name: $name})-[r:ACTED_IN {roles: ['x']}]->(m:Movie) "
        "WITH p, r, m, {k: 1} AS map UNWIND [1] AS u "
        "RETURN m {.title, alias: p.born}, r.roles, map.k, u.v, m.released.year"
    ) == {"name", "roles", "title", "born", "released"}


# --- on the example suites (a real ArcadeDB) -----------------------------------------------------


@pytest.fixture(scope="module")
def ctx(
    tmp_path_factory: pytest.TempPathFactory, movies_engine: Engine
) -> Iterator[ScoringContext]:
    context = ScoringContext(load_suite(AGENTIC), cache_dir=tmp_path_factory.mktemp("cache"))
    share_engine(context, "movies", movies_engine)  # the session's server (tests/conftest.py)
    yield context
    context.close()


@pytest.fixture(scope="module")
def graph(ctx: ScoringContext) -> Engine:
    return engine_from_context(ctx, "movies")


def test_the_engine_reports_every_name(graph: Engine) -> None:
    schema = graph.schema()
    assert set(schema["labels"]) == {"Genre", "Movie", "Person"}
    # a relationship type without properties is the graph's too
    assert set(schema["relationship_types"]) == {"ACTED_IN", "DIRECTED", "IN_GENRE"}
    assert schema["property_keys"] == ["born", "name", "rating", "released", "roles",
                                       "runtime", "title"]  # fmt: skip


@pytest.mark.parametrize(
    "query",
    [GARBAGE, "MATCH ()-[r:NO_SUCH_TYPE]->() RETURN r", "MATCH (n) RETURN n.no_such_property"],
)
def test_an_unknown_name_is_a_schema_failure_not_an_empty_result(graph: Engine, query: str) -> None:
    run = graph.execute(query)
    assert run.outcome.kind == "schema" and "the graph has no" in run.outcome.message
    assert graph.validate(query).kind == "schema"


@pytest.mark.parametrize(
    "query",
    ["Here is the query: MATCH (n:Movie) RETURN n", "MATCH (n:Nope) RETURN undefined_variable"],
)
def test_a_query_the_server_cannot_plan_is_a_syntax_error_first(graph: Engine, query: str) -> None:
    """Prose with a colon names a "label" too: it is no query at all, and says so."""
    assert unknown_names(query, graph.cached_schema()) is not None
    assert graph.execute(query).outcome.kind == "syntax"


def test_every_example_gold_names_only_what_the_graph_has(ctx: ScoringContext) -> None:
    suite = load_suite(SUITE)
    cases = load_cases(suite.cases, suite.base_dir)
    report = selftest(suite, cases, ctx)
    assert report.checked == 22 and report.ceiling == 1.0, report.failures


def _case(gold: str) -> Case:
    return Case.model_validate(
        {"id": "t", "conversation": [{"content": "q", "target": {"query": gold}}],
         "metadata": {"database": "movies"}}
    )  # fmt: skip


GOLD = "MATCH (m:Movie {title: 'Heat'}) RETURN m.released AS year"


@pytest.mark.parametrize("scorer_name", ["executes", "execution_match", "results_f1"])
@pytest.mark.parametrize(
    "query",
    [
        "MATCH (m:Film {title: 'Heat'}) RETURN m.released AS year",
        "MATCH (m:Movie {title: 'Heat'})<-[:PLAYED_IN]-() RETURN m.released AS year",
        "MATCH (m:Movie {title: 'Heat'}) RETURN m.year AS year",
    ],
    ids=["label", "type", "property"],
)
def test_every_execution_scorer_fails_it(ctx: ScoringContext, scorer_name: str, query: str) -> None:
    from queryeval.config import ScorerConfig

    scorer = build_scorer(ScorerConfig(name=scorer_name, options={"database": "movies"}))
    score = scorer.score(_case(GOLD), Output(attempts=[Attempt(query=query)]), ctx)
    assert score.status == "ok" and score.value == 0.0, score
    assert score.failure_reason == "schema", score


def test_the_agentic_scorer_fails_every_such_attempt(ctx: ScoringContext) -> None:
    from queryeval.config import ScorerConfig

    scorer = build_scorer(ScorerConfig(name="agentic"))
    attempts = [Attempt(query=GARBAGE), Attempt(query="MATCH (m:Movie) RETURN m.year AS year")]
    score = scorer.score(_case(GOLD), Output(attempts=attempts), ctx)
    assert score.value == 0.0, score
    failures = [a["failure"] for a in score.details["attempts"]]
    assert failures == ["schema", "schema"], score.details["attempts"]


def test_a_gold_naming_what_the_graph_lacks_is_the_evaluators(ctx: ScoringContext) -> None:
    from queryeval.config import ScorerConfig

    scorer = build_scorer(ScorerConfig(name="execution_match", options={"database": "movies"}))
    score = scorer.score(
        _case("MATCH (m:Film) RETURN m.title AS title"),
        Output(attempts=[Attempt(query="MATCH (m:Movie) RETURN m.title AS title")]),
        ctx,
    )
    assert score.status == "unscored", score
    assert "gold failed: schema" in (score.explanation or ""), score


def test_garbage_in_every_prediction_fails_the_example_suite_gate(
    tmp_path: Path, movies_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's run: every prediction replaced by `MATCH (n:NoSuchLabel) RETURN n`:
    `executes` is 0 (it was 1.000) and the `executes >= 0.7` gate fails (the run on the
    session's server, tests/graph_support.py)."""
    serve_session_engine(monkeypatch, movies_engine)
    suite = load_suite(SUITE)
    suite.settings.cache_dir = str(tmp_path / "cache")
    preds = tmp_path / "garbage.jsonl"
    ids = [c.id for c in load_cases(suite.cases, suite.base_dir)]
    preds.write_text("".join(json.dumps({"case_id": i, "query": GARBAGE}) + "\n" for i in ids))
    suite.systems = [suite.systems[0].model_copy(update={"predictions": str(preds)})]
    result = run_suite(suite, tmp_path / "run", progress=False, write_reports=False)
    scorers = result.summary["systems"]["baseline"]["scorers"]
    assert scorers["executes"]["mean"] == 0.0
    assert scorers["execution_match"]["mean"] == 0.0
    gate = next(g for g in result.gates if g["gate"] == "executes >= 0.7")
    assert gate["passed"] is False
    assert not result.gates_passed


def test_a_label_without_properties_is_the_graphs(tmp_path: Path) -> None:
    """A label whose nodes have no property (and one without nodes' keys at all) is still
    the graph's: a gold reading it is never failed (`keys(n)` gives no row to name it)."""
    from queryeval.config import DatabaseConfig
    from queryeval.engines import build_engine

    seed = tmp_path / "graph.yaml"
    seed.write_text(
        "nodes:\n  Person:\n    - {key: ann, name: Ann}\n  Tag:\n    - {key: red}\n"
        "relationships:\n  TAGGED:\n    - {from: ann, to: red}\n"
    )
    config = DatabaseConfig(engine="arcadedb", fixture=str(seed), options={"timeout_s": 5.0})
    engine = build_engine("tags", config, tmp_path, tmp_path / "cache")
    try:
        assert "Tag" in engine.schema()["labels"]
        run = engine.execute("MATCH (:Person)-[:TAGGED]->(t:Tag) RETURN count(t) AS n")
        assert run.outcome.kind == "ok" and run.result is not None
        assert run.result.rows == ((1,),)
        assert engine.execute("MATCH (t:Tag) RETURN t.name").outcome.kind == "ok"  # Person's
        assert engine.execute("MATCH (t:Tags) RETURN t").outcome.kind == "schema"
    finally:
        engine.close()
