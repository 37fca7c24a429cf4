"""Default mode: one-sided slots are mismatches, and the seed's future work as options.

Every expected score is worked out by hand in the comment above it: score =
sum(w * s) / sum(w) with w = 0.4 (collection) and 0.15 (search, filters, aggregations,
group-by); filters / aggregations = mean over the slots present on either side.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from queryeval.metrics import weaviate_ast
from queryeval.metrics.weaviate import parse_schema

BASE = {"target_collection": "Restaurants", "search_query": "italian"}
PRICE_LT_20 = {"property_name": "price", "operator": "<", "value": 20}
RATING_GE_4 = {"property_name": "rating", "operator": ">=", "value": 4}
OPEN = {"property_name": "open_now", "operator": "=", "value": True}
SCHEMA = {
    "Restaurants": {
        "price": "number",
        "rating": "int",
        "cuisine": "text",
        "city": "text",
        "open_now": "boolean",
        "price_range": "text",
        "pride": "int",
    },
    "Hotels": {"stars": "int", "name": "text", "city": "text", "pool": "boolean"},
}


def q(**parts: Any) -> dict[str, Any]:
    return {**BASE, **parts}


def score(pred: Any, gold: Any, **kw: Any) -> float:
    return weaviate_ast(pred, gold, **kw).score


def test_identical_queries_score_one() -> None:
    gold = q(integer_property_filter=PRICE_LT_20, groupby_property="city")
    result = weaviate_ast(gold, gold)
    assert result.score == 1.0
    assert result.exact


def test_missing_filter_is_a_mismatch_unlike_legacy() -> None:
    pred, gold = q(), q(integer_property_filter=PRICE_LT_20)
    # filters: only the integer slot is present, and it is missing -> 0
    # (0.4 + 0.15 + 0 + 0.15 + 0.15) / 1.0
    assert score(pred, gold) == pytest.approx(0.85)
    assert score(pred, gold, mode="legacy") == pytest.approx(1.0)
    filters = weaviate_ast(pred, gold).components["filters"]
    assert filters.status == "missing"
    [slot] = [s for s in filters.slots if s.slot == "integer_property_filter"]
    assert (slot.status, slot.score, slot.n_gold, slot.n_predicted) == ("missing", 0.0, 1, 0)


def test_spurious_filter_is_a_mismatch() -> None:
    result = weaviate_ast(q(boolean_property_filter=OPEN), q())
    assert result.score == pytest.approx(0.85)
    assert result.components["filters"].status == "spurious"
    assert result.families["boolean_property_filter"].precision == 0.0
    assert result.families["boolean_property_filter"].recall is None


def test_both_absent_match_averages_over_all_three_slots_as_the_seed_code_does() -> None:
    # slots: integer absent (1), text absent (1), boolean spurious (0) -> 2/3
    assert score(q(boolean_property_filter=OPEN), q(), both_absent="match") == pytest.approx(
        0.4 + 0.15 + 0.15 * 2 / 3 + 0.15 + 0.15
    )


def test_wrong_operator() -> None:
    pred = q(integer_property_filter={**PRICE_LT_20, "operator": "<="})
    gold = q(integer_property_filter=PRICE_LT_20)
    assert score(pred, gold) == pytest.approx(0.85)
    # partial credit: property and value right, operator wrong -> 2/3 of the slot
    assert score(pred, gold, partial_credit=True) == pytest.approx(0.4 + 0.15 + 0.1 + 0.3)
    item = weaviate_ast(pred, gold).components["filters"].slots[0].items[0]
    assert item.status == "wrong"


def test_mean_over_present_slots() -> None:
    gold = q(integer_property_filter=PRICE_LT_20, boolean_property_filter=OPEN)
    pred = q(integer_property_filter=PRICE_LT_20, boolean_property_filter={**OPEN, "value": False})
    # integer matched (1), boolean wrong (0), text absent (skipped) -> 1/2
    assert score(pred, gold) == pytest.approx(0.4 + 0.15 + 0.075 + 0.3)


def test_reordered_filters_match_with_order_independence_only() -> None:
    gold = q(integer_property_filter=[PRICE_LT_20, RATING_GE_4])
    pred = q(integer_property_filter=[RATING_GE_4, PRICE_LT_20])
    assert score(pred, gold) == 1.0
    # by position both pairs are wrong -> filters 0
    assert score(pred, gold, order_independent=False) == pytest.approx(0.85)


def test_partly_matched_list_and_family_precision_recall() -> None:
    gold = q(integer_property_filter=[PRICE_LT_20, RATING_GE_4])
    pred = q(integer_property_filter=[PRICE_LT_20])
    result = weaviate_ast(pred, gold)
    # integer slot: 1 matched / max(1, 2) -> filters 0.5
    assert result.score == pytest.approx(0.4 + 0.15 + 0.075 + 0.3)
    fam = result.families["integer_property_filter"]
    assert (fam.tp, fam.n_predicted, fam.n_gold) == (1.0, 1, 2)
    assert fam.precision == 1.0
    assert fam.recall == 0.5
    assert fam.f1 == pytest.approx(2 / 3)
    statuses = sorted(i.status for i in result.components["filters"].slots[0].items)
    assert statuses == ["matched", "missing"]


def test_assignment_never_trades_an_exact_match_for_two_partial_ones() -> None:
    # p0 = g0 exactly; p0~g1 and p1~g0 are 2/3 partial matches; p1~g1 shares nothing.
    g0 = {"property_name": "price", "operator": "<", "value": 20}
    g1 = {"property_name": "price", "operator": ">", "value": 20}
    p1 = {"property_name": "price", "operator": "<", "value": 5}
    gold = q(integer_property_filter=[g0, g1])
    pred = q(integer_property_filter=[p1, g0])
    result = weaviate_ast(pred, gold, partial_credit=True)
    items = result.components["filters"].slots[0].items
    assert [i.status for i in items].count("matched") == 1
    # matched 1 + (p1 vs g1: property only -> 1/3) -> (1 + 1/3) / 2
    assert result.components["filters"].score == pytest.approx((1 + 1 / 3) / 2)


def test_order_independence_score_is_invariant_under_permutation() -> None:
    rng = random.Random(7)
    conds = [
        {"property_name": p, "operator": o, "value": v}
        for p, o, v in itertools.product(["price", "rating"], ["<", ">="], [4, 20])
    ]
    for _ in range(50):
        gold_items = rng.sample(conds, 3)
        pred_items = rng.sample(conds, 3)
        base = score(
            q(integer_property_filter=pred_items),
            q(integer_property_filter=gold_items),
            partial_credit=True,
        )
        shuffled = pred_items[:]
        rng.shuffle(shuffled)
        assert score(
            q(integer_property_filter=shuffled),
            q(integer_property_filter=gold_items),
            partial_credit=True,
        ) == pytest.approx(base)


def test_aggregation_partial_credit_uses_metric_jaccard_and_limit() -> None:
    gold = q(integer_property_aggregation={"property_name": "rating", "metrics": ["MEAN", "MAX"]})
    pred = q(integer_property_aggregation={"property_name": "rating", "metrics": ["MEAN"]})
    assert score(pred, gold) == pytest.approx(0.85)
    # property 1, metrics Jaccard 1/2 -> 3/4 of the slot
    assert score(pred, gold, partial_credit=True) == pytest.approx(0.85 + 0.15 * 0.75)
    gold_t = q(
        text_property_aggregation={
            "property_name": "cuisine",
            "metrics": "TOP_OCCURRENCES",
            "top_occurrences_limit": 3,
        }
    )
    pred_t = q(
        text_property_aggregation={
            "property_name": "cuisine",
            "metrics": "TOP_OCCURRENCES",
            "top_occurrences_limit": 5,
        }
    )
    assert score(pred_t, gold_t) == pytest.approx(0.85)  # the limit counts in default mode
    assert score(pred_t, gold_t, partial_credit=True) == pytest.approx(0.85 + 0.15 * 2 / 3)


def test_numeric_equivalence_on_integer_properties() -> None:
    gold = q(integer_property_filter={"property_name": "rating", "operator": ">", "value": 4})
    same = q(integer_property_filter={"property_name": "rating", "operator": ">=", "value": 5})
    assert score(same, gold) == pytest.approx(0.85)
    result = weaviate_ast(same, gold, numeric_equivalence=True, schema=SCHEMA)
    assert result.score == 1.0
    [item] = result.components["filters"].slots[0].items
    assert "equivalent" in item.notes[0]
    below = q(integer_property_filter={"property_name": "rating", "operator": "<", "value": 10})
    below_eq = q(integer_property_filter={"property_name": "rating", "operator": "<=", "value": 9})
    assert score(below_eq, below, numeric_equivalence=True) == 1.0  # no schema: both ints
    # = 3 is not >= 3
    eq3 = q(integer_property_filter={"property_name": "rating", "operator": "=", "value": 3})
    ge3 = q(integer_property_filter={"property_name": "rating", "operator": ">=", "value": 3})
    assert score(ge3, eq3, numeric_equivalence=True, schema=SCHEMA) == pytest.approx(0.85)


def test_numeric_equivalence_respects_a_number_typed_property() -> None:
    gold = q(integer_property_filter={"property_name": "price", "operator": ">", "value": 4})
    pred = q(integer_property_filter={"property_name": "price", "operator": ">=", "value": 5})
    # price is `number` in the schema: 4.5 satisfies > 4 but not >= 5
    assert score(pred, gold, numeric_equivalence=True, schema=SCHEMA) == pytest.approx(0.85)
    assert score(pred, gold, numeric_equivalence=True) == 1.0  # without a schema: both ints


def test_numeric_equivalence_uses_the_gold_collections_types() -> None:
    schema = {"Restaurants": {"score": "int"}, "Hotels": {"score": "number"}}
    for collection, expected in (("Restaurants", 1.0), ("Hotels", 0.85)):
        gold = {
            "target_collection": collection,
            "integer_property_filter": {"property_name": "score", "operator": ">", "value": 4},
        }
        pred = {
            "target_collection": collection,
            "integer_property_filter": {"property_name": "score", "operator": ">=", "value": 5},
        }
        result = score(pred, gold, numeric_equivalence=True, schema=schema)
        assert result == pytest.approx(expected), collection


def test_fuzzy_property_names_case_spacing_then_edit_distance() -> None:
    gold = q(integer_property_filter=PRICE_LT_20, groupby_property="price_range")
    cased = q(
        integer_property_filter={**PRICE_LT_20, "property_name": "Price"},
        groupby_property="PriceRange",
    )
    # filters and group-by wrong: 0.4 + 0.15 (search) + 0.15 (aggregations, absent)
    assert score(cased, gold) == pytest.approx(0.7)
    result = weaviate_ast(cased, gold, fuzzy_properties=True, schema=SCHEMA)
    assert result.score == 1.0
    [item] = result.components["filters"].slots[0].items
    assert item.notes == ("property 'Price' read as 'price' (case/spacing)",)
    assert "case/spacing" in result.components["groupby"].notes[0]
    typo = q(
        integer_property_filter={**PRICE_LT_20, "property_name": "prize"},
        groupby_property="price_range",
    )
    # without a schema the gold's own names are the candidates: prize -> price (1 edit)
    typo_result = weaviate_ast(typo, gold, fuzzy_properties=True)
    assert typo_result.score == 1.0
    assert "edit distance 1" in typo_result.components["filters"].slots[0].items[0].notes[0]
    assert score(typo, gold, fuzzy_properties=True, max_edit_distance=0) == pytest.approx(0.85)


def test_fuzzy_names_do_not_guess_between_equally_close_candidates() -> None:
    gold = q(integer_property_filter=PRICE_LT_20)
    # 'prie' is one edit from both 'price' and 'pride' in the schema: left as it is
    tie = q(integer_property_filter={**PRICE_LT_20, "property_name": "prie"})
    assert score(tie, gold, fuzzy_properties=True, schema=SCHEMA) == pytest.approx(0.85)


def test_semantic_search_without_similarity_is_unscored_not_zero() -> None:
    pred, gold = q(search_query="italian cuisine"), q(search_query="italian food")
    result = weaviate_ast(pred, gold, search="semantic")
    assert result.components["search"].status == "unscored"
    assert result.components["search"].score is None
    # the search weight leaves the mean: (0.4 + 0.15 * 3) / 0.85
    assert result.score == 1.0
    assert score(pred, gold, search="semantic", similarity=lambda a, b: 0.9) == 1.0
    assert score(pred, gold, search="semantic", similarity=lambda a, b: 0.5) == pytest.approx(0.85)
    assert score(pred, gold) == pytest.approx(0.85)  # exact


def test_semantic_text_values() -> None:
    gold = q(text_property_filter={"property_name": "cuisine", "operator": "=", "value": "Italian"})
    pred = q(
        text_property_filter={"property_name": "cuisine", "operator": "=", "value": "italian food"}
    )
    assert score(pred, gold) == pytest.approx(0.85)
    assert score(pred, gold, semantic_values=True, similarity=lambda a, b: 0.9) == 1.0
    unscored = weaviate_ast(pred, gold, semantic_values=True)
    assert unscored.components["filters"].status == "unscored"
    assert unscored.score == 1.0  # (0.4 + 0.15 * 3) / 0.85
    # equal up to case never needs a similarity
    same = q(text_property_filter={"property_name": "cuisine", "operator": "=", "value": "italian"})
    assert score(same, gold, semantic_values=True) == 1.0


def test_collection_gate_and_weights() -> None:
    pred = q(target_collection="Hotels")
    assert score(pred, q()) == 0.0
    # without the gate: 0.15 * 4 / 1.0
    assert score(pred, q(), collection_gate=False) == pytest.approx(0.6)
    weights = {"collection": 0.5, "search": 0.5, "filters": 0, "aggregations": 0, "groupby": 0}
    assert score(q(search_query="pizza"), q(), weights=weights) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="unknown weight"):
        weaviate_ast(q(), q(), weights={"colection": 1})


def test_cross_collection_optimal_assignment_unmatched_score_zero() -> None:
    restaurants = q(integer_property_filter=PRICE_LT_20)
    hotels = {
        "target_collection": "Hotels",
        "search_query": "spa",
        "boolean_property_filter": {"property_name": "pool", "operator": "=", "value": True},
    }
    hotels_missing_filter = {"target_collection": "Hotels", "search_query": "spa"}
    gold = [restaurants, hotels]
    # reordered, and the hotel query lacks its filter (0.85): (1 + 0.85) / 2
    result = weaviate_ast([hotels_missing_filter, restaurants], gold)
    assert result.score == pytest.approx(0.925)
    assert sorted((m.predicted_index, m.gold_index) for m in result.matches) == [(0, 1), (1, 0)]
    # one query for a two-collection question: (1 + 0) / 2
    assert score([restaurants], gold) == pytest.approx(0.5)
    # an extra query: averaged over the larger set, (1 + 1 + 0) / 3
    extra = {"target_collection": "Menus"}
    result = weaviate_ast([restaurants, hotels, extra], gold)
    assert result.score == pytest.approx(2 / 3)
    assert result.families["boolean_property_filter"].n_gold == 1
    assert result.component_scores["collection"] == pytest.approx(2 / 3)
    assert score(None, gold) == 0.0


def test_scores_stay_in_unit_interval() -> None:
    gold = q(
        integer_property_filter=PRICE_LT_20,
        boolean_property_filter=OPEN,
        integer_property_aggregation={"property_name": "rating", "metrics": "MEAN"},
        groupby_property="city",
    )
    for pred in (gold, q(), {"target_collection": "X"}, q(search_query=None)):
        for mode in ("default", "legacy"):
            assert 0.0 <= score(pred, gold, mode=mode) <= 1.0


def test_schema_is_read_in_any_form() -> None:
    schema = parse_schema(
        {
            "classes": [
                {"class": "Restaurants", "properties": [{"name": "rating", "dataType": ["int"]}]}
            ]
        }
    )
    gold = q(integer_property_filter={"property_name": "rating", "operator": ">", "value": 4})
    pred = q(integer_property_filter={"property_name": "rating", "operator": ">=", "value": 5})
    assert score(pred, gold, numeric_equivalence=True, schema=schema) == 1.0
