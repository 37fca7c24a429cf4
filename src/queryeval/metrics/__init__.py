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

__all__ = [
    "LEGACY_ROW_LIMIT",
    "NAN",
    "Agreement",
    "ComparisonResult",
    "DimensionResult",
    "OrderInfo",
    "ResultSet",
    "TermRef",
    "TermSelectionResult",
    "ValuePolicy",
    "agreement",
    "as_result_set",
    "canonical",
    "compare_results",
    "gold_is_ordered",
    "legacy_recall",
    "term_selection",
]
