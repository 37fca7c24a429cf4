"""Legacy mode of the Weaviate AST score: weaviate-gorilla's scorer reproduced exactly,
including its flaw (a slot present on one side only is not counted at all)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from queryeval.metrics.weaviate._model import (
    AGGREGATION_KEYS,
    FILTER_KEYS,
    Aggregation,
    Condition,
    Slot,
    WeaviateQuery,
)
from queryeval.metrics.weaviate._result import (
    ABSENT_SLOTS,
    COMPONENTS,
    NO_SLOTS,
    ComponentResult,
    Policy,
    QueryComparison,
    SlotResult,
    absent_component,
    constant,
    one_sided,
    summarize,
)


def compare_legacy(p: WeaviateQuery, g: WeaviateQuery, policy: Policy) -> QueryComparison:
    """weaviate-gorilla's `abstract_syntax_tree_match_score`, step for step (same sums in the
    same order, so the float is the same)."""
    w_col, w_search, w_filters, w_aggs, w_group = policy.weights
    same_collection = p.collection == g.collection
    collection = (
        constant("collection", "matched", 1.0, w_col)
        if same_collection
        else constant("collection", "wrong", 0.0, w_col)
    )
    if not same_collection and policy.collection_gate:
        rest = tuple(
            ComponentResult(name, "skipped", None, w)
            for name, w in zip(COMPONENTS[1:], policy.weights[1:], strict=True)
        )
        return QueryComparison(0.0, dict(zip(COMPONENTS, (collection, *rest), strict=True)), p, g)
    score = w_col if same_collection else 0.0
    search = _search_legacy(p.search_query, g.search_query, w_search, policy.search)
    score += w_search * search.score  # type: ignore[operator]
    filters = _family_legacy("filters", w_filters, p.filters, g.filters, FILTER_KEYS, _eq_filters)
    if filters.score is not None:
        score += w_filters * filters.score
    aggs = _family_legacy(
        "aggregations", w_aggs, p.aggregations, g.aggregations, AGGREGATION_KEYS, _eq_aggs
    )
    if aggs.score is not None:
        score += w_aggs * aggs.score
    same_group = p.groupby == g.groupby
    if same_group:
        status = "absent" if g.groupby is None else "matched"
    else:
        status = one_sided(p.groupby, g.groupby)
    groupby = constant("groupby", status, 1.0 if same_group else 0.0, w_group)
    if same_group:
        score += w_group
    total = sum(policy.weights)
    if abs(total - 1.0) > 1e-9:
        score /= total
    components = {
        "collection": collection,
        "search": search,
        "filters": filters,
        "aggregations": aggs,
        "groupby": groupby,
    }
    # not clamped: the original returns its sum as it is
    return QueryComparison(score, components, p, g)


def _search_legacy(
    pred: str | None, gold: str | None, weight: float, policy: str
) -> ComponentResult:
    # Both versions of the original: two non-empty texts match (on presence, or when equal
    # after .lower()); two None match; anything else ("" on either side included) does not.
    if pred and gold:
        ok = policy == "presence" or pred.lower() == gold.lower()
    else:
        ok = pred is None and gold is None
    status = one_sided(pred, gold) if not ok else "absent" if not pred and not gold else "matched"
    return constant("search", status, 1.0 if ok else 0.0, weight)


def _eq_filters(a: tuple[Condition, ...], b: tuple[Condition, ...]) -> bool:
    # field by field with ==, as the original (a tuple comparison would call two references
    # to the same NaN equal)
    return len(a) == len(b) and all(
        x.property == y.property and x.operator == y.operator and x.value == y.value
        for x, y in zip(a, b, strict=True)
    )


def _eq_aggs(a: tuple[Aggregation, ...], b: tuple[Aggregation, ...]) -> bool:
    # The original compares property_name and metrics only (not top_occurrences_limit).
    return len(a) == len(b) and all(
        x.property == y.property and x.metrics == y.metrics for x, y in zip(a, b, strict=True)
    )


def _family_legacy(
    name: str,
    weight: float,
    pred: tuple[Slot, ...],
    gold: tuple[Slot, ...],
    keys: tuple[str, ...],
    equal: Callable[[Any, Any], bool],
) -> ComponentResult:
    if pred == NO_SLOTS and gold == NO_SLOTS:
        return absent_component(name, weight, keys, "match")
    slots = (
        _slot_legacy(keys[0], pred[0], gold[0], equal),
        _slot_legacy(keys[1], pred[1], gold[1], equal),
        _slot_legacy(keys[2], pred[2], gold[2], equal),
    )
    count = slots[0].counted + slots[1].counted + slots[2].counted
    if count == 0:
        return ComponentResult(
            name,
            "not_counted",
            None,
            weight,
            slots,
            ("no slot counted: the component adds nothing",),
        )
    hits = sum(s.score for s in slots if s.score is not None)
    return ComponentResult(name, summarize(slots), hits / count, weight, slots)


def _slot_legacy(key: str, ps: Slot, gs: Slot, equal: Callable[[Any, Any], bool]) -> SlotResult:
    if ps is None and gs is None:
        return ABSENT_SLOTS[key, "match"]
    if ps and gs:
        ok = equal(ps, gs)
        return SlotResult(
            key,
            "matched" if ok else "wrong",
            1.0 if ok else 0.0,
            True,
            (),
            float(ok),
            len(ps),
            len(gs),
        )
    # present on one side only: the original does not count the slot at all
    return SlotResult(key, one_sided(ps, gs), None, False, (), 0.0, len(ps or ()), len(gs or ()))
