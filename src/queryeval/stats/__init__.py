"""Aggregation and statistics: means, pass rates, confidence intervals, gates, comparisons,
grid search."""

from queryeval.metrics.aggregate import mean_or_none
from queryeval.stats._bootstrap import MAX_BOOTSTRAP_N, Interval, mean_ci
from queryeval.stats._columns import RunColumns, SystemColumns, record_latency
from queryeval.stats._compare import (
    BETTER,
    NO_DIFFERENCE,
    WORSE,
    MetricComparison,
    RunComparison,
    SystemComparison,
    compare_records,
    compare_runs,
    pair_systems,
)
from queryeval.stats._gates import Gate, check_gates, metric_flagged, metric_value, parse_gate
from queryeval.stats._grid import (
    ConfigResult,
    Leaderboard,
    MethodComparison,
    RankCorrelation,
    base_system,
    compare_methods,
    format_leaderboard,
    grid_section,
    leaderboard,
    scores_by_config,
)
from queryeval.stats._headline import headline_metrics
from queryeval.stats._mcnemar import McNemarResult, mcnemar_test
from queryeval.stats._summary import summarize, summarize_scorer

__all__ = [
    "BETTER",
    "MAX_BOOTSTRAP_N",
    "NO_DIFFERENCE",
    "WORSE",
    "ConfigResult",
    "Gate",
    "Interval",
    "Leaderboard",
    "McNemarResult",
    "MethodComparison",
    "MetricComparison",
    "RankCorrelation",
    "RunColumns",
    "RunComparison",
    "SystemColumns",
    "SystemComparison",
    "base_system",
    "check_gates",
    "compare_methods",
    "compare_records",
    "compare_runs",
    "format_leaderboard",
    "grid_section",
    "headline_metrics",
    "leaderboard",
    "mcnemar_test",
    "mean_ci",
    "mean_or_none",
    "metric_flagged",
    "metric_value",
    "pair_systems",
    "parse_gate",
    "record_latency",
    "scores_by_config",
    "summarize",
    "summarize_scorer",
]
