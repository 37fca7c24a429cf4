"""Pure metric functions: plain values in, a number or a small frozen result out. No I/O.

Usable on their own, like ``sklearn.metrics``.
"""

from queryeval.metrics._spider_sql import (
    ClauseScore,
    ExactMatchResult,
    SpiderParseError,
    foreign_key_map,
    spider_exact_match,
    spider_hardness,
    sqlite_schema,
)
from queryeval.metrics._sql_legacy import (
    bird_legacy_equal,
    spider2_column_value,
    spider2_legacy_equal,
    spider_legacy_equal,
    spider_legacy_order_matters,
    spider_legacy_queries,
)
from queryeval.metrics.agentic._attempts import (
    AgenticReport,
    AttemptSummary,
    agentic_report,
    kg_valid,
    primary_error,
    recovery_rate,
    summarize_attempt,
    summarize_output,
)
from queryeval.metrics.agentic._llmetric import (
    LLMETRIC_Q_WEIGHTS,
    jaccard_output,
    jarou,
    llmetric_q,
    pass_at_1_output,
)
from queryeval.metrics.agentic._passk import first_success, mean_pass_at_k, pass_at_k, success_at_k
from queryeval.metrics.agreement import Agreement, agreement
from queryeval.metrics.rag._keywords import (
    KeywordMatch,
    keyword_match,
    keyword_score,
    keyword_score_legacy,
    normalize_text,
)
from queryeval.metrics.rag._threshold import (
    PROXY_SIMILARITY,
    SEED_GRID,
    ThresholdResult,
    confusion_at,
    find_threshold,
    metric_from_confusion,
)
from queryeval.metrics.results._canonical import NAN, ValuePolicy, canonical
from queryeval.metrics.results._compare import ComparisonResult, compare_results
from queryeval.metrics.results._legacy import LEGACY_ROW_LIMIT, legacy_recall
from queryeval.metrics.results._resultset import ResultSet, as_result_set
from queryeval.metrics.sdmx import (
    DimensionResult,
    TermRef,
    TermSelectionResult,
    compare_terms,
    term_selection,
)
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
    "LEGACY_ROW_LIMIT",
    "LLMETRIC_Q_WEIGHTS",
    "NAN",
    "PROXY_SIMILARITY",
    "SEED_GRID",
    "AgenticReport",
    "Aggregation",
    "Agreement",
    "AttemptSummary",
    "ClauseScore",
    "ComparisonResult",
    "ComponentResult",
    "Condition",
    "DimensionResult",
    "ExactMatchResult",
    "FamilyCounts",
    "ItemResult",
    "KeywordMatch",
    "QueryComparison",
    "QueryMatch",
    "RefusedByOriginalError",
    "ResultSet",
    "RougeLScore",
    "SlotResult",
    "SpiderParseError",
    "TermRef",
    "TermSelectionResult",
    "ThresholdResult",
    "UnknownMetricError",
    "UnknownOperatorError",
    "ValuePolicy",
    "WeaviateAstResult",
    "WeaviateQuery",
    "WeaviateQueryError",
    "WeaviateSchema",
    "agentic_report",
    "agreement",
    "as_result_set",
    "bird_legacy_equal",
    "bleu",
    "bleu_many",
    "canonical",
    "check_weaviate_ast_options",
    "compare_results",
    "compare_terms",
    "confusion_at",
    "corpus_bleu",
    "exact_match",
    "find_threshold",
    "first_success",
    "foreign_key_map",
    "jaccard",
    "jaccard_many",
    "jaccard_output",
    "jaro",
    "jaro_winkler",
    "jaro_winkler_many",
    "jarou",
    "keyword_match",
    "keyword_score",
    "keyword_score_legacy",
    "kg_valid",
    "legacy_queries",
    "legacy_recall",
    "llmetric_q",
    "mean_pass_at_k",
    "metric_from_confusion",
    "normalize_text",
    "parse_queries",
    "parse_query",
    "parse_schema",
    "pass_at_1_output",
    "pass_at_k",
    "primary_error",
    "recovery_rate",
    "rouge_l",
    "rouge_l_many",
    "rouge_l_score",
    "rouge_l_scores",
    "rouge_tokens",
    "spider2_column_value",
    "spider2_legacy_equal",
    "spider_exact_match",
    "spider_hardness",
    "spider_legacy_equal",
    "spider_legacy_order_matters",
    "spider_legacy_queries",
    "sqlite_schema",
    "success_at_k",
    "summarize_attempt",
    "summarize_output",
    "term_selection",
    "tokenize_13a",
    "tokenize_13a_many",
    "weaviate_ast",
]
