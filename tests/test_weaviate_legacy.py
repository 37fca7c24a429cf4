"""Legacy mode reproduces weaviate-gorilla's AST scorer, flaw included.

Expected values are computed by hand from the seed's rules (collection 0.4, then 0.15 each
for search, filters, aggregations, group-by; filters/aggregations averaged over the slots
that are counted), and cross-checked against an independent transcription of the original
scorer's logic on random queries.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.metrics import weaviate_ast

BASE = {"target_collection": "Restaurants", "search_query": "italian"}
PRICE_LT_20 = {"property_name": "price", "operator": "<", "value": 20}


def q(**parts: Any) -> dict[str, Any]:
    return {**BASE, **parts}


def legacy(pred: Any, gold: Any, **kw: Any) -> float:
    return weaviate_ast(pred, gold, mode="legacy", **kw).score


def test_identical_queries_score_one() -> None:
    gold = q(integer_property_filter=PRICE_LT_20, groupby_property="city")
    assert legacy(gold, gold) == 1.0


def test_collection_mismatch_scores_zero() -> None:
    result = weaviate_ast(q(target_collection="Hotels"), q(), mode="legacy")
    assert result.score == 0.0
    assert result.components["collection"].status == "wrong"
    assert result.components["filters"].status == "skipped"


def test_one_sided_filter_is_not_counted_so_it_earns_full_credit() -> None:
    # gold filters price < 20, the prediction has no filter at all.
    # integer slot one-sided: skipped; text and boolean absent on both: 2/2 -> 0.15.
    result = weaviate_ast(q(), q(integer_property_filter=PRICE_LT_20), mode="legacy")
    assert result.score == pytest.approx(1.0)
    slots = {s.slot: s for s in result.components["filters"].slots}
    assert slots["integer_property_filter"].counted is False
    assert slots["integer_property_filter"].status == "missing"
    # an invented filter is not counted either
    assert legacy(
        q(boolean_property_filter={"property_name": "open", "operator": "=", "value": True}), q()
    ) == pytest.approx(1.0)


def test_when_no_filter_slot_is_counted_the_filters_add_nothing() -> None:
    gold = q(
        integer_property_filter=PRICE_LT_20,
        text_property_filter={"property_name": "city", "operator": "=", "value": "Rome"},
        boolean_property_filter={"property_name": "open", "operator": "=", "value": True},
    )
    result = weaviate_ast(q(), gold, mode="legacy")
    # 0.4 + 0.15 (search) + 0 (filter_count == 0) + 0.15 + 0.15
    assert result.score == pytest.approx(0.85)
    assert result.components["filters"].status == "not_counted"


def test_wrong_operator_costs_one_third_of_the_filter_weight() -> None:
    pred = q(integer_property_filter={**PRICE_LT_20, "operator": "<="})
    # integer slot counted and wrong, text and boolean absent: 2/3 of 0.15
    assert legacy(pred, q(integer_property_filter=PRICE_LT_20)) == pytest.approx(
        0.4 + 0.15 + 0.15 * 2 / 3 + 0.15 + 0.15
    )


def test_aggregation_metrics_compared_but_not_the_top_occurrences_limit() -> None:
    gold = q(
        text_property_aggregation={
            "property_name": "cuisine",
            "metrics": "TOP_OCCURRENCES",
            "top_occurrences_limit": 3,
        }
    )
    other_limit = q(
        text_property_aggregation={**gold["text_property_aggregation"], "top_occurrences_limit": 5}
    )
    assert legacy(other_limit, gold) == pytest.approx(1.0)
    wrong_metric = q(integer_property_aggregation={"property_name": "rating", "metrics": "MAX"})
    gold_mean = q(integer_property_aggregation={"property_name": "rating", "metrics": "MEAN"})
    assert legacy(wrong_metric, gold_mean) == pytest.approx(0.95)


def test_search_exact_is_case_insensitive_and_keeps_the_original_quirks() -> None:
    assert legacy(q(search_query="ITALIAN"), q()) == pytest.approx(1.0)
    assert legacy(q(search_query="italian food"), q()) == pytest.approx(0.85)
    assert legacy(q(search_query=None), q()) == pytest.approx(0.85)
    # both empty strings: neither truthy nor None, so the original gives no search credit
    assert legacy(q(search_query=""), q(search_query="")) == pytest.approx(0.85)


def test_search_presence_only_asks_both_present_or_both_absent() -> None:
    assert legacy(q(search_query="pizza"), q(), search="presence") == pytest.approx(1.0)
    assert legacy(q(search_query=None), q(), search="presence") == pytest.approx(0.85)
    assert legacy(q(search_query=""), q(search_query=None), search="presence") == 1.0


def test_groupby_is_plain_equality_none_included() -> None:
    assert legacy(q(), q(groupby_property="city")) == pytest.approx(0.85)
    assert legacy(q(groupby_property="City"), q(groupby_property="city")) == pytest.approx(0.85)


def test_earliest_version_equal_weights_without_collection_gate() -> None:
    weights = dict.fromkeys(("collection", "search", "filters", "aggregations", "groupby"), 0.2)
    score = legacy(q(target_collection="Hotels"), q(), weights=weights, collection_gate=False)
    assert score == pytest.approx(0.8)


def test_default_only_options_are_refused_in_legacy_mode() -> None:
    with pytest.raises(ValueError, match="partial_credit"):
        weaviate_ast(q(), q(), mode="legacy", partial_credit=True)
    with pytest.raises(ValueError, match="semantic"):
        weaviate_ast(q(), q(), mode="legacy", search="semantic")


# --- cross-check against an independent transcription of the original ------------------------

FILTER_SLOTS = ("integer_property_filter", "text_property_filter", "boolean_property_filter")
AGG_SLOTS = (
    "integer_property_aggregation",
    "text_property_aggregation",
    "boolean_property_aggregation",
)


def original_score(pred: dict[str, Any], gold: dict[str, Any]) -> float:
    """weaviate-gorilla's abstract_syntax_tree_match_score, written out again over dicts."""
    if pred["target_collection"] != gold["target_collection"]:
        return 0.0
    score = 0.4
    ps, gs = pred.get("search_query"), gold.get("search_query")
    if ps and gs:
        if ps.lower() == gs.lower():
            score += 0.15
    elif ps is None and gs is None:
        score += 0.15
    for slots, fields, weight in (
        (FILTER_SLOTS, ("property_name", "operator", "value"), 0.15),
        (AGG_SLOTS, ("property_name", "metrics"), 0.15),
    ):
        hits = count = 0
        for slot in slots:
            a, b = pred.get(slot), gold.get(slot)
            if a is None and b is None:
                hits += 1
                count += 1
            elif a and b:
                if all(a[f] == b[f] for f in fields):
                    hits += 1
                count += 1
        if count > 0:
            score += weight * (hits / count)
    if pred.get("groupby_property") == gold.get("groupby_property"):
        score += 0.15
    return score


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


