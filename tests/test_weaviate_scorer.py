"""The `weaviate_ast` scorer: where it finds gold and prediction, errors, schemas, the
semantic option through the embeddings layer, and its dataset aggregates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from queryeval.cases import Attempt, Case, Output, Score, load_cases
from queryeval.config import ScorerConfig
from queryeval.config._presets import PRESETS
from queryeval.errors import InputError
from queryeval.runner import load_suite
from queryeval.scorers import Scorer, ScoringContext, build_scorer, known_scorers, score_case

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "weaviate"
GOLD = {
    "target_collection": "Restaurants",
    "search_query": "italian",
    "integer_property_filter": {"property_name": "price", "operator": "<", "value": 20},
}


def scorer(**options: Any) -> Scorer:
    return build_scorer(ScorerConfig(name="weaviate_ast", options=options))


def case(gold: Any = GOLD, **extra: Any) -> Case:
    turn = {"role": "user", "content": "cheap italian", "target": {"weaviate_query": gold}}
    return Case.model_validate({"id": "c1", "conversation": [turn], **extra})


def output(**attempt: Any) -> Output:
    return Output(attempts=[Attempt.model_validate(attempt)])


def test_registered_and_preset() -> None:
    assert "weaviate_ast" in known_scorers()
    assert PRESETS["weaviate_ast"]["scorers"] == [{"name": "weaviate_ast"}]


def test_missing_filter_scores_085_in_default_and_1_in_legacy() -> None:
    pred = output(weaviate_query={"target_collection": "Restaurants", "search_query": "Italian"})
    default = scorer().finish(scorer().score(case(), pred, ScoringContext()))
    assert default.value == pytest.approx(0.85)
    assert default.passed is False  # threshold 1.0: exact
    m = default.details["metrics"]
    assert m["collection"] == 1.0
    assert m["filters"] == 0.0
    assert m["filters_recall"] == 0.0
    assert m["filters_precision"] is None  # nothing predicted
    assert set(m) == {
        "collection",
        "search",
        "filters",
        "aggregations",
        "groupby",
        "filters_precision",
        "filters_recall",
        "filters_f1",
        "aggregations_precision",
        "aggregations_recall",
        "aggregations_f1",
    }
    assert default.details["families"]["integer_property_filter"]["recall"] == 0.0
    assert default.details["components"]["filters"]["slots"]["integer_property_filter"][
        "items"
    ] == [{"status": "missing", "gold": "price < 20", "predicted": None, "credit": 0.0}]
    legacy = scorer(mode="legacy").score(case(), pred, ScoringContext())
    assert legacy.value == pytest.approx(1.0)
    assert "filters_f1" not in legacy.details["metrics"]  # P/R/F1 are default-mode figures


def test_prediction_as_python_code_or_json_text_in_query() -> None:
    code = (
        'client.collections.get("Restaurants").query.near_text(query="italian", '
        'filters=Filter.by_property("price").less_than(20), limit=5)'
    )
    assert scorer().score(case(), output(query=code), ScoringContext()).value == 1.0
    assert scorer().score(case(), output(query=json.dumps(GOLD)), ScoringContext()).value == 1.0


@pytest.mark.parametrize(
    ("attempt", "message"),
    [
        ({"query": '{"collection_name": "Restaurants", '}, "not valid JSON"),
        ({"weaviate_query": {"sql": "SELECT 1"}}, "not a Weaviate query"),
        (
            {
                "weaviate_query": {
                    "target_collection": "Restaurants",
                    "integer_property_filter": {
                        "property_name": "price",
                        "operator": "between",
                        "value": 3,
                    },
                }
            },
            "'between'",
        ),
    ],
)
def test_invalid_prediction_is_a_failure_with_the_parser_message(
    attempt: dict[str, Any], message: str
) -> None:
    """Not a Weaviate query: 0 in the mean and in every component (the method's authors
    count a failed prediction as 0), the case fails, the parser's message is kept."""
    score = score_case(scorer(), case(), output(**attempt), ScoringContext())
    assert (score.status, score.value, score.passed) == ("ok", 0.0, False)
    assert score.failure_reason == "invalid_output"
    assert message in score.explanation
    assert set(score.details["metrics"]) >= {"collection", "filters", "filters_f1"}
    assert set(score.details["metrics"].values()) == {0.0}
    with pytest.raises(ValidationError):  # the old choice to leave it out of the mean is gone
        scorer(invalid_prediction="error")


