"""Comparing query results (what SQL, KQL and Cypher queries returned).

`compare_results(prediction, reference, *, policy...)` is the one comparator for every
engine; `legacy_recall` is seed 002's "results match". Both take a `ResultSet`, a
``(columns, rows)`` pair, dict rows or an Arrow/pandas/polars table for each side. Cells
compare by `canonical` form (numbers by value, instants in UTC, NaN equal to NaN).
"""

from queryeval.metrics.results._canonical import NAN, ValuePolicy, canonical
from queryeval.metrics.results._compare import ComparisonResult, compare_results
from queryeval.metrics.results._legacy import LEGACY_ROW_LIMIT, legacy_recall
from queryeval.metrics.results._resultset import ResultSet, as_result_set
from queryeval.metrics.results._small import FAST_MAX_ROWS

__all__ = [
    "FAST_MAX_ROWS",
    "LEGACY_ROW_LIMIT",
    "NAN",
    "ComparisonResult",
    "ResultSet",
    "ValuePolicy",
    "as_result_set",
    "canonical",
    "compare_results",
    "legacy_recall",
]
