"""Aggregation and statistics: means, pass rates, bootstrap confidence intervals."""

from queryeval.stats._aggregate import mean_or_none
from queryeval.stats._grid import (
    ConfigResult,
    Leaderboard,
    MethodComparison,
    RankCorrelation,
    compare_methods,
    format_leaderboard,
    leaderboard,
)

__all__ = [
    "ConfigResult",
    "Leaderboard",
    "MethodComparison",
    "RankCorrelation",
    "compare_methods",
    "format_leaderboard",
    "leaderboard",
    "mean_or_none",
]
