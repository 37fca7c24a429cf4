"""Presets: named suite fragments that reproduce each seed's scoring.

A preset fills in what the suite leaves out (scorers, threshold); the suite's own keys win.
"""

from __future__ import annotations

import copy
from typing import Any


def _kql_batch(results_scorer: str) -> dict[str, Any]:
    """Seed 002: pass iff the query executes and 0.5 x judge + 0.5 x results >= 0.9."""
    return {
        "scorers": [
            {
                "name": "composite",
                "id": "kql_batch",
                "threshold": 0.9,
                "options": {
                    "components": [
                        {"name": "executes", "weight": 0, "required": True},
                        {"name": "llm_query_similarity", "weight": 0.5},
                        {"name": results_scorer, "weight": 0.5},
                    ]
                },
            }
        ],
    }


def _benchmark(rule: str, comparison: dict[str, Any], **options: Any) -> dict[str, Any]:
    """Execution accuracy as a benchmark scores it (docs/benchmarks.md): the verdict's rule,
    the comparison that also gives row F1, and the prediction's own execution."""
    match: dict[str, Any] = {"name": "execution_match", "required": True}
    if rule != "queryeval" or options:
        match["options"] = {"rule": rule, **options}
    return {
        "comparison": comparison,
        "scorers": [
            {"name": "executes", "weight": 0},
            match,
            {"name": "results_f1", "weight": 0},
        ],
    }


# Spider: a bag of rows, columns matched by any permutation, ordered only when the gold has
# a top-level ORDER BY (found by parsing), DISTINCT kept. BIRD: a set of rows, columns by
# position. The *_legacy presets give the published scripts' verdicts, quirks included.
_SPIDER = {"rows": "auto", "columns": "permutation"}
_BIRD = {"rows": "set", "columns": "by_position"}
_TEXT_SHOWN = [
    {"name": "rouge_l", "weight": 0},
    {"name": "jaro_winkler", "weight": 0},
    {"name": "jaccard", "weight": 0},
]

PRESETS: dict[str, dict[str, Any]] = {
    "spider": _benchmark("queryeval", _SPIDER),
    "spider_legacy": _benchmark("spider_legacy", _SPIDER),
    "bird": _benchmark("queryeval", _BIRD),
    "bird_legacy": _benchmark("bird_legacy", _BIRD),
    # seed 001: per-dimension precision/recall of SDMX term selection
    "sdmx_selection": {
        "scorers": [{"name": "term_selection"}],
    },
    # seed 004: RAG answers, binary semantic similarity at the seed's fixed 0.75
    "rag_answers": {
        "scorers": [{"name": "answer", "options": {"evaluation_method": "semantic_fixed"}}],
    },
    # seed 002 exactly: results match = recall of expected rows (extra rows not penalised)
    "kql_batch": _kql_batch("results_match_legacy"),
    # seed 002 with the fix: results scored by row F1 on all rows, typed comparison
    "kql_batch_strict": _kql_batch("results_f1"),
    # execution-based query scoring (SQL, KQL, Cypher): runs, EX (seed 003), row F1
    "query_execution": {
        "scorers": [
            {"name": "executes", "weight": 0},
            {"name": "execution_match", "required": True},
            {"name": "results_f1", "weight": 0},
        ],
    },
    # seed 003: agentic Text2Cypher (success within k refinements, KG validity, LLMetric-Q,
    # query-text similarities reported beside them)
    "text2cypher": {
        "scorers": [
            {"name": "agentic", "required": True},
            {"name": "llmetric_q", "weight": 0},
            {"name": "kg_valid", "weight": 0},
            {"name": "execution_match", "weight": 0},
            {"name": "bleu", "weight": 0},
            {"name": "rouge_l", "weight": 0},
            {"name": "jaro_winkler", "weight": 0},
            {"name": "jaccard", "weight": 0},
        ],
    },
    # Neo4j's Text2Cypher (2024) evaluation, translation-based (no database): the verdict is
    # exact match of the query text (whitespace runs as one space: line breaks and indentation
    # carry no meaning in Cypher), BLEU the mean, the other text metrics shown
    "text2cypher_translation": {
        "scorers": [
            {"name": "exact_match", "required": True, "options": {"normalize_whitespace": True}},
            {"name": "bleu"},
            *_TEXT_SHOWN,
        ],
    },
    # ... and execution-based (a Neo4j database per row): the verdict is execution match,
    # the query-text metrics shown beside it
    "text2cypher_execution": {
        "comparison": {"columns": "permutation"},
        "scorers": [
            {"name": "execution_match", "required": True},
            {"name": "executes", "weight": 0},
            {"name": "exact_match", "weight": 0, "options": {"normalize_whitespace": True}},
            {"name": "bleu", "weight": 0},
            *_TEXT_SHOWN,
        ],
    },
    # seed 000: weighted AST comparison of Weaviate queries (collection 0.4, rest 0.15 each)
    "weaviate_ast": {
        "scorers": [{"name": "weaviate_ast"}],
    },
}


def apply_preset(data: dict[str, Any]) -> dict[str, Any]:
    """The suite mapping with its preset's defaults filled in (unknown preset: KeyError)."""
    name = data.get("preset")
    if not name:
        return data
    preset = PRESETS[name]
    merged = copy.deepcopy(preset)  # a suite may change its copy; the preset must not change
    merged.update({k: v for k, v in data.items() if v is not None})
    return merged
