"""Weaviate query ASTs (seed 000): parsing tool calls, JSON and weaviate-client code into
`WeaviateQuery` values, and scoring a predicted query against the gold one.

`weaviate_ast(prediction, reference, *, mode="default", ...)` is the metric; `legacy` mode
reproduces weaviate-gorilla's scorer, quirks included.
"""

from queryeval.metrics.weaviate._ast import check_weaviate_ast_options, weaviate_ast
from queryeval.metrics.weaviate._legacy_read import RefusedByOriginalError, legacy_queries
from queryeval.metrics.weaviate._model import (
    Aggregation,
    Condition,
    UnknownMetricError,
    UnknownOperatorError,
    WeaviateQuery,
    WeaviateQueryError,
    WeaviateSchema,
)
from queryeval.metrics.weaviate._parse import parse_queries, parse_query, parse_schema
from queryeval.metrics.weaviate._result import (
    ComponentResult,
    FamilyCounts,
    ItemResult,
    QueryComparison,
    QueryMatch,
    SlotResult,
    WeaviateAstResult,
)

__all__ = [
    "Aggregation",
    "ComponentResult",
    "Condition",
    "FamilyCounts",
    "ItemResult",
    "QueryComparison",
    "QueryMatch",
    "RefusedByOriginalError",
    "SlotResult",
    "UnknownMetricError",
    "UnknownOperatorError",
    "WeaviateAstResult",
    "WeaviateQuery",
    "WeaviateQueryError",
    "WeaviateSchema",
    "check_weaviate_ast_options",
    "legacy_queries",
    "parse_queries",
    "parse_query",
    "parse_schema",
    "weaviate_ast",
]
