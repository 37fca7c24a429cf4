"""The published rules of text-to-SQL benchmarks: Spider's exact-set-match, per-clause
scores and hardness (also SParC and CoSQL), and the `*_legacy` execution rules of Spider,
BIRD and Spider 2.0-lite, reproduced with their quirks for comparing with a leaderboard
(`queryeval.metrics.compare_results` is the default comparison).

Each comparison takes ``(prediction, reference, *, options)``.
"""

from queryeval.metrics.benchmarks._spider_sql import (
    HARDNESS,
    PARTS,
    ClauseScore,
    ExactMatchResult,
    SpiderParseError,
    foreign_key_map,
    spider_exact_match,
    spider_hardness,
    sqlite_schema,
)
from queryeval.metrics.benchmarks._sql_legacy import (
    bird_legacy_equal,
    spider2_column_value,
    spider2_legacy_equal,
    spider_legacy_equal,
    spider_legacy_order_matters,
    spider_legacy_queries,
)

__all__ = [
    "HARDNESS",
    "PARTS",
    "ClauseScore",
    "ExactMatchResult",
    "SpiderParseError",
    "bird_legacy_equal",
    "foreign_key_map",
    "spider2_column_value",
    "spider2_legacy_equal",
    "spider_exact_match",
    "spider_hardness",
    "spider_legacy_equal",
    "spider_legacy_order_matters",
    "spider_legacy_queries",
    "sqlite_schema",
]
