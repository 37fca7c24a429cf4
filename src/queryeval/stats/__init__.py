"""Aggregation and statistics: means, pass rates, confidence intervals, gates, comparisons,
grid search."""

# ruff: noqa: F401 - names imported here and left out of `__all__` are for queryeval's own
# packages (the private-modules contract has them import through here), not a public interface

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

# What users call; the package's other names are for queryeval's own packages.
__all__ = [
    "Gate",
    "Interval",
    "Leaderboard",
    "RunComparison",
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
    "parse_gate",
    "summarize",
]
