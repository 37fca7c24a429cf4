"""Pure metric functions: plain values in, a number or a small frozen result out. No I/O.

Usable on their own, like ``sklearn.metrics``.
"""

from queryeval.metrics._agreement import Agreement, agreement
from queryeval.metrics._term_selection import (
    DimensionResult,
    TermRef,
    TermSelectionResult,
    term_selection,
)

__all__ = [
    "Agreement",
    "DimensionResult",
    "TermRef",
    "TermSelectionResult",
    "agreement",
    "term_selection",
]
