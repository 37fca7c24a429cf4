"""Legacy mode reproduces weaviate-gorilla's AST scorer for every input the original reads.

The expected values follow the original's rules, written out here (`gorilla_sum` adds the
weights in the original's order, so floats compare with ==):

- reading (its pydantic models and its experiment script): tool-call arguments need
  `collection_name`; a filter/aggregation key that is present must hold a valid object (null,
  {}, a string or a list are refused); `value: int | float` / `str` / `bool` and
  `top_occurrences_limit: Optional[int]` coerce as pydantic does; operators and metrics are
  exact literals, one metric; extra keys are ignored; a refused prediction scores 0;
- scoring (`abstract_syntax_tree_match_score`): wrong collection -> 0; search text: two
  non-empty texts match (final version: on presence; 2024-11-20 version: equal after
  .lower()), two None match, nothing else; a slot absent on both sides is a match, one
  present on one side only is not counted; aggregations compare property and metric;
  group-by is plain equality.

`scripts/weaviate_legacy_diff.py` runs the original's own code on these classes (and on its
published results) for the differential check; these tests pin the rules without it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from queryeval.metrics import weaviate_ast
from queryeval.metrics.weaviate import RefusedByOriginalError, legacy_queries

REFUSED = "refused"
MISSING = object()

PRICE_LT_20 = {"property_name": "price", "operator": "<", "value": 20}
TOP_CUISINE = {"property_name": "cuisine", "metrics": "TOP_OCCURRENCES", "top_occurrences_limit": 3}
GOLD: dict[str, Any] = {
    "corresponding_natural_language_query": "cheap pizza places: top cuisines by veggie",
    "target_collection": "Menus",
    "search_query": "pizza",
    "integer_property_filter": PRICE_LT_20,
    "text_property_filter": None,
    "boolean_property_filter": None,
    "integer_property_aggregation": None,
    "text_property_aggregation": TOP_CUISINE,
    "boolean_property_aggregation": None,
    "groupby_property": "isVegetarian",
}
# the right answer as tool-call arguments (absent slots left out, as models do)
ARGS: dict[str, Any] = {
    "collection_name": "Menus",
    "search_query": "pizza",
    "integer_property_filter": PRICE_LT_20,
    "text_property_aggregation": TOP_CUISINE,
    "groupby_property": "isVegetarian",
}


def gorilla_sum(
    search: bool = True,
    filters: tuple[int, int] = (3, 3),
    aggregations: tuple[int, int] = (3, 3),
    groupby: bool = True,
) -> float:
    """The original's score when the collection matches, summed in its order."""
    score = 0.0 + 0.4
    if search:
        score += 0.15
    if filters[1] > 0:
        score += 0.15 * (float(filters[0]) / filters[1])
    if aggregations[1] > 0:
        score += 0.15 * (float(aggregations[0]) / aggregations[1])
    if groupby:
        score += 0.15
    return score


