"""Read Weaviate queries from what systems produce: the Gorilla JSON structure, OpenAI-style
tool calls (one or several; arguments as an object or a JSON string), JSON text, or Python
weaviate-client v4 code (parsed with `ast`, never executed). Also reads collection schemas.

Every problem raises `WeaviateQueryError` (or a named subclass) saying where it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from queryeval.metrics.weaviate._model import (
    AGGREGATION_KEYS,
    FAMILIES,
    FILTER_KEYS,
    METRIC_ALIASES,
    METRICS,
    OPERATOR_ALIASES,
    OPERATORS,
    Aggregation,
    Condition,
    Slot,
    UnknownMetricError,
    UnknownOperatorError,
    WeaviateQuery,
    WeaviateQueryError,
    WeaviateSchema,
)

_COLLECTION_KEYS = ("target_collection", "collection_name", "collection")
# Keys of the Gorilla records and tool arguments that carry nothing to score.
_NEUTRAL_KEYS = frozenset(
    {
        "corresponding_natural_language_query",
        "limit",
        "database_schema",
        "return_properties",
        "tool_rationale",
        "id",
    }
)
_KNOWN_KEYS = frozenset(
    {*_COLLECTION_KEYS, "search_query", *FILTER_KEYS, *AGGREGATION_KEYS, "groupby_property"}
    | _NEUTRAL_KEYS
)
_FENCE = re.compile(r"^\s*```[\w+-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)


def parse_queries(obj: Any, *, schema: WeaviateSchema | None = None) -> tuple[WeaviateQuery, ...]:
    """Every query in `obj` (a query dict, tool call(s), a list of them, JSON or Python text).

    A prediction of several tool calls gives several queries (cross-collection questions).

    >>> code = '''
    ... books = client.collections.get("Books")
    ... books.query.bm25(query="dune", limit=3)
    ... client.collections.get("Films").aggregate.over_all(total_count=True)
    ... '''
    >>> [q.collection for q in parse_queries(code)]
    ['Books', 'Films']
    """
    return tuple(_queries(obj, "", schema))


def parse_query(obj: Any, *, schema: WeaviateSchema | None = None) -> WeaviateQuery:
    """Exactly one query from `obj` (several -> WeaviateQueryError).

    >>> q = parse_query('{"target_collection": "Books", "groupby_property": "genre"}')
    >>> q.collection, q.groupby
    ('Books', 'genre')
    """
    queries = parse_queries(obj, schema=schema)
    if len(queries) != 1:
        raise WeaviateQueryError(f"expected one query, found {len(queries)}")
    return queries[0]


def _queries(obj: Any, where: str, schema: WeaviateSchema | None) -> list[WeaviateQuery]:
    if isinstance(obj, WeaviateQuery):
        return [obj]
    if isinstance(obj, dict):  # the usual case, before the slower abstract-type checks
        return _from_mapping(obj, where, schema)
    if isinstance(obj, bytes | str):
        return _from_text(obj.decode() if isinstance(obj, bytes) else obj, where, schema)
    if isinstance(obj, Sequence):
        if not obj:
            raise WeaviateQueryError("no query (empty list)", where)
        out: list[WeaviateQuery] = []
        for i, item in enumerate(obj):
            out.extend(_queries(item, f"{where}[{i}]", schema))
        return out
    if not isinstance(obj, Mapping):
        raise WeaviateQueryError(
            f"expected a query object, tool call(s) or query text, got {type(obj).__name__}",
            where,
        )
    return _from_mapping(obj, where, schema)


def _from_mapping(d: Mapping[str, Any], where: str, schema: WeaviateSchema | None) -> list[Any]:
    if "target_collection" in d or "collection_name" in d or "collection" in d:
        return [query_from_dict(d, where)]
    if "tool_calls" in d:
        calls = d["tool_calls"]
        if not calls:
            raise WeaviateQueryError("no tool call", _join(where, "tool_calls"))
        return _queries(calls, _join(where, "tool_calls"), schema)
    if isinstance(d.get("function"), Mapping):
        return _from_arguments(d["function"].get("arguments"), _join(where, "function"), schema)
    if "arguments" in d:
        return _from_arguments(d["arguments"], where, schema)
    for key in ("weaviate_query", "query"):
        if key in d and len(d) == 1:
            return _queries(d[key], _join(where, key), schema)
    keys = ", ".join(sorted(map(str, d))) or "none"
    raise WeaviateQueryError(
        f"not a Weaviate query: expected target_collection (or collection_name), tool_calls "
        f"or function arguments; found keys {keys}",
        where,
    )


def _from_arguments(args: Any, where: str, schema: WeaviateSchema | None) -> list[Any]:
    where = _join(where, "arguments")
    if isinstance(args, str | bytes):
        try:
            args = orjson.loads(args)
        except orjson.JSONDecodeError as exc:
            raise WeaviateQueryError(
                f"tool-call arguments are not valid JSON ({exc})", where
            ) from None
    if not isinstance(args, Mapping):
        raise WeaviateQueryError("tool-call arguments must be an object", where)
    return [query_from_dict(args, where)]


def _from_text(text: str, where: str, schema: WeaviateSchema | None) -> list[WeaviateQuery]:
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    stripped = text.strip()
    if not stripped:
        raise WeaviateQueryError("empty query text", where)
    if stripped[0] in "{[":
        try:
            data = orjson.loads(stripped)
        except orjson.JSONDecodeError as exc:
            raise WeaviateQueryError(f"not valid JSON ({exc})", where) from None
        return _queries(data, where, schema)
    from queryeval.metrics.weaviate._pycode import python_queries

    return [
        query_from_dict(d, f"{where}python call {i + 1}" if where else f"python call {i + 1}")
        for i, d in enumerate(python_queries(stripped, schema))
    ]


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def query_from_dict(d: Mapping[str, Any], where: str = "") -> WeaviateQuery:
    """A query from the Gorilla structure (`collection_name` accepted for the collection)."""
    collection = d.get("target_collection")
    if collection is None:
        collection = d.get("collection_name", d.get("collection"))
    if not isinstance(collection, str) or not collection.strip():
        raise WeaviateQueryError("target_collection must be a non-empty string", where)
    search = d.get("search_query")
    if search is not None and not isinstance(search, str):
        raise WeaviateQueryError(
            f"search_query must be a string, got {type(search).__name__}",
            _join(where, "search_query"),
        )
    filters = tuple(
        None if (raw := d.get(key)) is None else _slot(raw, family, _join(where, key), _condition)
        for key, family in zip(FILTER_KEYS, FAMILIES, strict=True)
    )
    aggregations = tuple(
        None if (raw := d.get(key)) is None else _slot(raw, family, _join(where, key), _aggregation)
        for key, family in zip(AGGREGATION_KEYS, FAMILIES, strict=True)
    )
    groupby = d.get("groupby_property")
    if isinstance(groupby, Mapping):
        groupby = groupby.get("property_name")
    if groupby is not None and not isinstance(groupby, str):
        raise WeaviateQueryError(
            "groupby_property must be a property name", _join(where, "groupby_property")
        )
    ignored = tuple(sorted(str(k) for k in d if k not in _KNOWN_KEYS))
    return WeaviateQuery(
        collection=collection,
        search_query=search,
        filters=filters,  # type: ignore[arg-type]
        aggregations=aggregations,  # type: ignore[arg-type]
        groupby=groupby,
        ignored_keys=ignored,
    )


def _slot(raw: Any, family: str, where: str, item: Any) -> Slot:
    if raw is None:
        return None
    if isinstance(raw, Mapping):
        return () if not raw else (item(raw, family, where),)
    if isinstance(raw, list | tuple):
        return tuple(item(x, family, f"{where}[{i}]") for i, x in enumerate(raw))
    raise WeaviateQueryError(f"expected an object or a list of objects, got {raw!r}", where)


def _property(d: Any, where: str) -> str:
    if not isinstance(d, Mapping):
        raise WeaviateQueryError(f"expected an object, got {d!r}", where)
    prop = d.get("property_name")
    if not isinstance(prop, str) or not prop:
        raise WeaviateQueryError("property_name must be a non-empty string", where)
    return prop


def canonical_operator(op: Any, family: str, where: str = "") -> str:
    """The seed's symbol for an operator spelling; unknown or off-family -> UnknownOperatorError."""
    if not isinstance(op, str):
        raise UnknownOperatorError(f"operator must be a string, got {op!r}", where)
    symbol = OPERATOR_ALIASES.get(op.strip().lower().replace(" ", ""))
    allowed = OPERATORS[family]
    if symbol is None or symbol not in allowed:
        expected = ", ".join(sorted(allowed))
        raise UnknownOperatorError(
            f"unknown {family} filter operator {op!r}; expected one of {expected}", where
        )
    return symbol


