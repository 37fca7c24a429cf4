"""Pure metric functions: plain values in, a number or a small frozen result out. No I/O.

Usable on their own, like ``sklearn.metrics``.
"""

from queryeval.metrics._keywords import (
    KeywordMatch,
    keyword_match,
    keyword_score,
    keyword_score_legacy,
    normalize_text,
)
from queryeval.metrics._term_selection import (
    DimensionResult,
    TermRef,
    TermSelectionResult,
    term_selection,
)
from queryeval.metrics._threshold import (
    PROXY_SIMILARITY,
    SEED_GRID,
    ThresholdResult,
    confusion_at,
    find_threshold,
    metric_from_confusion,
)

__all__ = [
    "PROXY_SIMILARITY",
    "SEED_GRID",
    "DimensionResult",
    "KeywordMatch",
    "TermRef",
    "TermSelectionResult",
    "ThresholdResult",
    "confusion_at",
    "find_threshold",
    "keyword_match",
    "keyword_score",
    "keyword_score_legacy",
    "metric_from_confusion",
    "normalize_text",
    "term_selection",
]
