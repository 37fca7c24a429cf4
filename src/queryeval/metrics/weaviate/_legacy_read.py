"""How weaviate-gorilla read a query, for legacy mode: what it accepts, how it coerces, and
what it refuses (a refused prediction scored 0 there).

The original validates a query with pydantic models; the models here declare the same field
types (``value: int | float``, ``operator: Literal[...]``, ``metrics: Literal[...]`` - one
metric, ``top_occurrences_limit: Optional[int]``, extra keys ignored), so pydantic coerces and
refuses exactly what it did there: ``"20"`` -> 20, ``"yes"`` -> True, ``top_occurrences_limit:
0`` accepted, ``"=="`` or ``"mean"`` refused, an empty property name accepted.

Two readers, as in the original:

- **tool-call arguments** (``collection_name`` ...), the experiment script's rule
  (``test-main.py``): ``collection_name`` is required; a filter/aggregation key that is present
  must hold a valid object - ``null``, ``{}``, a string or a list is refused; search text and
  group-by are read with ``.get``. Of several tool calls only the first is read.
- **the Gorilla structure** (``target_collection`` ...), the query file's rule
  (``load_queries``): a filter/aggregation that is falsy (``null``, ``{}``, ``""``, ``[]``,
  missing) is absent, any other value must be a valid object. Golds are read this way, and so
  are predictions in this form (the published results' ``predicted_query``).

Reading is done with the standard library's ``json`` (as the original did: it accepts ``NaN``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from queryeval.metrics.weaviate._model import (
    AGGREGATION_KEYS,
    FILTER_KEYS,
    Aggregation,
    Condition,
    WeaviateQuery,
    WeaviateQueryError,
    WeaviateSchema,
)

# --- the original's field types (weaviate-gorilla src/models.py), written out again -------


class _IntFilter(BaseModel):
    property_name: str
    operator: Literal["=", "<", ">", "<=", ">="]
    value: int | float


class _TextFilter(BaseModel):
    property_name: str
    operator: Literal["=", "LIKE"]
    value: str


class _BooleanFilter(BaseModel):
    property_name: str
    operator: Literal["=", "!="]
    value: bool


class _IntAggregation(BaseModel):
    property_name: str
    metrics: Literal["COUNT", "TYPE", "MIN", "MAX", "MEAN", "MEDIAN", "MODE", "SUM"]


class _TextAggregation(BaseModel):
    property_name: str
    metrics: Literal["COUNT", "TYPE", "TOP_OCCURRENCES"]
    top_occurrences_limit: int | None = None


class _BooleanAggregation(BaseModel):
    property_name: str
    metrics: Literal[
        "COUNT", "TYPE", "TOTAL_TRUE", "TOTAL_FALSE", "PERCENTAGE_TRUE", "PERCENTAGE_FALSE"
    ]


class _Query(BaseModel):
    target_collection: str
    search_query: str | None
    groupby_property: str | None


_FILTER_MODELS: tuple[type[BaseModel], ...] = (_IntFilter, _TextFilter, _BooleanFilter)
_AGGREGATION_MODELS: tuple[type[BaseModel], ...] = (
    _IntAggregation,
    _TextAggregation,
    _BooleanAggregation,
)
_KNOWN = frozenset(
    {
        "target_collection",
        "collection_name",
        "search_query",
        "groupby_property",
        *FILTER_KEYS,
        *AGGREGATION_KEYS,
    }
)
_FENCE = re.compile(r"^\s*```[\w+-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)


class RefusedByOriginalError(WeaviateQueryError):
    """A query weaviate-gorilla would not have read (its experiment scored such a
    prediction 0; a gold like it stopped the original's run)."""


def legacy_queries(
    obj: Any, *, prediction: bool = True, schema: WeaviateSchema | None = None
) -> tuple[WeaviateQuery, ...]:
    """The queries in `obj` read the way weaviate-gorilla read them (see the module text);
    anything it refuses raises RefusedByOriginalError naming the place.

    For a prediction, tool calls (a message with `tool_calls`, a list of calls, one call)
    give their first call's arguments only, as the original's experiment did. Inputs the
    original never saw are read as queryeval reads them (Python client code; a list of query
    objects, i.e. several queries for cross-collection questions), each query then checked
    with the original's rules.

    >>> q = legacy_queries({"collection_name": "Menus", "integer_property_filter":
    ...     {"property_name": "price", "operator": "<", "value": "20"}})[0]
    >>> q.filters[0]
    (Condition(property='price', operator='<', value=20),)
    >>> legacy_queries({"collection_name": "Menus", "search_query": 5})
    Traceback (most recent call last):
    ...
    queryeval.metrics.weaviate._legacy_read.RefusedByOriginalError: search_query: Input should be a valid string

    A gold the original cannot read (several conditions in a slot, an operator alias) is
    read as queryeval reads it, since it never was the original's input; a gold neither reads
    raises the original's refusal.
    """  # noqa: E501
    if prediction:
        return tuple(_read(obj, "", prediction, schema))
    try:
        return tuple(_read(obj, "", prediction, schema))
    except RefusedByOriginalError as refusal:
        from queryeval.metrics.weaviate._parse import parse_queries

        try:
            return parse_queries(obj, schema=schema)
        except WeaviateQueryError:
            raise refusal from None


def _read(obj: Any, where: str, prediction: bool, schema: WeaviateSchema | None) -> list[Any]:
    if isinstance(obj, WeaviateQuery):
        return [obj]
    if isinstance(obj, bytes | str):
        return _from_text(
            obj.decode() if isinstance(obj, bytes) else obj, where, prediction, schema
        )
    if isinstance(obj, Mapping):
        return _from_mapping(obj, where, prediction, schema)
    if isinstance(obj, Sequence):
        if not obj:
            raise RefusedByOriginalError("no query (empty list)", where)
        if prediction and all(_is_call(x) for x in obj):
            return _from_call(obj[0], f"{where}[0]")
        out: list[WeaviateQuery] = []
        for i, item in enumerate(obj):
            out.extend(_read(item, f"{where}[{i}]", prediction, schema))
        return out
    raise RefusedByOriginalError(f"expected a query, got {type(obj).__name__}", where)


def _is_call(x: Any) -> bool:
    return isinstance(x, Mapping) and (
        isinstance(x.get("function"), Mapping) or ("arguments" in x and "collection_name" not in x)
    )


def _from_text(
    text: str, where: str, prediction: bool, schema: WeaviateSchema | None
) -> list[WeaviateQuery]:
    fenced = _FENCE.match(text)
    stripped = (fenced.group(1) if fenced else text).strip()
    if not stripped:
        raise RefusedByOriginalError("empty query text", where)
    if stripped[0] in "{[":
        try:
            data = json.loads(stripped)
        except ValueError as exc:
            raise RefusedByOriginalError(f"not valid JSON ({exc})", where) from None
        return _read(data, where, prediction, schema)
    # Python client code: not an input of the original; read as queryeval reads it
    from queryeval.metrics.weaviate._parse import parse_queries

    return list(parse_queries(stripped, schema=schema))


def _from_mapping(
    d: Mapping[str, Any], where: str, prediction: bool, schema: WeaviateSchema | None
) -> list[WeaviateQuery]:
    if prediction and "collection_name" in d:
        return [_from_arguments(d, where)]
    if "target_collection" in d or "collection_name" in d:
        return [_from_structure(d, where)]
    if "tool_calls" in d:
        calls = d["tool_calls"]
        if not calls or not isinstance(calls, Sequence) or isinstance(calls, str):
            raise RefusedByOriginalError("no tool called", _join(where, "tool_calls"))
        return _read(calls, _join(where, "tool_calls"), prediction, schema)
    if _is_call(d):
        return _from_call(d, where)
    for key in ("weaviate_query", "query"):
        if key in d and len(d) == 1:
            return _read(d[key], _join(where, key), prediction, schema)
    raise RefusedByOriginalError(
        "no collection_name (tool-call arguments) or target_collection (query structure)", where
    )


def _from_call(call: Any, where: str) -> list[WeaviateQuery]:
    if not isinstance(call, Mapping):
        raise RefusedByOriginalError("expected a tool call object", where)
    if isinstance(call.get("function"), Mapping):
        call, where = call["function"], _join(where, "function")
    where = _join(where, "arguments")
    args = call.get("arguments")
    if isinstance(args, bytes | str):
        try:
            args = json.loads(args)
        except ValueError as exc:
            raise RefusedByOriginalError(f"arguments are not valid JSON ({exc})", where) from None
    if not isinstance(args, Mapping):
        raise RefusedByOriginalError("tool-call arguments must be an object", where)
    return [_from_arguments(args, where)]


def _from_arguments(args: Mapping[str, Any], where: str) -> WeaviateQuery:
    """test-main.py: `Model(**args[key]) if key in args else None` for each slot, then the
    query from `args["collection_name"]`, `args.get("search_query")` and
    `args.get("groupby_property")`."""
    filters = tuple(
        _item(m, args[k], _join(where, k)) if k in args else None
        for k, m in zip(FILTER_KEYS, _FILTER_MODELS, strict=True)
    )
    aggregations = tuple(
        _item(m, args[k], _join(where, k)) if k in args else None
        for k, m in zip(AGGREGATION_KEYS, _AGGREGATION_MODELS, strict=True)
    )
    if "collection_name" not in args:
        raise RefusedByOriginalError("missing collection_name", where)
    return _query(args["collection_name"], args, filters, aggregations, where)


def _from_structure(d: Mapping[str, Any], where: str) -> WeaviateQuery:
    """load_queries: `Model(**q[key]) if q.get(key) else None` for each slot, then the query
    from `q["target_collection"]`, `q.get("search_query")`, `q.get("groupby_property")`."""
    filters = tuple(
        _item(m, d[k], _join(where, k)) if d.get(k) else None
        for k, m in zip(FILTER_KEYS, _FILTER_MODELS, strict=True)
    )
    aggregations = tuple(
        _item(m, d[k], _join(where, k)) if d.get(k) else None
        for k, m in zip(AGGREGATION_KEYS, _AGGREGATION_MODELS, strict=True)
    )
    collection = d["target_collection"] if "target_collection" in d else d["collection_name"]
    return _query(collection, d, filters, aggregations, where)


def _query(
    collection: Any,
    d: Mapping[str, Any],
    filters: tuple[Any, ...],
    aggs: tuple[Any, ...],
    where: str,
) -> WeaviateQuery:
    top = _validate(
        _Query,
        {
            "target_collection": collection,
            "search_query": d.get("search_query"),
            "groupby_property": d.get("groupby_property"),
        },
        where,
    )
    return WeaviateQuery(
        collection=top.target_collection,  # type: ignore[attr-defined]
        search_query=top.search_query,  # type: ignore[attr-defined]
        filters=filters,
        aggregations=aggs,
        groupby=top.groupby_property,  # type: ignore[attr-defined]
        ignored_keys=tuple(sorted(str(k) for k in d if k not in _KNOWN)),
    )


def _item(model: type[BaseModel], raw: Any, where: str) -> tuple[Condition | Aggregation]:
    if not isinstance(raw, Mapping):
        raise RefusedByOriginalError(
            f"expected an object, got {type(raw).__name__} (the original: argument after ** "
            "must be a mapping)",
            where,
        )
    m: Any = _validate(model, raw, where)
    if model in _FILTER_MODELS:
        return (Condition(m.property_name, m.operator, m.value),)
    return (Aggregation(m.property_name, (m.metrics,), getattr(m, "top_occurrences_limit", None)),)


def _validate(model: type[BaseModel], raw: Mapping[str, Any], where: str) -> BaseModel:
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        place = ".".join(str(p) for p in err["loc"] if not isinstance(p, int))
        # the loc of a union member (`value.int`) names the member, not a key
        place = place.removesuffix(".int").removesuffix(".float")
        raise RefusedByOriginalError(err["msg"], _join(where, place)) from None


def _join(where: str, key: str) -> str:
    if not key:
        return where
    return f"{where}.{key}" if where else key
