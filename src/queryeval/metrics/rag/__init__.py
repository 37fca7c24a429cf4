"""RAG answers (seed 004): keyword scoring of an answer, the calibration of the
similarity threshold (`similarity >= t` means correct) against human labels, and the
retrieval metrics of the retrieved passage ids (recall@k, precision@k, hit rate@k,
reciprocal rank, nDCG@k).

`keyword_score(prediction, reference)` takes the answer and its keywords;
`find_threshold(similarities, labels, *, metric)` the validation set's similarities and
human 0/1 labels.
"""

from queryeval.metrics.rag._keywords import (
    KeywordMatch,
    keyword_match,
    keyword_score,
    keyword_score_legacy,
    normalize_text,
)
from queryeval.metrics.rag._retrieval import (
    hit_rate_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)
from queryeval.metrics.rag._threshold import (
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
    "KeywordMatch",
    "ThresholdResult",
    "confusion_at",
    "find_threshold",
    "hit_rate_at_k",
    "keyword_match",
    "keyword_score",
    "keyword_score_legacy",
    "metric_from_confusion",
    "ndcg_at_k",
    "normalize_text",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
]