int_filter = st.fixed_dictionaries(
    {
        "property_name": st.sampled_from(["price", "rating"]),
        "operator": st.sampled_from(["<", ">=", "="]),
        "value": st.sampled_from([3, 4, 20]),
    }
)
text_filter = st.fixed_dictionaries(
    {
        "property_name": st.sampled_from(["city", "cuisine"]),
        "operator": st.sampled_from(["=", "LIKE"]),
        "value": st.sampled_from(["Rome", "rome"]),
    }
)
bool_filter = st.fixed_dictionaries(
    {
        "property_name": st.sampled_from(["open", "vegan"]),
        "operator": st.sampled_from(["=", "!="]),
        "value": st.booleans(),
    }
)
int_agg = st.fixed_dictionaries(
    {
        "property_name": st.sampled_from(["price", "rating"]),
        "metrics": st.sampled_from(["MEAN", "MAX"]),
    }
)
text_agg = st.fixed_dictionaries(
    {
        "property_name": st.sampled_from(["city"]),
        "metrics": st.sampled_from(["COUNT", "TOP_OCCURRENCES"]),
        "top_occurrences_limit": st.sampled_from([None, 3, 5]),
    }
)
bool_agg = st.fixed_dictionaries(
    {
        "property_name": st.sampled_from(["open"]),
        "metrics": st.sampled_from(["TOTAL_TRUE", "PERCENTAGE_TRUE"]),
    }
)
queries = st.fixed_dictionaries(
    {
        "target_collection": st.sampled_from(["Restaurants", "Restaurants", "Hotels"]),
        "search_query": st.sampled_from([None, "", "italian", "Italian", "pizza"]),
        "integer_property_filter": _maybe(int_filter),
        "text_property_filter": _maybe(text_filter),
        "boolean_property_filter": _maybe(bool_filter),
        "integer_property_aggregation": _maybe(int_agg),
        "text_property_aggregation": _maybe(text_agg),
        "boolean_property_aggregation": _maybe(bool_agg),
        "groupby_property": st.sampled_from([None, "city", "cuisine"]),
    }
)


@settings(max_examples=400, deadline=None)
@given(pred=queries, gold=queries)
def test_legacy_equals_the_original_on_random_queries(
    pred: dict[str, Any], gold: dict[str, Any]
) -> None:
    expected = min(1.0, original_score(pred, gold))
    assert weaviate_ast(pred, gold, mode="legacy").score == expected