def test_no_query_and_system_failure_score_zero() -> None:
    empty = score_case(scorer(), case(), output(answer="no idea"), ScoringContext())
    assert (empty.value, empty.failure_reason) == (0.0, "empty")
    failed = score_case(scorer(), case(), Output(error="timeout"), ScoringContext())
    assert (failed.value, failed.passed, failed.failure_reason) == (0.0, False, "crashed")


def test_case_without_weaviate_target_is_unscored() -> None:
    plain = Case.model_validate(
        {"id": "x", "conversation": [{"role": "user", "content": "q", "target": {"answer": "a"}}]}
    )
    assert scorer().score(plain, output(query="x"), ScoringContext()).status == "unscored"


def test_alternative_golds_take_the_best_and_say_which() -> None:
    other = {
        **GOLD,
        "integer_property_filter": {"property_name": "price", "operator": "<=", "value": 19},
    }
    multi = Case.model_validate(
        {
            "id": "c",
            "conversation": [
                {
                    "role": "user",
                    "content": "q",
                    "target": [{"weaviate_query": GOLD}, {"weaviate_query": other}],
                }
            ],
        }
    )
    score = scorer().score(multi, output(weaviate_query=other), ScoringContext())
    assert score.value == 1.0
    assert score.details["matched_gold"] == 1
    assert score.details["gold_scores"] == [pytest.approx(0.85), 1.0]


def test_cross_collection_gold_list_and_tool_calls() -> None:
    hotels = {"target_collection": "Hotels", "search_query": "spa"}
    calls = [
        {
            "type": "function",
            "function": {
                "name": "q",
                "arguments": json.dumps({"collection_name": "Hotels", "search_query": "spa"}),
            },
        }
    ]
    score = scorer().score(case([GOLD, hotels]), output(weaviate_query=calls), ScoringContext())
    assert score.value == pytest.approx(0.5)  # one of two collections, the other scores 0
    pairs = {(m["predicted"], m["gold"]) for m in score.details["matches"]}
    assert pairs == {(0, 1), (None, 0)}


def _suite_ctx(tmp_path: Path, schemas: str) -> ScoringContext:
    (tmp_path / "schemas.yaml").write_text(schemas)
    (tmp_path / "cases.yaml").write_text("[]\n")
    (tmp_path / "suite.yaml").write_text(
        "name: t\ncases: cases.yaml\nsystems: [{name: s, predictions: p.jsonl}]\n"
    )
    return ScoringContext(load_suite(tmp_path / "suite.yaml"))


def test_schemas_file_and_case_metadata_pick_the_schema(tmp_path: Path) -> None:
    ctx = _suite_ctx(
        tmp_path,
        "schemas:\n  food:\n    Restaurants: {price: number, rating: int}\n"
        "  other:\n    Restaurants: {price: int}\n",
    )
    gold = {
        "target_collection": "Restaurants",
        "integer_property_filter": {"property_name": "price", "operator": ">", "value": 4},
    }
    pred = {
        "target_collection": "Restaurants",
        "integer_property_filter": {"property_name": "price", "operator": ">=", "value": 5},
    }
    s = scorer(schemas="schemas.yaml", numeric_equivalence=True)
    # price is a number in `food`: > 4 is not >= 5; an int in `other`: it is
    food = s.score(case(gold, metadata={"schema": "food"}), output(weaviate_query=pred), ctx)
    other = s.score(case(gold, metadata={"schema": "other"}), output(weaviate_query=pred), ctx)
    assert food.value == pytest.approx(0.85)
    assert other.value == 1.0
    assert food.details["schema"] == "food"
    unknown = s.score(case(gold, metadata={"schema": "nope"}), output(weaviate_query=pred), ctx)
    assert unknown.status == "error"
    assert "unknown schema 'nope'" in unknown.explanation
    with pytest.raises(InputError, match="unknown schema 'nope'"):
        s.prepare([case(gold, metadata={"schema": "nope"})], ctx)


def test_bad_schema_file_names_the_file(tmp_path: Path) -> None:
    ctx = _suite_ctx(tmp_path, "schemas:\n  food:\n    Restaurants: {price: [1, 2]}\n")
    with pytest.raises(InputError) as info:
        scorer(schemas="schemas.yaml").prepare([case()], ctx)
    assert "schemas.yaml" in str(info.value)
    assert "food" in str(info.value)


def test_bad_gold_stops_prepare_with_the_case_named() -> None:
    bad = case(
        {
            "target_collection": "R",
            "text_property_filter": {"property_name": "a", "operator": "<", "value": "x"},
        }
    )
    with pytest.raises(InputError, match=r"case c1: target\.weaviate_query"):
        scorer().prepare([bad], ScoringContext())


