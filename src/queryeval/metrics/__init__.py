"""Pure metric functions: plain values in, a number or a small frozen result out. No I/O.

Usable on their own, like ``sklearn.metrics``.
"""

from queryeval.metrics._agreement import Agreement, agreement
from queryeval.metrics._canonical import NAN, ValuePolicy, canonical
from queryeval.metrics._compare import ComparisonResult, compare_results
from queryeval.metrics._legacy import LEGACY_ROW_LIMIT, legacy_recall
from queryeval.metrics._ordering import OrderInfo, gold_is_ordered
from queryeval.metrics._resultset import ResultSet, as_result_set
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
    "LEGACY_ROW_LIMIT",
    "NAN",
    "Aggregation",
    "Agreement",
    "ComparisonResult",
    "ComponentResult",
    "Condition",
    "DimensionResult",
    "FamilyCounts",
    "ItemResult",
    "OrderInfo",
    "QueryComparison",
    "QueryMatch",
    "ResultSet",
    "SlotResult",
    "TermRef",
    "TermSelectionResult",
    "UnknownMetricError",
    "UnknownOperatorError",
    "ValuePolicy",
    "WeaviateAstResult",
    "WeaviateQuery",
    "WeaviateQueryError",
    "WeaviateSchema",
    "agreement",
    "as_result_set",
    "canonical",
    "check_weaviate_ast_options",
    "compare_results",
    "gold_is_ordered",
    "legacy_recall",
    "parse_queries",
    "parse_query",
    "parse_schema",
    "term_selection",
    "weaviate_ast",
]
