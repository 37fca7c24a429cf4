"""verified_match on Cypher (the example movie graph on the session's ArcadeDB; variants in a
scratch ArcadeDB of their own, one for the module): the gold against itself and equivalent
rewrites get no counterexample; wrong Cypher that execution match accepts gets a minimal
witness (one CREATE) that replays to the stored results; verified <= EX; the same seed
gives the same witness; the user's graph is never written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graph_support import MOVIES_SUITE, share_engine
from queryeval.cases import Score
from queryeval.runner import load_suite
from queryeval.scorers import ScoringContext
from queryeval.verify import replay
from verified_support import assert_no_counterexample, score_query

EQUIVALENT = [
    ("MATCH (:Person {name: 'Keanu Reeves'})-[:ACTED_IN]->(m:Movie) RETURN m.title AS t",
     "MATCH (m:Movie)<-[:ACTED_IN]-(p:Person) WHERE p.name = 'Keanu Reeves' RETURN m.title AS t"),
    ("MATCH (m:Movie) WHERE m.released >= 1990 AND m.released < 2000 RETURN m.title AS t",
     "MATCH (m:Movie) WHERE NOT (m.released < 1990 OR m.released >= 2000) RETURN m.title AS t"),
    # the variants tie the top rating: each query breaks a tie as the storage order falls
    ("MATCH (m:Movie) RETURN m.title AS t ORDER BY m.rating DESC LIMIT 1",
     "MATCH (m:Movie) WITH m ORDER BY m.rating DESC LIMIT 1 RETURN m.title AS t"),
]  # fmt: skip

# (gold, prediction EX accepts on the movie graph, what the graph lacks)
WRONG = [
    ("MATCH (m:Movie) WHERE m.released > 2005 RETURN m.title AS t",
     "MATCH (m:Movie) WHERE m.released >= 2005 RETURN m.title AS t", "no movie of 2005"),
    ("MATCH (g:Genre) RETURN count(DISTINCT g.name) AS n", "MATCH (g:Genre) RETURN count(g) AS n",
     "no repeated or missing genre name"),
    ("MATCH (p:Person) WHERE p.name = 'Tom Hanks' RETURN p.born AS b",
     "MATCH (p:Person) WHERE toLower(p.name) = 'tom hanks' RETURN p.born AS b",
     "no other spelling of the name"),
]  # fmt: skip


@pytest.fixture(scope="module")
def ctx(
    tmp_path_factory: pytest.TempPathFactory, movies_engine: Any, graph_scratch: Any
) -> Iterator[ScoringContext]:
    """The movie suite's context on the session's server; the session's scratch server
    (tests/conftest.py) serves every verifier and replay here."""
    context = ScoringContext(load_suite(MOVIES_SUITE),
                             cache_dir=tmp_path_factory.mktemp("verified_cypher"))  # fmt: skip
    share_engine(context, "movies", movies_engine)
    try:
        yield context
    finally:
        context.close()


def score(ctx: ScoringContext, gold: str, pred: str, **options: Any) -> Score:
    query = {"language": "cypher", "text": gold, "database": "movies"}
    options = {"variants": 6, "shrink_steps": 60, **options}  # the tests' budget
    return score_query(ctx, query, pred, options)


@pytest.mark.parametrize(("gold", "pred"), [(WRONG[0][0], WRONG[0][0]), *EQUIVALENT])
def test_the_gold_and_equivalent_cypher_rewrites_get_no_counterexample(
    ctx: ScoringContext, gold: str, pred: str
) -> None:
    assert_no_counterexample(score(ctx, gold, pred), checked=5)


COUNT = "MATCH (n) RETURN count(n) AS n"


@pytest.fixture(scope="module")
def wrong(ctx: ScoringContext, movies_engine: Any) -> tuple[Any, dict[str, Score]]:
    """The user's graph's size before, and each wrong prediction's score (made once)."""
    before = movies_engine.execute(COUNT).result.rows
    return before, {gold: score(ctx, gold, pred) for gold, pred, _ in WRONG}


@pytest.mark.parametrize(("gold", "pred", "lacks"), WRONG)
def test_wrong_cypher_that_ex_accepts_gets_a_minimal_witness_that_replays(
    wrong: tuple[Any, dict[str, Score]], movies_engine: Any, gold: str, pred: str, lacks: str
) -> None:
    before, scores = wrong
    s = scores[gold]
    assert s.details["metrics"] == {"ex": 1.0, "verified": 0.0, "with_judge": 0.0}, lacks
    witness = s.details["counterexample"]
    assert witness["dialect"] == "cypher" and witness["minimal"] and witness["replayed"]
    assert 1 <= witness["rows"] <= 3
    assert "CREATE (n1:" in witness["script"] or witness["rows"] == 0
    assert all(not a["column"].startswith("__") for a in witness["assumptions"])
    runs = replay(witness["script"], "cypher", {"gold": gold, "pred": pred},
                  movies_engine.limits)  # fmt: skip
    for name, stored in (("gold", witness["gold"]), ("pred", witness["prediction"])):
        result = runs[name].result
        assert result is not None, runs[name].outcome.message
        assert [list(r) for r in result.rows] == stored["rows"]
    assert witness["gold"]["rows"] != witness["prediction"]["rows"]
    assert movies_engine.execute(COUNT).result.rows == before


def test_cypher_verified_never_exceeds_ex(ctx: ScoringContext) -> None:
    """A wrong answer and garbage: EX = 0 stays 0 (tier ex), no variant is asked."""
    for pred in ("MATCH (m:Movie) RETURN m.released AS t", "MATCH (n:Nope) RETURN n"):
        s = score(ctx, "MATCH (m:Movie) RETURN m.title AS t", pred)
        assert not s.value
        metrics = s.details.get("metrics", {"ex": 0.0, "verified": 0.0})
        assert metrics["verified"] <= metrics["ex"] == 0.0
        assert s.details.get("tier", "ex") == "ex" and "counterexample" not in s.details


def test_the_same_seed_gives_the_same_cypher_witness(
    ctx: ScoringContext, wrong: tuple[Any, dict[str, Score]]
) -> None:
    gold, pred, _ = WRONG[1]
    again = score(ctx, gold, pred).details["counterexample"]
    assert again == wrong[1][gold].details["counterexample"]


def test_a_witness_script_is_the_graph_it_shows(tmp_path: Path) -> None:
    """The CREATE of a witness holds its rows: nodes with their labels and properties,
    relationships between them, a NULL property left out."""
    from queryeval.verify._graph import cypher_script, graph_of
    from queryeval.verify._schema import Schema, Table

    schema = Schema("cypher", {
        "Person": Table("Person", "", {"__id": "", "name": "", "born": ""}),
        "[:KNOWS]": Table("[:KNOWS]", "", {"__id": "", "__from": "", "__to": "", "since": ""}),
    })  # fmt: skip
    data: dict[str, list[tuple[Any, ...]]] = {
        "Person": [(1, "A", None), (2, "B'x", 1970)],
        "[:KNOWS]": [(-1, 1, 2, 2001)],
    }
    text = cypher_script(schema, graph_of(schema, list(schema.tables), data))
    assert text == (
        "CREATE (n1:`Person` {`name`: 'A'}),\n"
        "  (n2:`Person` {`name`: 'B\\'x', `born`: 1970}),\n"
        "  (n1)-[:`KNOWS` {`since`: 2001}]->(n2);\n"
    )
