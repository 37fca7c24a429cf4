"""Similarity of query texts: BLEU (equal to sacreBLEU), ROUGE-L (equal to rouge-score),
Jaro and Jaro-Winkler (rapidfuzz), Jaccard and exact match, each as
``metric(prediction, reference, *, options)`` in [0, 1], with ``*_many`` batch variants that
compute whole lists at once.
"""

from queryeval.metrics.text._bleu import bleu, bleu_many, corpus_bleu
from queryeval.metrics.text._rouge import (
    RougeLScore,
    rouge_l,
    rouge_l_many,
    rouge_l_score,
    rouge_l_scores,
    rouge_tokens,
)
from queryeval.metrics.text._strings import (
    exact_match,
    jaccard,
    jaccard_many,
    jaro,
    jaro_winkler,
    jaro_winkler_many,
)
from queryeval.metrics.text._tokenize_13a import tokenize_13a, tokenize_13a_many

__all__ = [
    "RougeLScore",
    "bleu",
    "bleu_many",
    "corpus_bleu",
    "exact_match",
    "jaccard",
    "jaccard_many",
    "jaro",
    "jaro_winkler",
    "jaro_winkler_many",
    "rouge_l",
    "rouge_l_many",
    "rouge_l_score",
    "rouge_l_scores",
    "rouge_tokens",
    "tokenize_13a",
    "tokenize_13a_many",
]