def test_legacy_with_default_only_option_is_refused() -> None:
    with pytest.raises(ValueError, match="fuzzy_properties"):
        scorer(mode="legacy", fuzzy_properties=True)


def test_semantic_search_unscored_without_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    import queryeval.embeddings as embeddings

    def unavailable(ctx: ScoringContext) -> None:
        raise embeddings.EmbeddingsUnavailable("model not installed")

    # the embeddings layer exists (branch rag); simulate a machine without the model
    monkeypatch.setattr(embeddings, "embedder_from_context", unavailable)
    pred = output(weaviate_query={**GOLD, "search_query": "italian food"})
    score = scorer(search="semantic").score(case(), pred, ScoringContext())
    assert score.status == "ok"
    assert score.details["metrics"]["search"] is None
    assert score.value == 1.0  # the other components, renormalised
    assert score.details["semantic_unavailable"]
    same_text = scorer(search="semantic").score(
        case(), output(weaviate_query=GOLD), ScoringContext()
    )
    assert same_text.details["metrics"]["search"] == 1.0  # equal texts need no embedder
    assert "semantic_unavailable" not in same_text.details


def test_semantic_search_uses_the_embedder_from_context(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str]] = []

    class FakeEmbedder:
        model_id = "fake"

        def similarity(self, a: str, b: str) -> float:
            calls.append((a, b))
            return 0.95 if "italian" in a and "italian" in b else 0.1

    import queryeval.embeddings as embeddings

    monkeypatch.setattr(
        embeddings, "embedder_from_context", lambda ctx: FakeEmbedder(), raising=False
    )
    s = scorer(search="semantic")
    near = s.score(
        case(), output(weaviate_query={**GOLD, "search_query": "italian food"}), ScoringContext()
    )
    far = s.score(
        case(), output(weaviate_query={**GOLD, "search_query": "sushi"}), ScoringContext()
    )
    assert near.value == 1.0
    assert far.value == pytest.approx(0.85)
    assert calls == [("italian food", "italian"), ("sushi", "italian")]


