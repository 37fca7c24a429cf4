"""The Weaviate Gorilla query structure (seed 000) as small immutable values, and its errors.

A query is a target collection, an optional search text, filter and aggregation *slots* in
three typed families (integer, text, boolean) and an optional group-by property. A slot is
``None`` when the query does not mention it, else a tuple of conditions (the seed allows one;
lists of several are accepted so order independence can be scored).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

Family = Literal["integer", "text", "boolean"]
FAMILIES: tuple[Family, ...] = ("integer", "text", "boolean")

FILTER_KEYS: tuple[str, ...] = tuple(f"{f}_property_filter" for f in FAMILIES)
AGGREGATION_KEYS: tuple[str, ...] = tuple(f"{f}_property_aggregation" for f in FAMILIES)

# The seed's operator sets per filter family (weaviate-gorilla's tool schema).
OPERATORS: dict[str, frozenset[str]] = {
    "integer": frozenset({"=", "<", ">", "<=", ">="}),
    "text": frozenset({"=", "LIKE"}),
    "boolean": frozenset({"=", "!="}),
}
# Spellings seen in tool calls and in the weaviate-client API, mapped to the seed's symbols.
OPERATOR_ALIASES: dict[str, str] = {
    "=": "=",
    "==": "=",
    "eq": "=",
    "equal": "=",
    "equals": "=",
    "!=": "!=",
    "<>": "!=",
    "ne": "!=",
    "neq": "!=",
    "notequal": "!=",
    "not_equal": "!=",
    "<": "<",
    "lt": "<",
    "lessthan": "<",
    "less_than": "<",
    "<=": "<=",
    "lte": "<=",
    "le": "<=",
    "lessthanequal": "<=",
    "less_or_equal": "<=",
    ">": ">",
    "gt": ">",
    "greaterthan": ">",
    "greater_than": ">",
    ">=": ">=",
    "gte": ">=",
    "ge": ">=",
    "greaterthanequal": ">=",
    "greater_or_equal": ">=",
    "like": "LIKE",
}

# The seed's aggregation metrics per family.
METRICS: dict[str, frozenset[str]] = {
    "integer": frozenset({"COUNT", "TYPE", "MIN", "MAX", "MEAN", "MEDIAN", "MODE", "SUM"}),
    "text": frozenset({"COUNT", "TYPE", "TOP_OCCURRENCES"}),
    "boolean": frozenset(
        {"COUNT", "TYPE", "TOTAL_TRUE", "TOTAL_FALSE", "PERCENTAGE_TRUE", "PERCENTAGE_FALSE"}
    ),
}
METRIC_ALIASES: dict[str, str] = {
    "MINIMUM": "MIN",
    "MAXIMUM": "MAX",
    "AVG": "MEAN",
    "AVERAGE": "MEAN",
    "SUM_": "SUM",
    "TOP_OCCURRENCES_VALUE": "TOP_OCCURRENCES",
    "TOP_OCCURRENCES_COUNT": "TOP_OCCURRENCES",
    "TOPOCCURRENCES": "TOP_OCCURRENCES",
}


class WeaviateQueryError(ValueError):
    """A prediction or gold query that is not a Weaviate query; `where` names the place."""

    def __init__(self, message: str, where: str = "") -> None:
        self.message = message
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class UnknownOperatorError(WeaviateQueryError):
    """A filter operator outside the seed's operator set of its family."""


class UnknownMetricError(WeaviateQueryError):
    """An aggregation metric outside the seed's metric set of its family."""


class Condition(NamedTuple):
    """One filter: `property operator value` (operator in the seed's symbols)."""

    property: str
    operator: str
    value: Any

    def render(self) -> str:
        """`price < 20`."""
        return f"{self.property} {self.operator} {self.value!r}"


class Aggregation(NamedTuple):
    """One aggregation: a property and its metrics (sorted, upper case)."""

    property: str
    metrics: tuple[str, ...]
    top_occurrences_limit: int | None = None

    def render(self) -> str:
        """`rating: MEAN, MAX`."""
        limit = (
            f" (limit {self.top_occurrences_limit})"
            if self.top_occurrences_limit is not None
            else ""
        )
        return f"{self.property}: {', '.join(self.metrics)}{limit}"


Slot = tuple[Any, ...] | None  # tuple[Condition, ...] | tuple[Aggregation, ...] | None


@dataclass(frozen=True, slots=True)
class WeaviateQuery:
    """A parsed query. `filters` / `aggregations` hold one slot per family (see FAMILIES).

    Raw values are kept (an empty search text stays ``""``) so `legacy` mode can reproduce
    the original scorer's truthiness tests exactly.
    """

    collection: str | None
    search_query: str | None = None
    filters: tuple[Slot, Slot, Slot] = (None, None, None)
    aggregations: tuple[Slot, Slot, Slot] = (None, None, None)
    groupby: str | None = None
    ignored_keys: tuple[str, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The Gorilla JSON structure (a slot of several conditions becomes a list)."""
        out: dict[str, Any] = {
            "target_collection": self.collection,
            "search_query": self.search_query,
        }
        for key, slot in zip(FILTER_KEYS, self.filters, strict=True):
            out[key] = _slot_dict(slot)
        for key, slot in zip(AGGREGATION_KEYS, self.aggregations, strict=True):
            out[key] = _slot_dict(slot)
        out["groupby_property"] = self.groupby
        return out


def _slot_dict(slot: Slot) -> Any:
    if slot is None:
        return None
    items: list[dict[str, Any]] = []
    for item in slot:
        if isinstance(item, Condition):
            items.append(
                {"property_name": item.property, "operator": item.operator, "value": item.value}
            )
        else:
            metrics: Any = item.metrics[0] if len(item.metrics) == 1 else list(item.metrics)
            d: dict[str, Any] = {"property_name": item.property, "metrics": metrics}
            if item.top_occurrences_limit is not None:
                d["top_occurrences_limit"] = item.top_occurrences_limit
            items.append(d)
    return items[0] if len(items) == 1 else items


@dataclass(frozen=True, slots=True)
class WeaviateSchema:
    """Collections and the data type of each property (Weaviate names: int, number, text,
    boolean, date, ...; array types keep their ``[]`` suffix)."""

    collections: Mapping[str, Mapping[str, str]]

    def properties(self, collection: str | None) -> Mapping[str, str]:
        """The properties of a collection ({} when unknown)."""
        if collection is None:
            return {}
        return self.collections.get(collection, {})

    def data_type(self, collection: str | None, prop: str) -> str | None:
        """The data type of `collection.prop`, or None when the schema does not say."""
        return self.properties(collection).get(prop)
