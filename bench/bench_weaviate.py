"""Speed of the Weaviate AST score: 100,000 comparisons of realistic query pairs.

Prints wall and CPU seconds for queryeval's `weaviate_ast` (default and legacy mode, on
parsed queries and straight from JSON dicts) and, measured in the same run, for the
alternative a user would otherwise run: weaviate-gorilla's scorer on its pydantic models
(re-typed here from the seed's rules, printing removed). All variants run in one process
(one thread each) in interleaved rounds; medians of wall and CPU seconds are reported. Run:
`.venv/bin/python bench/bench_weaviate.py [--n 100000] [--rounds 3] [--quick]`.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as h
from queryeval.metrics import parse_query, weaviate_ast

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


def timed(n: int, pairs: list[Any], fn: Callable[[Any, Any], Any]) -> Callable[[], dict]:
    """A side's run: `n` comparisons cycling over `pairs`; wall and CPU seconds."""
    rounds, rest = divmod(n, len(pairs))
    work = pairs * rounds + pairs[:rest]

    def run() -> dict[str, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        for p, g in work:
            fn(p, g)
        return {"seconds": time.perf_counter() - wall, "cpu": time.process_time() - cpu}

    return run


DEFAULT = "queryeval default, parsed"
ORIGINAL = "original rules, models validated once"
FROM_DICTS = "queryeval default, from JSON dicts"
LEGACY_DICTS = "queryeval legacy, from JSON dicts"
ORIGINAL_DICTS = "original rules, validating dicts each time"


def main() -> None:
    args = h.options(
        __doc__.splitlines()[0], full={"n": 100_000, "rounds": 3}, quick={"n": 10_000, "rounds": 3}
    )
    # the same numbers, checked before timing: legacy == the original on every pair
    for (p, g), (mp, mg) in zip(PARSED, MODELS, strict=True):
        assert weaviate_ast(p, g, mode="legacy").score == gorilla_score(mp, mg)
    print(f"{args.n:,} comparisons over {len(PAIRS)} distinct pairs; {h.machine()}")
    n = args.n
    sides = [
        h.Side(DEFAULT, timed(n, PARSED, weaviate_ast), 1),
        h.Side(
            "queryeval legacy, parsed",
            timed(n, PARSED, lambda p, g: weaviate_ast(p, g, mode="legacy")),
            1,
        ),
        h.Side(
            "queryeval default + partial + fuzzy",
            timed(
                n,
                PARSED,
                lambda p, g: weaviate_ast(
                    p, g, partial_credit=True, fuzzy_properties=True, numeric_equivalence=True
                ),
            ),
            1,
        ),
        h.Side(FROM_DICTS, timed(n, PAIRS, weaviate_ast), 1),
        h.Side(LEGACY_DICTS, timed(n, PAIRS, lambda p, g: weaviate_ast(p, g, mode="legacy")), 1),
        h.Side(ORIGINAL, timed(n, MODELS, gorilla_score), 1),
        h.Side(
            ORIGINAL_DICTS,
            timed(
                n,
                PAIRS,
                lambda p, g: gorilla_score(
                    WeaviateQuery.model_validate(p), WeaviateQuery.model_validate(g)
                ),
            ),
            1,
        ),
    ]
    timings = h.interleaved(sides, args.rounds, progress=False)
    print(h.table(timings, reference=ORIGINAL))
    print(f"{'side':<44}{'median CPU s':>13}{'us/cmp (CPU)':>14}")
    for t in timings.values():
        cpu = t.extra_median("cpu")
        print(f"{t.label:<44}{cpu:>13.3f}{1e6 * cpu / n:>14.2f}")
    default, original = timings[DEFAULT], timings[ORIGINAL]
    h.record(
        "weaviate",
        f"weaviate_ast, {n:,} comparisons, default mode",
        f"{default.median:.2f} s wall, {default.extra_median('cpu'):.2f} s CPU",
        against=f"weaviate-gorilla's rules {original.median:.2f} s wall",
        note=f"{h.ratio(default, original)} the original's time (which returns one float); "
        f"from JSON dicts {h.ratio(timings[FROM_DICTS], timings[ORIGINAL_DICTS])} (default), "
        f"{h.ratio(timings[LEGACY_DICTS], timings[ORIGINAL_DICTS])} (legacy); "
        f"median of {args.rounds}",
    )


if __name__ == "__main__":
    main()
