"""Speed of the Weaviate AST score: 100,000 comparisons of realistic query pairs.

Prints wall and CPU seconds for queryeval's `weaviate_ast` (default and legacy mode, on
parsed queries and straight from JSON dicts) and, measured in the same run, for the
alternative a user would otherwise run: weaviate-gorilla's scorer on its pydantic models
(re-typed here from the seed's rules, printing removed). Run:
`PYTHONPATH=src python bench/bench_weaviate.py [n]`.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel

from queryeval.metrics import parse_query, weaviate_ast

N = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
RNG = random.Random(0)

# --- a workload: gold queries and predictions with the errors models make ---------------------


def _filter(family: str) -> dict[str, Any]:
    if family == "integer":
        return {
            "property_name": RNG.choice(["price", "rating", "stars"]),
            "operator": RNG.choice(["<", ">", "<=", ">=", "="]),
            "value": RNG.choice([3, 4, 20, 100]),
        }
    if family == "text":
        return {
            "property_name": RNG.choice(["city", "cuisine"]),
            "operator": RNG.choice(["=", "LIKE"]),
            "value": RNG.choice(["Rome", "Par*"]),
        }
    return {
        "property_name": RNG.choice(["open_now", "pool"]),
        "operator": "=",
        "value": RNG.random() < 0.5,
    }


def _aggregation(family: str) -> dict[str, Any]:
    metrics = {
        "integer": ["MEAN", "MAX", "SUM"],
        "text": ["TOP_OCCURRENCES", "COUNT"],
        "boolean": ["TOTAL_TRUE", "PERCENTAGE_TRUE"],
    }[family]
    return {"property_name": RNG.choice(["rating", "city", "pool"]), "metrics": RNG.choice(metrics)}


def _query() -> dict[str, Any]:
    q: dict[str, Any] = {"target_collection": RNG.choice(["Restaurants", "Hotels"])}
    if RNG.random() < 0.6:
        q["search_query"] = RNG.choice(["cozy italian", "beach resort", "spa"])
    for family in ("integer", "text", "boolean"):
        if RNG.random() < 0.35:
            q[f"{family}_property_filter"] = _filter(family)
        if RNG.random() < 0.2:
            q[f"{family}_property_aggregation"] = _aggregation(family)
    if RNG.random() < 0.3:
        q["groupby_property"] = RNG.choice(["city", "country"])
    return q


def _mutate(gold: dict[str, Any]) -> dict[str, Any]:
    pred = dict(gold)
    roll = RNG.random()
    if roll < 0.3:
        return pred  # right
    key = RNG.choice(
        [
            "target_collection",
            "search_query",
            "integer_property_filter",
            "text_property_filter",
            "boolean_property_aggregation",
            "groupby_property",
        ]
    )
    if key == "target_collection":
        pred[key] = "Menus"
    elif key in pred and RNG.random() < 0.5:
        del pred[key]  # missing
    elif key.endswith("_filter"):
        pred[key] = _filter(key.split("_")[0])  # wrong or spurious
    elif key.endswith("_aggregation"):
        pred[key] = _aggregation("boolean")
    else:
        pred[key] = "other"
    return pred


GOLDS = [_query() for _ in range(500)]
PAIRS = [(_mutate(g), g) for g in GOLDS]
PARSED = [(parse_query(p), parse_query(g)) for p, g in PAIRS]


# --- the alternative: weaviate-gorilla's scorer on its pydantic models -------------------------


class IntPropertyFilter(BaseModel):
    property_name: str
    operator: Literal["=", "<", ">", "<=", ">="]
    value: int | float


class TextPropertyFilter(BaseModel):
    property_name: str
    operator: Literal["=", "LIKE"]
    value: str


class BooleanPropertyFilter(BaseModel):
    property_name: str
    operator: Literal["=", "!="]
    value: bool


class IntAggregation(BaseModel):
    property_name: str
    metrics: Literal["COUNT", "TYPE", "MIN", "MAX", "MEAN", "MEDIAN", "MODE", "SUM"]


class TextAggregation(BaseModel):
    property_name: str
    metrics: Literal["COUNT", "TYPE", "TOP_OCCURRENCES"]
    top_occurrences_limit: int | None = None


class BooleanAggregation(BaseModel):
    property_name: str
    metrics: Literal[
        "COUNT", "TYPE", "TOTAL_TRUE", "TOTAL_FALSE", "PERCENTAGE_TRUE", "PERCENTAGE_FALSE"
    ]


class WeaviateQuery(BaseModel):
    target_collection: str
    search_query: str | None = None
    integer_property_filter: IntPropertyFilter | None = None
    text_property_filter: TextPropertyFilter | None = None
    boolean_property_filter: BooleanPropertyFilter | None = None
    integer_property_aggregation: IntAggregation | None = None
    text_property_aggregation: TextAggregation | None = None
    boolean_property_aggregation: BooleanAggregation | None = None
    groupby_property: str | None = None


_FILTERS = ("integer_property_filter", "text_property_filter", "boolean_property_filter")
_AGGS = (
    "integer_property_aggregation",
    "text_property_aggregation",
    "boolean_property_aggregation",
)


def gorilla_score(p: WeaviateQuery, g: WeaviateQuery) -> float:
    """The original scorer's rules on its models (its per-slot code written as loops; the
    final version, search text on presence)."""
    if p.target_collection != g.target_collection:
        return 0.0
    score = 0.0 + 0.4
    both = bool(p.search_query and g.search_query)
    if both or (p.search_query is None and g.search_query is None):
        score += 0.15
    hits, count = 0.0, 0
    for key in _FILTERS:
        a, b = getattr(p, key), getattr(g, key)
        if a is None and b is None:
            hits += 1
            count += 1
        elif a and b:
            hits += (
                a.property_name == b.property_name
                and a.operator == b.operator
                and a.value == b.value
            )
            count += 1
    if count:
        score += 0.15 * (hits / count)
    hits, count = 0.0, 0
    for key in _AGGS:
        a, b = getattr(p, key), getattr(g, key)
        if a is None and b is None:
            hits += 1
            count += 1
        elif a and b:
            hits += a.property_name == b.property_name and a.metrics == b.metrics
            count += 1
    if count:
        score += 0.15 * (hits / count)
    if p.groupby_property == g.groupby_property:
        score += 0.15
    return score


MODELS = [(WeaviateQuery.model_validate(p), WeaviateQuery.model_validate(g)) for p, g in PAIRS]


# --- timing -------------------------------------------------------------------------------


def timed(label: str, pairs: list[Any], fn: Callable[[Any, Any], Any]) -> float:
    rounds, rest = divmod(N, len(pairs))
    work = pairs * rounds + pairs[:rest]
    wall, cpu = time.perf_counter(), time.process_time()
    for p, g in work:
        fn(p, g)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{label:<58} {wall:7.3f} s wall  {cpu:7.3f} s cpu  {1e6 * cpu / N:6.2f} us/cmp")
    return cpu


def main() -> None:
    # the same numbers, checked before timing: legacy == the original on every pair
    for (p, g), (mp, mg) in zip(PARSED, MODELS, strict=True):
        assert weaviate_ast(p, g, mode="legacy").score == gorilla_score(mp, mg)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{N:,} comparisons over {len(PAIRS)} distinct pairs; load average {load:.2f}; "
        f"{os.cpu_count()} cores"
    )
    default = timed("queryeval weaviate_ast, default mode, parsed queries", PARSED, weaviate_ast)
    timed(
        "queryeval weaviate_ast, legacy mode, parsed queries",
        PARSED,
        lambda p, g: weaviate_ast(p, g, mode="legacy"),
    )
    timed(
        "queryeval weaviate_ast, default + partial credit + fuzzy",
        PARSED,
        lambda p, g: weaviate_ast(
            p, g, partial_credit=True, fuzzy_properties=True, numeric_equivalence=True
        ),
    )
    from_dicts = timed("queryeval weaviate_ast, default mode, from JSON dicts", PAIRS, weaviate_ast)
    legacy_dicts = timed(
        "queryeval weaviate_ast, legacy mode, from JSON dicts",
        PAIRS,
        lambda p, g: weaviate_ast(p, g, mode="legacy"),
    )
    original = timed("original rules on pydantic models (validated once)", MODELS, gorilla_score)
    original_v = timed(
        "original rules, validating the dicts each time",
        PAIRS,
        lambda p, g: gorilla_score(
            WeaviateQuery.model_validate(p), WeaviateQuery.model_validate(g)
        ),
    )
    print(
        f"ratio default/original (parsed inputs): {default / original:.1f}x; "
        f"from dicts vs original validating dicts: {from_dicts / original_v:.2f}x (default), "
        f"{legacy_dicts / original_v:.2f}x (legacy)"
    )


if __name__ == "__main__":
    main()