def _condition(d: Any, family: str, where: str) -> Condition:
    prop = _property(d, where)
    op = canonical_operator(d.get("operator"), family, _join(where, "operator"))
    if "value" not in d:
        raise WeaviateQueryError("missing value", where)
    return Condition(prop, op, coerce_value(d["value"], family, _join(where, "value")))


def coerce_value(value: Any, family: str, where: str = "") -> Any:
    """A filter value in its family's type: numbers for integer, bool for boolean, str for text."""
    if family == "integer":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                pass
            else:
                return int(number) if number.is_integer() and "." not in value else number
        raise WeaviateQueryError(f"expected a number, got {value!r}", where)
    if family == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise WeaviateQueryError(f"expected true or false, got {value!r}", where)
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise WeaviateQueryError(f"expected a text value, got {value!r}", where)


def canonical_metric(metric: Any, family: str, where: str = "") -> str:
    """The seed's name of an aggregation metric; unknown or off-family -> UnknownMetricError."""
    if not isinstance(metric, str):
        raise UnknownMetricError(f"metric must be a string, got {metric!r}", where)
    name = metric.strip().upper().replace(" ", "_")
    name = METRIC_ALIASES.get(name, name)
    allowed = METRICS[family]
    if name not in allowed:
        raise UnknownMetricError(
            f"unknown {family} aggregation metric {metric!r}; expected one of "
            f"{', '.join(sorted(allowed))}",
            where,
        )
    return name


