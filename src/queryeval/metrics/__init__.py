"""Pure metric functions: plain values in, a number or a small frozen result out. No I/O.

Usable on their own, like ``sklearn.metrics``.
"""

from queryeval.metrics._term_selection import (
    DimensionResult,
    TermRef,
    TermSelectionResult,
    term_selection,
)
from queryeval.metrics._weaviate_ast import check_weaviate_ast_options, weaviate_ast
from queryeval.metrics._weaviate_model import (
    Aggregation,
    Condition,
    UnknownMetricError,
    UnknownOperatorError,
    WeaviateQuery,
    WeaviateQueryError,
    WeaviateSchema,
)
from queryeval.metrics._weaviate_parse import parse_queries, parse_query, parse_schema
from queryeval.metrics._weaviate_result import (
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
    "DimensionResult",
    "FamilyCounts",
    "ItemResult",
    "QueryComparison",
    "QueryMatch",
    "SlotResult",
    "TermRef",
    "TermSelectionResult",
    "UnknownMetricError",
    "UnknownOperatorError",
    "WeaviateAstResult",
    "WeaviateQuery",
    "WeaviateQueryError",
    "WeaviateSchema",
    "check_weaviate_ast_options",
    "parse_queries",
    "parse_query",
    "parse_schema",
    "term_selection",
    "weaviate_ast",
]
