"""Aggregation and statistics: means, pass rates, confidence intervals, gates."""

from queryeval.stats._aggregate import mean_or_none
from queryeval.stats._bootstrap import Interval, mean_ci
from queryeval.stats._gates import Gate, check_gates, metric_value, parse_gate
from queryeval.stats._summary import summarize, summarize_scorer

__all__ = [
    "Gate",
    "Interval",
    "check_gates",
    "mean_ci",
    "mean_or_none",
    "metric_value",
    "parse_gate",
    "summarize",
    "summarize_scorer",
]
