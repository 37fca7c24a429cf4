"""Reading Weaviate queries: Gorilla JSON, OpenAI tool calls, JSON text, Python client code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from queryeval.metrics import WeaviateQuery, parse_query
from queryeval.metrics.weaviate import (
    Aggregation,
    Condition,
    UnknownMetricError,
    UnknownOperatorError,
    WeaviateQueryError,
    parse_queries,
    parse_schema,
)

GOLD = {
    "target_collection": "Restaurants",
    "search_query": "cozy italian",
    "integer_property_filter": {"property_name": "price", "operator": "<", "value": 20},
    "text_property_filter": None,
    "boolean_property_filter": {"property_name": "open_now", "operator": "=", "value": True},
    "integer_property_aggregation": {"property_name": "rating", "metrics": "MEAN"},
    "text_property_aggregation": {
        "property_name": "cuisine",
        "metrics": "TOP_OCCURRENCES",
        "top_occurrences_limit": 3,
    },
    "boolean_property_aggregation": None,
    "groupby_property": "city",
    "corresponding_natural_language_query": "...",
}


def test_gorilla_structure_is_read_slot_by_slot() -> None:
    q = parse_query(GOLD)
    assert q.collection == "Restaurants"
    assert q.search_query == "cozy italian"
    assert q.filters == (
        (Condition("price", "<", 20),),
        None,
        (Condition("open_now", "=", True),),
    )
    assert q.aggregations == (
        (Aggregation("rating", ("MEAN",)),),
        (Aggregation("cuisine", ("TOP_OCCURRENCES",), 3),),
        None,
    )
    assert q.groupby == "city"
    assert q.ignored_keys == ()


def test_to_dict_round_trips() -> None:
    q = parse_query(GOLD)
    assert parse_query(q.to_dict()) == q


def test_openai_tool_calls_with_string_arguments_and_collection_name_alias() -> None:
    args = {"collection_name": "Restaurants", "search_query": "pizza"}
    message = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "1",
                "type": "function",
                "function": {"name": "query_database", "arguments": json.dumps(args)},
            },
            {
                "id": "2",
                "type": "function",
                "function": {"name": "query_database", "arguments": {"collection_name": "Hotels"}},
            },
        ],
    }
    queries = parse_queries(message)
    assert [q.collection for q in queries] == ["Restaurants", "Hotels"]
    assert queries[0].search_query == "pizza"
    # a bare list of tool calls and the Gorilla ToolCall shape work too
    assert parse_queries(message["tool_calls"]) == queries
    assert parse_query({"function_name": "q", "arguments": args}).collection == "Restaurants"


def test_json_text_in_a_code_fence() -> None:
    text = "```json\n" + json.dumps(GOLD) + "\n```"
    assert parse_query(text) == parse_query(GOLD)


def test_several_conditions_in_a_slot_and_operator_spellings() -> None:
    q = parse_query(
        {
            "target_collection": "Hotels",
            "integer_property_filter": [
                {"property_name": "stars", "operator": "GreaterThanEqual", "value": "4"},
                {"property_name": "price", "operator": "lt", "value": 150.5},
            ],
            "text_property_filter": {"property_name": "city", "operator": "like", "value": 7},
            "boolean_property_filter": {"property_name": "pool", "operator": "==", "value": "true"},
        }
    )
    assert q.filters[0] == (Condition("stars", ">=", 4), Condition("price", "<", 150.5))
    assert q.filters[1] == (Condition("city", "LIKE", "7"),)
    assert q.filters[2] == (Condition("pool", "=", True),)


def test_metric_aliases_and_lists() -> None:
    q = parse_query(
        {
            "target_collection": "Hotels",
            "integer_property_aggregation": {
                "property_name": "price",
                "metrics": ["maximum", "AVG"],
            },
        }
    )
    assert q.aggregations[0] == (Aggregation("price", ("MAX", "MEAN")),)


def test_unknown_operator_is_named_with_its_place() -> None:
    bad = {
        "target_collection": "X",
        "text_property_filter": {"property_name": "a", "operator": ">", "value": "b"},
    }
    with pytest.raises(UnknownOperatorError) as info:
        parse_query(bad)
    assert "'>'" in str(info.value)
    assert "text filter" in str(info.value)
    assert info.value.where == "text_property_filter.operator"
    with pytest.raises(UnknownOperatorError, match="'~~'"):
        parse_query(
            {
                "target_collection": "X",
                "integer_property_filter": {"property_name": "a", "operator": "~~", "value": 1},
            }
        )


def test_unknown_metric_is_named() -> None:
    with pytest.raises(UnknownMetricError, match="'TOTAL_TRUE'"):
        parse_query(
            {
                "target_collection": "X",
                "integer_property_aggregation": {"property_name": "a", "metrics": "TOTAL_TRUE"},
            }
        )


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ("{not json", "not valid JSON"),
        ({"question": "hi"}, "not a Weaviate query"),
        ({"target_collection": ""}, "target_collection"),
        ({"target_collection": "X", "search_query": 3}, "search_query must be a string"),
        (
            {
                "target_collection": "X",
                "integer_property_filter": {
                    "property_name": "p",
                    "operator": "<",
                    "value": "cheap",
                },
            },
            "expected a number",
        ),
        (
            {
                "target_collection": "X",
                "boolean_property_filter": {
                    "property_name": "p",
                    "operator": "=",
                    "value": "maybe",
                },
            },
            "expected true or false",
        ),
        (
            {"tool_calls": [{"function": {"name": "q", "arguments": "{oops"}}]},
            "arguments are not valid JSON",
        ),
        ("SELECT * FROM restaurants", "neither JSON nor Python"),
        ("print('hello')", "no collection.query"),
        ([], "no query"),
    ],
)
def test_bad_input_raises_a_named_error(obj: object, message: str) -> None:
    with pytest.raises(WeaviateQueryError, match=message):
        parse_queries(obj)


PY_QUERY = """
import weaviate
from weaviate.classes.query import Filter, Metrics, GroupByAggregate

