"""Pure metric functions: plain values in, a number or a small frozen result out. No I/O.

Usable on their own, like ``sklearn.metrics``, and with one argument order everywhere:
``metric(prediction, reference, *, options...)``. The functions most people need are here;
each family's package holds the rest (batch variants, parsers, result types):

- `queryeval.metrics.results`: query results (`compare_results`, `legacy_recall`, ...)
- `queryeval.metrics.text`: query texts (BLEU, ROUGE-L, Jaro-Winkler, Jaccard, exact match)
- `queryeval.metrics.weaviate`: Weaviate query ASTs (seed 000)
- `queryeval.metrics.sdmx`: SDMX term selection (seed 001)
- `queryeval.metrics.agentic`: pass@k, success@k, agentic loops, LLMetric-Q (seed 003)
- `queryeval.metrics.rag`: answer keywords, similarity-threshold calibration (seed 004)
- `queryeval.metrics.agreement`: a judge's agreement with human labels (seed 002)
- `queryeval.metrics.benchmarks`: Spider's exact-set-match and hardness; the published
  execution rules of Spider, BIRD and Spider 2.0-lite

>>> from queryeval.metrics import bleu, compare_results
>>> bleu("MATCH (n) RETURN n", "MATCH (n) RETURN n")
1.0
>>> compare_results((["a"], [(1,), (2,)]), (["a"], [(2,), (1,)])).exact
True
"""

from queryeval.metrics.agentic import (
    AgenticReport,
    agentic_report,
    jaccard_output,
    llmetric_q,
    mean_pass_at_k,
    pass_at_1_output,
    pass_at_k,
    success_at_k,
)
from queryeval.metrics.agreement import Agreement, agreement
from queryeval.metrics.rag import (
    KeywordMatch,
    ThresholdResult,
    find_threshold,
    keyword_match,
    keyword_score,
)
from queryeval.metrics.results import ComparisonResult, ResultSet, compare_results, legacy_recall
from queryeval.metrics.sdmx import TermSelectionResult, term_selection
from queryeval.metrics.text import (
    bleu,
    corpus_bleu,
    exact_match,
    jaccard,
    jaro,
    jaro_winkler,
    rouge_l,
)
from queryeval.metrics.weaviate import WeaviateAstResult, WeaviateQuery, parse_query, weaviate_ast

__all__ = [
    "AgenticReport",
    "Agreement",
    "ComparisonResult",
    "KeywordMatch",
    "ResultSet",
    "TermSelectionResult",
    "ThresholdResult",
    "WeaviateAstResult",
    "WeaviateQuery",
    "agentic_report",
    "agreement",
    "bleu",
    "compare_results",
    "corpus_bleu",
    "exact_match",
    "find_threshold",
    "jaccard",
    "jaccard_output",
    "jaro",
    "jaro_winkler",
    "keyword_match",
    "keyword_score",
    "legacy_recall",
    "llmetric_q",
    "mean_pass_at_k",
    "parse_query",
    "pass_at_1_output",
    "pass_at_k",
    "rouge_l",
    "success_at_k",
    "term_selection",
    "weaviate_ast",
]
