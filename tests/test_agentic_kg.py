"""KG validity with CyVer on a real embedded ArcadeDB (Bolt on 127.0.0.1, neo4j driver), and
the seed-003 scorers end to end on the example attempt traces (examples/cypher)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph_support import share_engine
from queryeval.cases import Attempt, Case, Finding, Output, Score, load_cases
from queryeval.engines import Engine
from queryeval.kg import KGValidationError, validate_in_context
from queryeval.languages.cypher import referenced_names
from queryeval.runner import load_suite
from queryeval.scorers import ScoringContext, build_scorer, score_case
from queryeval.scorers.agentic import AgenticScorer

# CyVer reads ResultSummary.notifications, which the neo4j 6 driver deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:ResultSummary.notifications:DeprecationWarning")
ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "examples" / "cypher" / "suite_agentic.yaml"
TRACES = ROOT / "examples" / "cypher" / "predictions" / "agentic.jsonl"


@pytest.fixture(scope="module")
def ctx(
    tmp_path_factory: pytest.TempPathFactory, movies_engine: Engine
) -> Iterator[ScoringContext]:
    context = ScoringContext(load_suite(SUITE), cache_dir=tmp_path_factory.mktemp("cache"))
    share_engine(context, "movies", movies_engine)  # the session's server (tests/conftest.py)
    yield context
    context.close()


@pytest.fixture(scope="module")
def cases(ctx: ScoringContext) -> list[Case]:
    assert ctx.suite is not None
    return load_cases(ctx.suite.cases, ctx.suite.base_dir)


@pytest.fixture(scope="module")
def traces() -> dict[str, Output]:
    lines = TRACES.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    return {r["case_id"]: Output(attempts=r["attempts"]) for r in records}


# --- names a query refers to (no server) -----------------------------------------------------


def test_referenced_names_reads_labels_types_and_parameters() -> None:
    names = referenced_names(
        "MATCH (p:Person {name: $name})-[:ACTED_IN|DIRECTED*1..2]->(m:Movie:!Old) "
        "WHERE m:Film AND m.x = $0 AND p.note = 'a:B' // (c:Comment)\n"
        "RETURN p {.name, title: m.title}, [x IN [1, 2] | x][..1]"
    )
    assert names == {
        "labels": {"Person", "Movie", "Old", "Film"},
        "types": {"ACTED_IN", "DIRECTED"},
        "parameters": {"name", "0"},
    }
    assert referenced_names("MATCH (n:`Odd Label`) RETURN n")["labels"] == {"Odd Label"}
    # names are Unicode identifiers; parameters may be numbered past 9
    assert referenced_names("MATCH (n:Persón)-[:ÉCRIT]->(m) RETURN $12") == {
        "labels": {"Persón"},
        "types": {"ÉCRIT"},
        "parameters": {"12"},
    }


# --- the three checks on ArcadeDB ---------------------------------------------------------------


def test_a_correct_query_is_kg_valid(ctx: ScoringContext) -> None:
    v = validate_in_context(ctx, "movies", "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) "
                            "WHERE p.name = 'Keanu Reeves' RETURN m.title")  # fmt: skip
    assert v.valid
    assert (v.syntax.score, v.schema.score, v.properties.score) == (1.0, 1.0, 1.0)
    assert "ArcadeDB" in v.server
    assert v.not_checked  # what ArcadeDB's missing notifications leave unchecked is listed
    assert [f.kind for f in v.findings()] == ["syntax", "schema", "properties"]


def test_syntax_errors_fail_the_syntax_check(ctx: ScoringContext) -> None:
    v = validate_in_context(ctx, "movies", "MATCH (m:Movie RETURN m")
    assert not v.valid and v.syntax.score == 0.0
    assert v.syntax.messages[0]["code"] == "Neo.ClientError.Statement.SyntaxError"
    undefined = validate_in_context(ctx, "movies", "MATCH (n:Movie) RETURN x")
    assert undefined.syntax.score == 0.0


def test_an_unprovided_parameter_fails_syntax_as_neo4j_would(ctx: ScoringContext) -> None:
    v = validate_in_context(ctx, "movies", "MATCH (m:Movie) WHERE m.title = $title RETURN m")
    assert v.syntax.score == 0.0
    assert any("ParameterNotProvided" in m["code"] for m in v.syntax.messages)
    assert "parameters" in v.syntax.completed


def test_schema_check_finds_direction_and_unknown_names(ctx: ScoringContext) -> None:
    reversed_ = validate_in_context(
        ctx, "movies", "MATCH (m:Movie)-[:ACTED_IN]->(p:Person) RETURN p.name"
    )
    assert reversed_.schema.score is not None and reversed_.schema.score < 1
    assert {m["code"] for m in reversed_.schema.messages} == {"WrongDirectionPathWarning"}
    assert reversed_.properties.score == 1.0
    unknown = validate_in_context(
        ctx, "movies", "MATCH (p:Person)-[:PLAYED_IN]->(f:Film) RETURN p.name"
    )
    codes = [m["code"] for m in unknown.schema.messages]
    assert unknown.schema.score is not None and unknown.schema.score < 1
    assert "Neo.ClientNotification.Statement.UnknownLabelWarning" in codes  # completed
    assert "Neo.ClientNotification.Statement.UnknownRelationshipTypeWarning" in codes
    assert not unknown.valid


def test_properties_check_and_not_applicable(ctx: ScoringContext) -> None:
    wrong = validate_in_context(ctx, "movies", "MATCH (m:Movie) RETURN m.year")
    assert wrong.properties.score == 0.0 and not wrong.valid
    assert wrong.syntax.score == 1.0 and wrong.schema.score == 1.0
    none_read = validate_in_context(ctx, "movies", "MATCH (n) RETURN count(n)")
    assert none_read.properties.score is None  # not applicable
    assert none_read.valid
    assert none_read.properties.finding() == Finding(
        kind="properties", score=1.0, message="not applicable: no property is read"
    )


def test_a_write_is_never_sent_for_validation(ctx: ScoringContext) -> None:
    with pytest.raises(KGValidationError, match="not validated"):
        validate_in_context(ctx, "movies", "CREATE (n:Movie {title: 'x'}) RETURN n")
    count = build_scorer_for(ctx, "kg_valid").score(
        _case("MATCH (m:Movie) RETURN count(m)"),
        Output(attempts=[Attempt(query="MATCH (m:Movie {title: 'x'}) RETURN count(m)")]),
        ctx,
    )
    assert count.value == 1.0


def _case(gold: str) -> Case:
    return Case.model_validate(
        {"id": "t", "conversation": [{"content": "q", "target": {"query": gold}}]}
    )


def build_scorer_for(ctx: ScoringContext, name: str, **options: object) -> object:
    assert ctx.suite is not None
    config = next(s for s in ctx.suite.scorers if s.name == name)
    return build_scorer(config.model_copy(update={"options": {**config.options, **options}}))


# --- the scorers on the example traces ------------------------------------------------------------


def _score(
    ctx: ScoringContext, name: str, cases: list[Case], traces: dict[str, Output]
) -> tuple[object, list[Score]]:
    scorer = build_scorer_for(ctx, name)
    assert hasattr(scorer, "score") and hasattr(scorer, "finish")
    scorer.prepare(cases, ctx)  # type: ignore[attr-defined]
    scores = [score_case(scorer, c, traces[c.id], ctx) for c in cases]  # type: ignore[arg-type]
    return scorer, scores


def test_agentic_report_on_the_example_traces(
    ctx: ScoringContext, cases: list[Case], traces: dict[str, Output]
) -> None:
    """The traces were written so that: 7 cases are right at once, 8 fixed at iteration 2,
    4 at iteration 3, 3 never (two KG-valid but wrong, one syntax error three times)."""
    scorer, scores = _score(ctx, "agentic", cases, traces)
    assert isinstance(scorer, AgenticScorer)
    by_id = {c.id: s for c, s in zip(cases, scores, strict=True)}
    assert [c for c, s in by_id.items() if not s.passed] == ["cy-04", "cy-14", "cy-18"]
    assert by_id["cy-07"].details["iterations_to_success"] == 3
    report = scorer.aggregate(cases, scores)["agentic_report"]
    assert report["cases"] == 22
    assert report["pass_at_1"] == pytest.approx(7 / 22)
    assert report["success_at_k"] == pytest.approx({"1": 7 / 22, "2": 15 / 22, "3": 19 / 22})
    assert report["refinement_gain"] == pytest.approx(12 / 22)
    assert report["recovery_rate"] == pytest.approx(12 / 15)
    assert report["recovery_rate_counts"] == pytest.approx(12 / 15)
    assert report["kg_valid_at_1"] == pytest.approx(14 / 22)
    assert report["kg_valid_at_k"] == pytest.approx(21 / 22)
    assert report["iterations_to_success"] == {"1": 7, "2": 8, "3": 4}
    assert report["mean_iterations"] == pytest.approx(2.0)
    assert report["error_types"] == {
        "syntax": 7, "schema": 3, "properties": 2, "wrong_result": 13
    }  # fmt: skip
    assert report["first_error_types"] == {
        "syntax": 4, "schema": 2, "properties": 2, "wrong_result": 7
    }  # fmt: skip
    assert report["recovery_by_error_type"] == pytest.approx(
        {"syntax": 3 / 4, "schema": 1.0, "properties": 1.0, "wrong_result": 5 / 7}
    )
    breakdown = scorer.aggregate(cases, scores)["breakdown"]["tag"]
    assert breakdown["order-by"]["cases"] == sum("order-by" in c.tags for c in cases)


def test_llmetric_q_on_the_example_traces(
    ctx: ScoringContext, cases: list[Case], traces: dict[str, Output]
) -> None:
    scorer, scores = _score(ctx, "llmetric_q", cases, traces)
    by_id = {c.id: s for c, s in zip(cases, scores, strict=True)}
    right = by_id["cy-02"].details["metrics"]
    assert (right["pass_at_1_output"], right["kg_valid"], right["jaccard_output"]) == (1, 1, 1)
    # cy-18 ends with a syntax error: the system's failure, 0 in LLMetric-Q and every term
    # (kg-axel's formula would still give it 0.1 x JaRou for the text)
    assert by_id["cy-18"].value == 0.0 and by_id["cy-18"].failure_reason == "syntax"
    assert set(by_id["cy-18"].details["metrics"].values()) == {0.0}
    # cy-04 ends valid but wrongly ordered: no Pass@1, but KG valid and every row found.
    wrong_order = by_id["cy-04"].details["metrics"]
    assert (wrong_order["pass_at_1_output"], wrong_order["kg_valid"]) == (0.0, 1.0)
    assert wrong_order["jaccard_output"] == 1.0
    assert by_id["cy-22"].status == "unscored"  # its gold is rows only: no text for JaRou
    model = scorer.aggregate(cases, scores)  # type: ignore[attr-defined]
    ok = [s.value for s in scores if s.status == "ok"]
    assert model["llmetric"] == pytest.approx(sum(ok) / len(ok))  # linear without the jump