client = weaviate.connect_to_local()
restaurants = client.collections.get("Restaurants")
cheap = Filter.by_property("price").less_than(20)
response = restaurants.query.near_text(
    query="cozy italian",
    filters=Filter.all_of([cheap, Filter.by_property("open_now").equal(True)]),
    limit=5,
)
stats = client.collections.get("Restaurants").aggregate.over_all(
    group_by=GroupByAggregate(prop="city"),
    return_metrics=[
        Metrics("rating").integer(mean=True, maximum=True),
        Metrics("cuisine").text(top_occurrences_value=True, limit=3),
    ],
)
"""


def test_python_client_code_is_read_without_running_it() -> None:
    q1, q2 = parse_queries(PY_QUERY)
    assert q1 == WeaviateQuery(
        "Restaurants",
        "cozy italian",
        ((Condition("price", "<", 20),), None, (Condition("open_now", "=", True),)),
    )
    assert q2.collection == "Restaurants"
    assert q2.search_query is None
    assert q2.groupby == "city"
    assert q2.aggregations == (
        (Aggregation("rating", ("MAX", "MEAN")),),
        (Aggregation("cuisine", ("TOP_OCCURRENCES",), 3),),
        None,
    )


def test_python_filters_with_ampersand_and_schema_types() -> None:
    code = (
        'client.collections.get("Hotels").query.bm25("spa", filters='
        'Filter.by_property("stars").greater_or_equal(4) & '
        'Filter.by_property("city").like("Par*") & Filter.by_property("zip").equal("75001"))'
    )
    q = parse_query(code)
    assert q.search_query == "spa"
    assert q.filters == (
        (Condition("stars", ">=", 4),),
        (Condition("city", "LIKE", "Par*"), Condition("zip", "=", "75001")),
        None,
    )
    # with a schema that says zip is an int, the value is read as a number
    schema = {"Hotels": {"stars": "int", "city": "text", "zip": "int"}}
    typed = parse_query(code, schema=parse_schema(schema))
    assert typed.filters[0] == (Condition("stars", ">=", 4), Condition("zip", "=", 75001))


def test_python_code_with_side_effects_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    code = (
        f"open({str(marker)!r}, 'w').write('x')\n"
        'client.collections.get("A").query.fetch_objects()'
    )
    assert parse_query(code).collection == "A"
    assert not marker.exists()


@pytest.mark.parametrize(
    ("code", "error", "message"),
    [
        (
            'client.collections.get("A").query.fetch_objects(filters='
            'Filter.by_property("a").contains_any(["x"]))',
            UnknownOperatorError,
            "contains_any",
        ),
        (
            'client.collections.get("A").aggregate.over_all(return_metrics='
            'Metrics("a").integer(variance=True))',
            UnknownMetricError,
            "variance",
        ),
        (
            'client.collections.get("A").query.fetch_objects(filters='
            'Filter.any_of([Filter.by_property("a").equal(1), Filter.by_property("b").equal(2)]))',
            WeaviateQueryError,
            "OR filters",
        ),
        (
            'client.collections.get("A").query.near_text(query=make_query())',
            WeaviateQueryError,
            "without running the code",
        ),
        ('client.collections.get("A").query.explode()', WeaviateQueryError, "unknown query method"),
        (
            "def search(coll):\n    return coll.query.near_text(query='x')",
            WeaviateQueryError,
            "cannot tell the collection of coll.query.near_text",
        ),
        (
            'client.collections.get("A").query.near_text(query="x"',
            WeaviateQueryError,
            "neither JSON nor Python",
        ),
    ],
)
def test_python_code_errors_are_named(code: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        parse_queries(code)


def test_schema_forms_agree() -> None:
    flat = parse_schema({"Hotels": {"stars": "int", "name": "text"}})
    listed = parse_schema(
        {
            "Hotels": [
                {"name": "stars", "data_type": ["int"]},
                {"name": "name", "data_type": ["text"]},
            ]
        }
    )
    gorilla = parse_schema(
        {
            "weaviate_collections": [
                {
                    "name": "Hotels",
                    "properties": [
                        {"name": "stars", "data_type": ["int"]},
                        {"name": "name", "data_type": ["text"]},
                    ],
                }
            ]
        }
    )
    native = parse_schema(
        {
            "classes": [
                {
                    "class": "Hotels",
                    "properties": [
                        {"name": "stars", "dataType": ["int"]},
                        {"name": "name", "dataType": ["text"]},
                    ],
                }
            ]
        }
    )
    assert flat == listed == gorilla == native
    assert flat.data_type("Hotels", "stars") == "int"
    assert flat.data_type("Hotels", "nope") is None
    with pytest.raises(WeaviateQueryError, match="data type"):
        parse_schema({"Hotels": {"stars": 3}})
