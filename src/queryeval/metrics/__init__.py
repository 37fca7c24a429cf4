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

# ruff: noqa: F401 - the result types imported here are importable from the package (for
# queryeval's own packages) but exported by their families, not listed in `__all__`

from typing import TYPE_CHECKING, Any

# eager: `agreement` is also its submodule's name, which importing the submodule later
# would put in its place
from queryeval.metrics.agreement import Agreement, agreement

if TYPE_CHECKING:
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
    from queryeval.metrics.rag import (
        KeywordMatch,
        ThresholdResult,
        find_threshold,
        keyword_match,
        keyword_score,
    )
    from queryeval.metrics.results import (
        ComparisonResult,
        ResultSet,
        compare_results,
        legacy_recall,
    )
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
    from queryeval.metrics.weaviate import (
        WeaviateAstResult,
        WeaviateQuery,
        parse_query,
        weaviate_ast,
    )

# each name's module, imported on first use: a run imports only the families it scores with
# (the Weaviate, agentic, text... families cost about 40 ms of a process's start)
_WHERE = {
    "AgenticReport": "queryeval.metrics.agentic",
    "ComparisonResult": "queryeval.metrics.results",
    "KeywordMatch": "queryeval.metrics.rag",
    "ResultSet": "queryeval.metrics.results",
    "TermSelectionResult": "queryeval.metrics.sdmx",
    "ThresholdResult": "queryeval.metrics.rag",
    "WeaviateAstResult": "queryeval.metrics.weaviate",
    "WeaviateQuery": "queryeval.metrics.weaviate",
    "agentic_report": "queryeval.metrics.agentic",
    "bleu": "queryeval.metrics.text",
    "compare_results": "queryeval.metrics.results",
    "corpus_bleu": "queryeval.metrics.text",
    "exact_match": "queryeval.metrics.text",
    "find_threshold": "queryeval.metrics.rag",
    "jaccard": "queryeval.metrics.text",
    "jaccard_output": "queryeval.metrics.agentic",
    "jaro": "queryeval.metrics.text",
    "jaro_winkler": "queryeval.metrics.text",
    "keyword_match": "queryeval.metrics.rag",
    "keyword_score": "queryeval.metrics.rag",
    "legacy_recall": "queryeval.metrics.results",
    "llmetric_q": "queryeval.metrics.agentic",
    "mean_pass_at_k": "queryeval.metrics.agentic",
    "parse_query": "queryeval.metrics.weaviate",
    "pass_at_1_output": "queryeval.metrics.agentic",
    "pass_at_k": "queryeval.metrics.agentic",
    "rouge_l": "queryeval.metrics.text",
    "success_at_k": "queryeval.metrics.agentic",
    "term_selection": "queryeval.metrics.sdmx",
    "weaviate_ast": "queryeval.metrics.weaviate",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


# What users call: the functions, and the result sets they compare; each family's package
# exports its result types (`queryeval.metrics.rag.ThresholdResult`, ...).
__all__ = [
    "ComparisonResult",
    "ResultSet",
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