def with_(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of `base` with `path` (`key` or `key.field`) set (MISSING: removed)."""
    out = json.loads(json.dumps(base))
    *parents, last = path.split(".")
    target = out
    for key in parents:
        target = target[key]
    if value is MISSING:
        target.pop(last, None)
    else:
        target[last] = value
    return out


def legacy(pred: Any, gold: Any = GOLD, **kw: Any) -> float | str:
    try:
        return weaviate_ast(pred, gold, mode="legacy", **kw).score
    except RefusedByOriginalError:
        return REFUSED


# --- reading and scoring, class by class (tool-call arguments against GOLD) ----------------

WRONG_FILTER = gorilla_sum(filters=(2, 3))
WRONG_AGG = gorilla_sum(aggregations=(2, 3))
NO_SEARCH = gorilla_sum(search=False)
NO_GROUP = gorilla_sum(groupby=False)

CLASSES: list[tuple[str, str, Any, Any]] = [
    # (class, field path in ARGS, value sent, the original's score)
    ("collection exact", "collection_name", "Menus", 1.0),
    ("collection case differs", "collection_name", "menus", 0.0),
    ("collection trailing space", "collection_name", "Menus ", 0.0),
    ("collection empty string", "collection_name", "", 0.0),
    ("collection missing", "collection_name", MISSING, REFUSED),
    ("collection null", "collection_name", None, REFUSED),
    ("collection number", "collection_name", 5, REFUSED),
    ("search other text (presence)", "search_query", "pasta", 1.0),
    ("search other case", "search_query", "PIZZA", 1.0),
    ("search blank is truthy", "search_query", " ", 1.0),
    ("search empty string", "search_query", "", NO_SEARCH),
    ("search null", "search_query", None, NO_SEARCH),
    ("search missing", "search_query", MISSING, NO_SEARCH),
    ("search number", "search_query", 5, REFUSED),
    ("search list", "search_query", ["pizza"], REFUSED),
    ("int value as string", "integer_property_filter.value", "20", 1.0),
    ("int value padded string", "integer_property_filter.value", " 20 ", 1.0),
    ("int value float string", "integer_property_filter.value", "20.0", 1.0),
    ("int value float", "integer_property_filter.value", 20.0, 1.0),
    ("int value exponent string", "integer_property_filter.value", "2e1", 1.0),
    ("int value other", "integer_property_filter.value", 20.5, WRONG_FILTER),
    ("int value bool -> 1", "integer_property_filter.value", True, WRONG_FILTER),
    ("int value word", "integer_property_filter.value", "abc", REFUSED),
    ("int value null", "integer_property_filter.value", None, REFUSED),
    ("int value missing", "integer_property_filter.value", MISSING, REFUSED),
    ("int value list", "integer_property_filter.value", [20], REFUSED),
    ("int operator other", "integer_property_filter.operator", "<=", WRONG_FILTER),
    ("int operator alias ==", "integer_property_filter.operator", "==", REFUSED),
    ("int operator alias lt", "integer_property_filter.operator", "lt", REFUSED),
    ("int operator of text family", "integer_property_filter.operator", "LIKE", REFUSED),
    ("int operator !=", "integer_property_filter.operator", "!=", REFUSED),
    ("property case differs", "integer_property_filter.property_name", "Price", WRONG_FILTER),
    ("property empty string", "integer_property_filter.property_name", "", WRONG_FILTER),
    ("property number", "integer_property_filter.property_name", 5, REFUSED),
    ("property missing", "integer_property_filter.property_name", MISSING, REFUSED),
    ("filter extra key ignored", "integer_property_filter.note", "x", 1.0),
    ("filter slot missing: not counted", "integer_property_filter", MISSING, 1.0),
    ("filter slot null", "integer_property_filter", None, REFUSED),
    ("filter slot empty object", "integer_property_filter", {}, REFUSED),
    ("filter slot as JSON string", "integer_property_filter", json.dumps(PRICE_LT_20), REFUSED),
    ("filter slot as list", "integer_property_filter", [PRICE_LT_20], REFUSED),
    (
        "spurious bool filter: not counted",
        "boolean_property_filter",
        {"property_name": "open", "operator": "!=", "value": "yes"},
        1.0,
    ),
    (
        "spurious bool filter refused value",
        "boolean_property_filter",
        {"property_name": "open", "operator": "=", "value": "maybe"},
        REFUSED,
    ),
    (
        "spurious text filter number value",
        "text_property_filter",
        {"property_name": "city", "operator": "=", "value": 5},
        REFUSED,
    ),
    (
        "spurious text filter lower-case like",
        "text_property_filter",
        {"property_name": "city", "operator": "like", "value": "R*"},
        REFUSED,
    ),
    ("limit zero", "text_property_aggregation.top_occurrences_limit", 0, 1.0),
    ("limit negative", "text_property_aggregation.top_occurrences_limit", -1, 1.0),
    ("limit other", "text_property_aggregation.top_occurrences_limit", 10, 1.0),
    ("limit as string", "text_property_aggregation.top_occurrences_limit", "3", 1.0),
    ("limit as whole float", "text_property_aggregation.top_occurrences_limit", 3.0, 1.0),
    ("limit null", "text_property_aggregation.top_occurrences_limit", None, 1.0),
    ("limit missing", "text_property_aggregation.top_occurrences_limit", MISSING, 1.0),
    ("limit fraction", "text_property_aggregation.top_occurrences_limit", 3.5, REFUSED),
    ("limit word", "text_property_aggregation.top_occurrences_limit", "x", REFUSED),
    ("metric other of family", "text_property_aggregation.metrics", "COUNT", WRONG_AGG),
    ("metric lower case", "text_property_aggregation.metrics", "top_occurrences", REFUSED),
    ("metric list", "text_property_aggregation.metrics", ["TOP_OCCURRENCES"], REFUSED),
    ("metric of another family", "text_property_aggregation.metrics", "MAX", REFUSED),
    ("metric missing", "text_property_aggregation.metrics", MISSING, REFUSED),
    ("aggregation slot missing: not counted", "text_property_aggregation", MISSING, 1.0),
    ("aggregation slot null", "text_property_aggregation", None, REFUSED),
    (
        "int aggregation with a limit (ignored)",
        "integer_property_aggregation",
        {"property_name": "price", "metrics": "MEAN", "top_occurrences_limit": "x"},
        1.0,
    ),
    (
        "bool aggregation alias AVG",
        "boolean_property_aggregation",
        {"property_name": "open", "metrics": "AVG"},
        REFUSED,
    ),
    ("groupby case differs", "groupby_property", "isvegetarian", NO_GROUP),
    ("groupby empty string", "groupby_property", "", NO_GROUP),
    ("groupby null", "groupby_property", None, NO_GROUP),
    ("groupby missing", "groupby_property", MISSING, NO_GROUP),
    ("groupby as object", "groupby_property", {"property_name": "isVegetarian"}, REFUSED),
    ("groupby number", "groupby_property", 3, REFUSED),
    ("extra top-level key", "limit", 5, 1.0),
    ("target_collection beside collection_name: unread", "target_collection", "Other", 1.0),
]


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [c[1:] for c in CLASSES],
    ids=[c[0] for c in CLASSES],
)
def test_tool_call_arguments_class_by_class(path: str, value: Any, expected: Any) -> None:
    assert legacy(with_(ARGS, path, value)) == expected


def test_the_right_answer_scores_one_in_every_wrapping() -> None:
    call = {"type": "function", "function": {"name": "q", "arguments": json.dumps(ARGS)}}
    assert legacy(ARGS) == 1.0
    assert legacy({"role": "assistant", "tool_calls": [call]}) == 1.0
    assert legacy([call]) == 1.0
    assert legacy(call) == 1.0
    assert legacy({"arguments": ARGS}) == 1.0
    assert legacy(json.dumps(ARGS)) == 1.0
    assert legacy(f"```json\n{json.dumps(ARGS)}\n```") == 1.0


def test_only_the_first_tool_call_is_read() -> None:
    good = {"function": {"name": "q", "arguments": json.dumps(ARGS)}}
    bad = {"function": {"name": "q", "arguments": "{}"}}
    other = {"function": {"name": "q", "arguments": json.dumps({**ARGS, "collection_name": "X"})}}
    assert legacy({"tool_calls": [good, bad]}) == 1.0
    assert legacy({"tool_calls": [good, other]}) == 1.0
    assert legacy({"tool_calls": [bad, good]}) == REFUSED
    assert legacy({"tool_calls": [other, good]}) == 0.0
    assert legacy({"tool_calls": []}) == REFUSED  # "No tool called"
    assert legacy({"function": {"name": "q", "arguments": "{not json"}}) == REFUSED


def test_json_arguments_read_as_json_loads_does() -> None:
    # NaN is valid for json.loads (and never equal to itself)
    text = json.dumps(ARGS).replace('"value": 20', '"value": NaN')
    assert legacy({"function": {"arguments": text}}) == WRONG_FILTER


# --- search text: the two versions of the original -------------------------------------------


@pytest.mark.parametrize(
    ("pred", "gold", "presence", "exact"),
    [
        ("pizza", "pizza", True, True),
        ("PIZZA", "pizza", True, True),
        ("pizza ", "pizza", True, False),
        ("STRASSE", "straße", True, False),  # .lower(), not casefold()
        ("pasta", "pizza", True, False),
        (" ", "pizza", True, False),
        ("", "pizza", False, False),
        (None, "pizza", False, False),
        ("pizza", None, False, False),
        ("", None, False, False),
        (None, "", False, False),
        ("", "", False, False),
        (None, None, True, True),
        (MISSING, None, True, True),
    ],
)
def test_search_text_in_both_versions(pred: Any, gold: Any, presence: bool, exact: bool) -> None:
    p = with_(ARGS, "search_query", pred)
    g = with_(GOLD, "search_query", gold)
    assert legacy(p, g) == gorilla_sum(search=presence)
    assert legacy(p, g, search="presence") == gorilla_sum(search=presence)
    assert legacy(p, g, search="exact") == gorilla_sum(search=exact)


# --- the query structure (target_collection): load_queries' rule, for golds and predictions --


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, 1.0),  # absent on both sides
        ({}, 1.0),  # falsy: absent
        ("", 1.0),
        ([], 1.0),
        (0, 1.0),
        (MISSING, 1.0),
        ({"property_name": "open", "operator": "=", "value": True}, 1.0),  # one-sided
        ({"property_name": "open", "operator": "=", "value": "maybe"}, REFUSED),
        ("x", REFUSED),  # truthy, not an object
    ],
)
def test_structure_slots_falsy_are_absent(value: Any, expected: Any) -> None:
    pred = with_(GOLD, "boolean_property_filter", value)
    assert legacy(pred) == expected
    # a gold read the same way: the prediction (GOLD) has no boolean filter
    if expected == REFUSED:
        with pytest.raises(RefusedByOriginalError):
            legacy_queries(pred, prediction=False)
    else:
        assert legacy(GOLD, pred) == 1.0


def test_a_gold_the_original_cannot_read_is_read_as_queryeval_reads_it() -> None:
    two = [PRICE_LT_20, {"property_name": "price", "operator": ">", "value": 5}]
    gold = with_(GOLD, "integer_property_filter", two)
    # a list in a slot: refused in a prediction (scored 0 by the original) ...
    assert legacy(gold, GOLD) == REFUSED
    # ... but a gold (never the original's input) is read, and compared as a whole
    assert legacy(ARGS, gold) == WRONG_FILTER
    assert legacy_queries(with_(GOLD, "integer_property_filter.operator", "=="), prediction=False)
    with pytest.raises(RefusedByOriginalError):  # neither reads it: the original's message
        legacy_queries(with_(GOLD, "integer_property_filter.operator", "~"), prediction=False)


def test_structure_reads_search_and_groupby_with_get() -> None:
    bare = {"target_collection": "Menus"}
    gold = with_(with_(GOLD, "search_query", None), "groupby_property", None)
    gold = {k: v for k, v in gold.items() if "aggregation" not in k and "filter" not in k}
    assert legacy(bare, gold) == 1.0
    with pytest.raises(RefusedByOriginalError, match="target_collection"):
        legacy_queries({"target_collection": None}, prediction=False)


def test_gold_refusals_name_the_place() -> None:
    bad = with_(GOLD, "integer_property_filter.operator", "between")
    with pytest.raises(RefusedByOriginalError) as err:
        weaviate_ast(ARGS, bad, mode="legacy")
    assert err.value.where == "integer_property_filter.operator"


def test_published_prediction_shape_reads_unchanged() -> None:
    # the published results store the validated query: every key, null where absent
    published = {**GOLD, "search_query": "pizza place"}
    assert legacy(published, {**GOLD, "database_schema": {"weaviate_collections": []}}) == 1.0
    assert legacy(published, GOLD, search="exact") == NO_SEARCH


# --- scoring rules beyond reading ------------------------------------------------------------


def test_one_sided_slots_are_not_counted_and_a_component_of_only_those_adds_nothing() -> None:
    gold = {
        "target_collection": "Menus",
        "integer_property_filter": PRICE_LT_20,
        "text_property_filter": {"property_name": "city", "operator": "=", "value": "Rome"},
        "boolean_property_filter": {"property_name": "open", "operator": "=", "value": True},
    }
    result = weaviate_ast({"collection_name": "Menus"}, gold, mode="legacy")
    assert result.score == gorilla_sum(filters=(0, 0))
    assert result.components["filters"].status == "not_counted"
    slots = {s.slot: s for s in result.components["filters"].slots}
    assert slots["integer_property_filter"].status == "missing"
    assert slots["integer_property_filter"].counted is False


def test_collection_mismatch_skips_the_rest() -> None:
    result = weaviate_ast({**ARGS, "collection_name": "Hotels"}, GOLD, mode="legacy")
    assert result.score == 0.0
    assert result.components["collection"].status == "wrong"
    assert result.components["filters"].status == "skipped"


def test_earliest_version_equal_weights_without_collection_gate() -> None:
    weights = dict.fromkeys(("collection", "search", "filters", "aggregations", "groupby"), 0.2)
    pred = {**ARGS, "collection_name": "Hotels"}
    score = legacy(pred, GOLD, weights=weights, collection_gate=False, search="exact")
    assert score == pytest.approx(0.8)


def test_default_only_options_are_refused_in_legacy_mode() -> None:
    with pytest.raises(ValueError, match="partial_credit"):
        weaviate_ast(ARGS, GOLD, mode="legacy", partial_credit=True)
    with pytest.raises(ValueError, match="semantic"):
        weaviate_ast(ARGS, GOLD, mode="legacy", search="semantic")


def test_python_code_is_read_as_queryeval_reads_it() -> None:
    code = (
        'client.collections.get("Menus").query.near_text(query="pizza", '
        'filters=Filter.by_property("price").less_than(20))'
    )
    gold = {
        "target_collection": "Menus",
        "search_query": "pizza",
        "integer_property_filter": PRICE_LT_20,
    }
    assert legacy(code, gold) == 1.0


# --- cross-check against an independent transcription of the original on random queries -----

FILTER_SLOTS = ("integer_property_filter", "text_property_filter", "boolean_property_filter")
AGG_SLOTS = (
    "integer_property_aggregation",
    "text_property_aggregation",
    "boolean_property_aggregation",
)


def original_score(pred: dict[str, Any], gold: dict[str, Any], search: str) -> float:
    """abstract_syntax_tree_match_score written out again over already valid dicts."""
    if pred["target_collection"] != gold["target_collection"]:
        return 0.0
    score = 0.0 + 0.4
    ps, gs = pred.get("search_query"), gold.get("search_query")
    if ps and gs:
        if search == "presence" or ps.lower() == gs.lower():
            score += 0.15
    elif ps is None and gs is None:
        score += 0.15
    for slots, fields in (
        (FILTER_SLOTS, ("property_name", "operator", "value")),
        (AGG_SLOTS, ("property_name", "metrics")),
    ):
        hits = 0.0
        count = 0
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
            score += 0.15 * (hits / count)
    if pred.get("groupby_property") == gold.get("groupby_property"):
        score += 0.15
    return score


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


int_filter = st.fixed_dictionaries(
    {
        "property_name": st.sampled_from(["price", "rating", ""]),
        "operator": st.sampled_from(["<", ">=", "="]),
        "value": st.sampled_from([3, 4, 20, 20.0, 4.5]),
    }
)
text_filter = st.fixed_dictionaries(
    {
        "property_name": st.sampled_from(["city", "cuisine"]),
        "operator": st.sampled_from(["=", "LIKE"]),
        "value": st.sampled_from(["Rome", "rome", ""]),
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
        "top_occurrences_limit": st.sampled_from([None, 0, 3, 5]),
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
        "target_collection": st.sampled_from(["Restaurants", "Restaurants", "Hotels", ""]),
        "search_query": st.sampled_from([None, "", " ", "italian", "Italian", "pizza"]),
        "integer_property_filter": _maybe(int_filter),
        "text_property_filter": _maybe(text_filter),
        "boolean_property_filter": _maybe(bool_filter),
        "integer_property_aggregation": _maybe(int_agg),
        "text_property_aggregation": _maybe(text_agg),
        "boolean_property_aggregation": _maybe(bool_agg),
        "groupby_property": st.sampled_from([None, "", "city", "cuisine"]),
    }
)


@settings(max_examples=400, deadline=None)
@given(pred=queries, gold=queries, search=st.sampled_from(["presence", "exact"]))
def test_legacy_equals_the_original_on_random_queries(
    pred: dict[str, Any], gold: dict[str, Any], search: str
) -> None:
    expected = original_score(pred, gold, search)
    assert weaviate_ast(pred, gold, mode="legacy", search=search).score == expected
