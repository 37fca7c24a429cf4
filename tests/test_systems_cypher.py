"""A model system on the Cypher example graph (embedded ArcadeDB over Bolt): the prompt shows
the graph schema read from the server, and the refinement loop feeds CyVer's findings back
(a wrong relationship direction or label, an unknown property) until the query is right."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fakes.openai_server import ChatRequest, FakeOpenAI, Reply
from graph_support import serve_session_engine, with_built_fixtures
from queryeval.engines import Engine, describe_schema
from queryeval.runner import load_suite, run_suite
from systems_support import ROOT, answering, feedback_messages, fenced, records

FIXTURE = ROOT / "examples" / "cypher" / "fixtures" / "movies.yaml"
KEANU = "Which movies did Keanu Reeves act in?"
GOLD = "MATCH (:Person {name: 'Keanu Reeves'})-[:ACTED_IN]->(m:Movie) RETURN m.title AS title"
PLAYED = "MATCH (:Person {name: 'Keanu Reeves'})-[:PLAYED_IN]->(m:Movie) RETURN m.title AS title"
YEAR = "In which year was Inception released?"
YEAR_GOLD = "MATCH (m:Movie {title: 'Inception'}) RETURN m.released AS released"
YEAR_BAD = "MATCH (m:Movie {title: 'Inception'}) RETURN m.year AS released"


@pytest.fixture(scope="module")
def suite_path(tmp_path_factory: pytest.TempPathFactory, built_fixtures: Path) -> Path:
    folder = tmp_path_factory.mktemp("cypher")
    with_built_fixtures(folder / "cache", built_fixtures)  # the graph built once a session
    cases = [
        {"id": "keanu", "conversation": [{"content": KEANU, "target": {"query": GOLD}}]},
        {"id": "year", "conversation": [{"content": YEAR, "target": {"query": YEAR_GOLD}}]},
    ]
    (folder / "cases.yaml").write_text(yaml.safe_dump(cases))
    suite = {
        "name": "cypher-model",
        "cases": "cases.yaml",
        "databases": {
            # the example suite's database: the session's server serves it (graph_support)
            "movies": {"engine": "arcadedb", "fixture": str(FIXTURE), "options": {"timeout_s": 2.0}}
        },
        "comparison": {"columns": "permutation"},
        "systems": [
            {
                "name": "gpt",
                "model": {"model": "m", "api_key_env": None, "base_url": "http://127.0.0.1:9/v1"},
                "refine": {"max_iterations": 3},
            }
        ],
        "scorers": [{"name": "agentic", "options": {"ks": [1, 3], "breakdown": []}}],
        "reports": ["json"],
        "settings": {"cache_dir": str(folder / "cache")},
    }
    path = folder / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def test_the_graph_schema_comes_from_the_server(movies_engine: Engine) -> None:
    text = describe_schema(movies_engine)  # the session's server of the example graph
    assert "Node properties:" in text and "The relationships:" in text
    assert "Person {born: INTEGER, name: STRING}" in text
    assert "Movie {" in text and "rating: FLOAT" in text and "title: STRING" in text
    assert "ACTED_IN {roles: LIST}" in text
    assert "(:Person)-[:ACTED_IN]->(:Movie)" in text
    assert "(:Person)-[:DIRECTED]->(:Movie)" in text


def test_cyver_findings_drive_the_refinement_loop(
    suite_path: Path, movies_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    serve_session_engine(monkeypatch, movies_engine)  # the run queries the session's server

    def keanu(request: ChatRequest) -> Reply:
        said = " ".join(feedback_messages(request))
        return fenced(GOLD if "PLAYED_IN" in said else PLAYED, "cypher")

    def year(request: ChatRequest) -> Reply:
        said = " ".join(feedback_messages(request))
        return fenced(YEAR_GOLD if "properties" in said else YEAR_BAD, "cypher")

    with FakeOpenAI(answering({KEANU: keanu, YEAR: year})) as server:
        suite = load_suite(suite_path)
        assert suite.systems[0].model is not None
        suite.systems[0].model.base_url = server.base_url
        result = run_suite(suite, suite_path.parent / "run", progress=False, overwrite=True)
        first_prompt = server.chat_requests[0].content("user")
    assert "(:Person)-[:ACTED_IN]->(:Movie)" in first_prompt  # the schema the model saw
    by_id = records(suite_path.parent / "run")
    loop = by_id["keanu"]["output"]["attempts"]
    assert [a["query"] for a in loop] == [PLAYED, GOLD]
    kinds = {f["kind"]: f["score"] for f in loop[0]["findings"]}
    assert kinds["syntax"] == 1 and kinds["schema"] < 1
    assert {f["kind"]: f["score"] for f in loop[1]["findings"]}["schema"] == 1
    year_loop = by_id["year"]["output"]["attempts"]
    assert [a["query"] for a in year_loop] == [YEAR_BAD, YEAR_GOLD]
    assert {f["kind"]: f["score"] for f in year_loop[0]["findings"]}["properties"] < 1
    report = result.summary["systems"]["gpt"]["scorers"]["agentic"]["aggregate"]["agentic_report"]
    assert report["pass_at_1"] == 0 and report["success"] == 1
    assert report["kg_valid_at_1"] == 0 and report["kg_valid_at_k"] == 1
    assert report["recovery_rate"] == 1 and report["refinement_gain"] == 1
