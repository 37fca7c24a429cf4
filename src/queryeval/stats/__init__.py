"""Aggregation and statistics: means, pass rates, confidence intervals, gates, grid search."""

from queryeval.stats._aggregate import mean_or_none
from queryeval.stats._bootstrap import Interval, mean_ci
from queryeval.stats._gates import Gate, check_gates, metric_value, parse_gate
from queryeval.stats._grid import (
    ConfigResult,
    Leaderboard,
    MethodComparison,
    RankCorrelation,
    compare_methods,
    format_leaderboard,
    leaderboard,
)
from queryeval.stats._summary import summarize, summarize_scorer

__all__ = [
    "ConfigResult",
    "Gate",
    "Interval",
    "Leaderboard",
    "MethodComparison",
    "RankCorrelation",
    "check_gates",
    "compare_methods",
    "format_leaderboard",
    "leaderboard",
    "mean_ci",
    "mean_or_none",
    "metric_value",
    "parse_gate",
    "summarize",
    "summarize_scorer",
]
