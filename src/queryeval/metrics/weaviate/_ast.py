"""Weaviate query AST score (seed 000): a weighted structural comparison of a predicted
Weaviate query with a gold one.

score = sum_c w_c * s_c / sum_c w_c over the components c = collection (0.4), search (0.15),
filters (0.15), aggregations (0.15), group-by (0.15), each s_c in [0, 1]; a wrong collection
scores 0 (the AST root). Filters and aggregations are the mean over their three typed slots
(integer, text, boolean); a slot scores sum(credit of matched items) / max(#predicted, #gold).

- ``mode="legacy"`` reproduces weaviate-gorilla's scorer: a slot absent on both sides is a
  match, a slot present on one side only is *not counted at all* (so a missing or invented
  filter still earns full credit), a one-sided-only component adds nothing.
- ``mode="default"`` counts a one-sided slot as a mismatch (missing or spurious) and adds the
  seed's future work as options: order independence with optimal assignment, partial credit,
  numeric-condition equivalence, fuzzy property names, semantic search text / text values,
  and cross-collection (several queries on either side, optimal assignment, averaged over
  the larger set, unmatched ones scoring 0).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, Literal

from queryeval.metrics.weaviate._default import compare_default
from queryeval.metrics.weaviate._legacy import compare_legacy
from queryeval.metrics.weaviate._legacy_read import legacy_queries
from queryeval.metrics.weaviate._match import (
    assign,
)
from queryeval.metrics.weaviate._model import (
    WeaviateQuery,
    WeaviateSchema,
)
from queryeval.metrics.weaviate._parse import parse_queries, parse_schema
from queryeval.metrics.weaviate._result import (
    COMPONENTS,
    DEFAULT_WEIGHTS,
    Policy,
    QueryComparison,
    QueryMatch,
    Similarity,
    WeaviateAstResult,
)

Mode = Literal["default", "legacy"]
SearchPolicy = Literal["exact", "presence", "semantic"]


# --- options --------------------------------------------------------------------------------


_DEFAULT_WEIGHT_TUPLE = tuple(DEFAULT_WEIGHTS[c] for c in COMPONENTS)


def _weights(weights: Mapping[str, float] | None) -> tuple[float, float, float, float, float]:
    if weights is None:
        return _DEFAULT_WEIGHT_TUPLE  # type: ignore[return-value]
    merged = dict(DEFAULT_WEIGHTS)
    for name, w in (weights or {}).items():
        if name not in merged:
            raise ValueError(f"unknown weight {name!r}; expected {', '.join(COMPONENTS)}")
        if not isinstance(w, int | float) or w < 0:
            raise ValueError(f"weight {name!r} must be a number >= 0, got {w!r}")
        merged[name] = float(w)
    if sum(merged.values()) <= 0:
        raise ValueError("the weights sum to 0")
    return tuple(merged[c] for c in COMPONENTS)  # type: ignore[return-value]


@lru_cache(maxsize=256)
def _policy(
    mode: str,
    weights: tuple[tuple[str, float], ...] | None,
    search: str | None,
    order_independent: bool,
    partial_credit: bool,
    numeric_equivalence: bool,
    fuzzy_properties: bool,
    max_edit_distance: int,
    similarity: Similarity | None,
    semantic_threshold: float,
    semantic_values: bool,
    both_absent: str | None,
    collection_gate: bool,
) -> Policy:
    """Checked options, built once per distinct combination."""
    if mode not in ("default", "legacy"):
        raise ValueError(f"mode must be 'default' or 'legacy', not {mode!r}")
    if search is None:
        search = "presence" if mode == "legacy" else "exact"
    if search not in ("exact", "presence", "semantic"):
        raise ValueError(f"search must be 'exact', 'presence' or 'semantic', not {search!r}")
    if both_absent is None:
        both_absent = "match" if mode == "legacy" else "skip"
    if both_absent not in ("match", "skip"):
        raise ValueError(f"both_absent must be 'match' or 'skip', not {both_absent!r}")
    if mode == "legacy":
        extras = [
            name
            for name, on in (
                ("partial_credit", partial_credit),
                ("numeric_equivalence", numeric_equivalence),
                ("fuzzy_properties", fuzzy_properties),
                ("semantic_values", semantic_values),
                ("search='semantic'", search == "semantic"),
                ("both_absent='skip'", both_absent == "skip"),
            )
            if on
        ]
        if extras:
            raise ValueError(
                f"mode='legacy' reproduces the seed; {', '.join(extras)} needs mode='default'"
            )
    if max_edit_distance < 0:
        raise ValueError("max_edit_distance must be >= 0")
    if not 0.0 <= semantic_threshold <= 1.0:
        raise ValueError("semantic_threshold must be in [0, 1]")
    return Policy(
        mode=mode,
        weights=_weights(dict(weights) if weights is not None else None),
        search=search,
        order_independent=order_independent,
        partial_credit=partial_credit,
        numeric_equivalence=numeric_equivalence,
        fuzzy_properties=fuzzy_properties,
        max_edit_distance=max_edit_distance,
        similarity=similarity,
        semantic_threshold=semantic_threshold,
        semantic_values=semantic_values,
        both_absent=both_absent,
        collection_gate=collection_gate,
        schema=None,
    )


# --- the metric -----------------------------------------------------------------------------


def weaviate_ast(
    prediction: Any,
    reference: Any,
    *,
    mode: Mode = "default",
    weights: Mapping[str, float] | None = None,
    schema: Any = None,
    search: SearchPolicy | None = None,
    order_independent: bool = True,
    partial_credit: bool = False,
    numeric_equivalence: bool = False,
    fuzzy_properties: bool = False,
    max_edit_distance: int = 2,
    similarity: Similarity | None = None,
    semantic_threshold: float = 0.85,
    semantic_values: bool = False,
    both_absent: Literal["match", "skip"] | None = None,
    collection_gate: bool = True,
) -> WeaviateAstResult:
    """Score the predicted query against the gold one (seed 000). Either side: a
    `WeaviateQuery`, the Gorilla JSON structure, tool call(s), JSON or Python text, or a list
    of those (cross-collection). A prediction of None or [] scores 0.

    Options (default mode): `search` "exact" (case/space-insensitive equality; the default),
    "presence" (both present or both absent) or "semantic" (`similarity(pred, gold) >=
    semantic_threshold`; no `similarity` -> the search component is unscored, never 0);
    `order_independent` (items of a slot matched by optimal assignment, else by position);
    `partial_credit` (property / operator / value, resp. property / metrics Jaccard / limit,
    scored apart); `numeric_equivalence` (`> 4` == `>= 5` on integer properties: int in
    `schema`, or both values integers when the schema does not say); `fuzzy_properties` (names
    matched ignoring case and spacing, then within `max_edit_distance` edits, against the
    schema's properties of the gold collection or the gold's own names; reported in item notes);
    `semantic_values` (text filter values compared with `similarity` too); `both_absent`
    ("match": a slot empty on both sides counts as matched, as in the seed; "skip": it is left
    out of the mean); `collection_gate` (a wrong collection scores 0).

    In legacy mode only `weights`, `search` and `collection_gate` apply: `search` "presence"
    (the default: weaviate-gorilla's final scorer, two non-empty texts match whatever they
    say) or "exact" (its 2024-11-20 version: equal after `.lower()`); weights 0.2 x 5 with
    collection_gate=False is its earliest version. Both sides are read as the original read
    them (`legacy_queries`): a prediction it refused raises `RefusedByOriginalError` (the
    original scored it 0).

    >>> gold = {"target_collection": "Menus", "search_query": "pizza"}
    >>> pred = {"collection_name": "Menus", "search_query": ""}
    >>> round(weaviate_ast(pred, gold, mode="legacy").score, 3)
    0.85
    >>> gold = {"target_collection": "Books", "search_query": "space opera",
    ...         "integer_property_filter": {"property_name": "year", "operator": ">",
    ...                                     "value": 2000}}
    >>> weaviate_ast(gold, gold).score, weaviate_ast({"target_collection": "Books",
    ...                                               "search_query": "space opera"}, gold).score
    (1.0, 0.85)
    """
    policy = _policy(
        mode,
        tuple(sorted(weights.items())) if weights is not None else None,
        search,
        order_independent,
        partial_credit,
        numeric_equivalence,
        fuzzy_properties,
        max_edit_distance,
        similarity,
        semantic_threshold,
        semantic_values,
        both_absent,
        collection_gate,
    )
    parsed_schema = None
    if schema is not None:
        parsed_schema = parse_schema(schema)
        policy = policy._replace(schema=parsed_schema)
    if mode == "legacy":
        preds = _legacy_queries(prediction, True, parsed_schema)
        golds = _legacy_queries(reference, False, parsed_schema)
    else:
        preds = _as_queries(prediction, parsed_schema)
        golds = _as_queries(reference, parsed_schema)
    if not golds:
        raise ValueError("the gold holds no query")
    compare = compare_legacy if mode == "legacy" else compare_default
    if len(preds) == 1 and len(golds) == 1:
        comparison = compare(preds[0], golds[0], policy)
        return WeaviateAstResult(
            comparison.score, mode, (QueryMatch(0, 0, comparison),), 1, 1, policy.weights
        )
    return _cross_collection(preds, golds, policy, compare)


_PROBE = WeaviateQuery("Probe")


def check_weaviate_ast_options(**options: Any) -> None:
    """Raise ValueError (or TypeError) for options `weaviate_ast` would refuse.

    >>> check_weaviate_ast_options(mode="legacy", partial_credit=True)
    Traceback (most recent call last):
    ...
    ValueError: mode='legacy' reproduces the seed; partial_credit needs mode='default'
    """
    weaviate_ast(_PROBE, _PROBE, **options)


def _as_queries(obj: Any, schema: WeaviateSchema | None) -> tuple[WeaviateQuery, ...]:
    if obj is None or (isinstance(obj, list | tuple) and not obj):
        return ()
    if isinstance(obj, WeaviateQuery):
        return (obj,)
    if isinstance(obj, tuple) and all(isinstance(q, WeaviateQuery) for q in obj):
        return obj
    return parse_queries(obj, schema=schema)


def _legacy_queries(
    obj: Any, prediction: bool, schema: WeaviateSchema | None
) -> tuple[WeaviateQuery, ...]:
    if obj is None or (isinstance(obj, list | tuple) and not obj):
        return ()
    if isinstance(obj, tuple) and all(isinstance(q, WeaviateQuery) for q in obj):
        return obj
    return legacy_queries(obj, prediction=prediction, schema=schema)


def _cross_collection(
    preds: tuple[WeaviateQuery, ...],
    golds: tuple[WeaviateQuery, ...],
    policy: Policy,
    compare: Callable[[WeaviateQuery, WeaviateQuery, Policy], QueryComparison],
) -> WeaviateAstResult:
    table = [[compare(p, g, policy) for g in golds] for p in preds]
    pairs = assign([[c.score for c in row] for row in table]) if preds else []
    matches = [QueryMatch(i, j, table[i][j]) for i, j in pairs]
    used_p = {i for i, _ in pairs}
    used_g = {j for _, j in pairs}
    matches += [QueryMatch(i, None, None, preds[i]) for i in range(len(preds)) if i not in used_p]
    matches += [QueryMatch(None, j, None, golds[j]) for j in range(len(golds)) if j not in used_g]
    size = max(len(preds), len(golds))
    score = sum(m.score for m in matches) / size
    return WeaviateAstResult(
        min(1.0, score), policy.mode, tuple(matches), len(preds), len(golds), policy.weights
    )
