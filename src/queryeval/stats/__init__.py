"""Aggregation and statistics: means, pass rates, confidence intervals, gates, grid search."""

from queryeval.stats._aggregate import mean_or_none
from queryeval.stats._bootstrap import Interval, mean_ci
from queryeval.stats._gates import Gate, check_gates, metric_value, parse_gate
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
from queryeval.stats._summary import summarize, summarize_scorer

__all__ = [
    "ConfigResult",
    "Gate",
    "Interval",
    "Leaderboard",
    "MethodComparison",
    "RankCorrelation",
    "base_system",
    "check_gates",
    "compare_methods",
    "format_leaderboard",
    "grid_section",
    "leaderboard",
    "mean_ci",
    "mean_or_none",
    "metric_value",
    "parse_gate",
    "scores_by_config",
    "summarize",
    "summarize_scorer",
]