def test_embedder_failure_is_unscored(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(ctx: Any) -> Any:
        raise OSError("model files not found")

    import queryeval.embeddings as embeddings

    monkeypatch.setattr(embeddings, "embedder_from_context", broken, raising=False)
    score = scorer(search="semantic").score(
        case(), output(weaviate_query={**GOLD, "search_query": "italian food"}), ScoringContext()
    )
    assert score.details["metrics"]["search"] is None
    assert "model files not found" in score.details["semantic_unavailable"]


def test_aggregate_per_component_family_schema_and_tag() -> None:
    s = scorer()
    c1 = case(tags=["filter:integer"])
    c2 = Case.model_validate(
        {
            "id": "c2",
            "tags": ["filter:integer", "search"],
            "conversation": c1.model_dump()["conversation"],
        }
    )
    right = s.score(c1, output(weaviate_query=GOLD), ScoringContext())
    missing = s.score(
        c2, output(weaviate_query={**GOLD, "integer_property_filter": None}), ScoringContext()
    )
    broken = Score.failed("invalid prediction: x", parse_error="x")
    agg = s.aggregate([c1, c2, c1], [right, missing, broken])
    assert agg["per_component"]["filters"] == {"mean": 0.5, "cases": 2}
    assert agg["per_component"]["collection"] == {"mean": 1.0, "cases": 2}
    fam = agg["per_family"]["integer_property_filter"]
    assert (fam["tp"], fam["n_predicted"], fam["n_gold"]) == (1.0, 1, 2)
    assert fam["precision"] == 1.0
    assert fam["recall"] == 0.5
    assert agg["exact_match_rate"] == 0.5
    assert agg["invalid_predictions"] == 1
    assert agg["per_tag"]["filter:integer"] == {"cases": 2, "mean": pytest.approx(0.925)}
    assert agg["per_tag"]["search"] == {"cases": 1, "mean": pytest.approx(0.85)}


def _predictions() -> dict[str, Output]:
    out: dict[str, Output] = {}
    for line in (EXAMPLE / "predictions" / "baseline.jsonl").read_text().splitlines():
        data = json.loads(line)
        out[data.pop("case_id")] = Output(attempts=[Attempt.model_validate(data)])
    return out


def test_example_suite_scores_every_case() -> None:
    suite = load_suite(EXAMPLE / "suite.yaml")
    cases = load_cases(suite.cases, suite.base_dir)
    assert len(cases) >= 30
    preds = _predictions()
    assert set(preds) == {c.id for c in cases}
    ctx = ScoringContext(suite)
    by_label: dict[str, dict[str, Score]] = {}
    for config in suite.scorers:
        s = build_scorer(config)
        s.prepare(cases, ctx)
        by_label[s.label] = {c.id: score_case(s, c, preds[c.id], ctx) for c in cases}
    default, legacy = by_label["weaviate_ast"], by_label["weaviate_ast_legacy"]
    lenient = by_label["weaviate_ast_lenient"]
    # the broken JSON output is a failure (0), the run goes on
    assert (default["t11"].value, default["t11"].failure_reason) == (0.0, "invalid_output")
    assert sum(s.failure_reason is not None for s in default.values()) == 1
    # missing filter: legacy full credit, default not
    assert legacy["r02"].value == pytest.approx(1.0)
    assert default["r02"].value == pytest.approx(0.85)
    # spurious aggregation
    assert legacy["t07"].value == pytest.approx(1.0)
    assert default["t07"].value == pytest.approx(0.85)
    assert default["r08"].value == 0.0  # wrong collection
    assert default["r10"].value == 1.0  # reordered multi-filter list
    assert default["r11"].value == 1.0  # two tool calls, two collections
    assert default["t10"].value == pytest.approx(0.5)  # one of two collections
    assert default["r05"].value == 1.0  # Python code
    # the future-work options recover equivalent conditions and case-variant names
    for cid in ("t02", "l02", "l06", "l07", "r03"):
        assert default[cid].value < 1.0
        assert lenient[cid].value == 1.0
    # every operator of every filter family and every metric appears in the golds
    ops: dict[str, set[str]] = {}
    metrics: dict[str, set[str]] = {}
    for c in cases:
        golds = c.target.weaviate_query if c.target else None
        for q in golds if isinstance(golds, list) else [golds]:
            for fam in ("integer", "text", "boolean"):
                for key, acc, field in (
                    (f"{fam}_property_filter", ops, "operator"),
                    (f"{fam}_property_aggregation", metrics, "metrics"),
                ):
                    items = q.get(key) or []
                    for item in items if isinstance(items, list) else [items]:
                        acc.setdefault(fam, set()).add(item[field])
    assert ops == {
        "integer": {"=", "<", ">", "<=", ">="},
        "text": {"=", "LIKE"},
        "boolean": {"=", "!="},
    }
    assert metrics == {
        "integer": {"COUNT", "TYPE", "MIN", "MAX", "MEAN", "MEDIAN", "MODE", "SUM"},
        "text": {"COUNT", "TYPE", "TOP_OCCURRENCES"},
        "boolean": {
            "COUNT",
            "TYPE",
            "TOTAL_TRUE",
            "TOTAL_FALSE",
            "PERCENTAGE_TRUE",
            "PERCENTAGE_FALSE",
        },
    }


def test_a_search_text_the_endpoint_refuses_is_wrong_not_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import queryeval.embeddings as embeddings

    class RefusingEmbedder:
        """An endpoint that refuses texts over 40 characters (its context)."""

        model_id = "fake"

        def encode(self, texts: list[str]) -> Any:
            if any(len(t) > 40 for t in texts):
                raise embeddings.EmbeddingsRejected("maximum context length exceeded")
            return [[1.0] for _ in texts]

        def similarity(self, a: str, b: str) -> float:
            self.encode([a, b])
            return 0.95 if "italian" in a and "italian" in b else 0.1

        @property
        def backend(self) -> Any:  # what the gold is checked with: the endpoint itself
            return type("Backend", (), {"embed": lambda _, texts: self.encode(texts)})()

    monkeypatch.setattr(embeddings, "embedder_from_context", lambda ctx: RefusingEmbedder())
    s = scorer(search="semantic")
    hostile = {**GOLD, "search_query": "italian " * 20}
    score = s.score(case(), output(weaviate_query=hostile), ScoringContext())
    assert score.status == "ok" and score.details["metrics"]["search"] == 0.0
    near = s.score(
        case(), output(weaviate_query={**GOLD, "search_query": "italian food"}), ScoringContext()
    )
    assert near.details["metrics"]["search"] == 1.0
    # a gold the endpoint refuses is not the system's fault: it raises, as before
    long_gold = case()
    long_gold.targets[0].weaviate_query["search_query"] = "italian " * 20  # type: ignore[index]
    with pytest.raises(embeddings.EmbeddingsRejected):
        s.score(long_gold, output(weaviate_query={**GOLD, "search_query": "sushi"}),
                ScoringContext())  # fmt: skip