def _aggregation(d: Any, family: str, where: str) -> Aggregation:
    prop = _property(d, where)
    raw = d.get("metrics")
    if raw is None:
        raise WeaviateQueryError("missing metrics", where)
    items = raw if isinstance(raw, list | tuple) else [raw]
    if not items:
        raise WeaviateQueryError("metrics is empty", _join(where, "metrics"))
    metrics = tuple(sorted({canonical_metric(m, family, f"{where}.metrics") for m in items}))
    limit = d.get("top_occurrences_limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise WeaviateQueryError(
            f"top_occurrences_limit must be a positive integer, got {limit!r}",
            _join(where, "top_occurrences_limit"),
        )
    return Aggregation(prop, metrics, limit)


# --- schemas ------------------------------------------------------------------------------


def parse_schema(obj: Any) -> WeaviateSchema:
    """A schema from any of: {collection: {property: data_type}}, {collection: [{name,
    data_type}]}, Gorilla's {"weaviate_collections": [...]}, Weaviate's {"classes": [...]},
    or a list of collection objects ({name|class, properties: [{name, data_type|dataType}]}).

    >>> parse_schema({"Books": {"title": "text", "year": "int"}}).data_type("Books", "year")
    'int'
    """
    if isinstance(obj, WeaviateSchema):
        return obj
    if isinstance(obj, Mapping):
        for key in ("weaviate_collections", "classes", "collections"):
            if key in obj and isinstance(obj[key], list):
                return parse_schema(obj[key])
        return WeaviateSchema(
            {str(name): _properties(props, str(name)) for name, props in obj.items()}
        )
    if isinstance(obj, list):
        out: dict[str, dict[str, str]] = {}
        for i, coll in enumerate(obj):
            if not isinstance(coll, Mapping):
                raise WeaviateQueryError("expected a collection object", f"schema[{i}]")
            name = coll.get("name", coll.get("class"))
            if not isinstance(name, str):
                raise WeaviateQueryError("a collection needs a name", f"schema[{i}]")
            out[name] = _properties(coll.get("properties", []), name)
        return WeaviateSchema(out)
    raise WeaviateQueryError(
        f"expected a schema mapping or list, got {type(obj).__name__}", "schema"
    )


def _properties(props: Any, collection: str) -> dict[str, str]:
    where = f"schema.{collection}"
    if isinstance(props, Mapping) and "properties" in props:
        props = props["properties"]
    if isinstance(props, Mapping):
        return {str(k): _data_type(v, f"{where}.{k}") for k, v in props.items()}
    if isinstance(props, list):
        out: dict[str, str] = {}
        for i, p in enumerate(props):
            if not isinstance(p, Mapping) or not isinstance(p.get("name"), str):
                raise WeaviateQueryError("expected {name, data_type}", f"{where}[{i}]")
            out[p["name"]] = _data_type(
                p.get("data_type", p.get("dataType", p.get("type"))), f"{where}[{i}]"
            )
        return out
    raise WeaviateQueryError("expected the collection's properties", where)


def _data_type(value: Any, where: str) -> str:
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, str) or not value:
        raise WeaviateQueryError(f"expected a data type name, got {value!r}", where)
    return value.strip().lower()


def family_of(data_type: str | None) -> str | None:
    """The filter family of a Weaviate data type (int/number -> integer, text -> text ...)."""
    if data_type is None:
        return None
    base = data_type.removesuffix("[]")
    if base in ("int", "number", "float"):
        return "integer"
    if base in ("text", "string", "uuid"):
        return "text"
    if base in ("boolean", "bool"):
        return "boolean"
    return None
