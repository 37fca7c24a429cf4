"""Aggregation and statistics: means, pass rates, confidence intervals, gates, comparisons."""

from queryeval.stats._aggregate import mean_or_none
from queryeval.stats._bootstrap import Interval, mean_ci
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
from queryeval.stats._gates import Gate, check_gates, metric_value, parse_gate
from queryeval.stats._mcnemar import McNemarResult, mcnemar_test
from queryeval.stats._rundata import RunData, load_run
from queryeval.stats._summary import summarize, summarize_scorer

__all__ = [
    "BETTER",
    "NO_DIFFERENCE",
    "WORSE",
    "Gate",
    "Interval",
    "McNemarResult",
    "MetricComparison",
    "RunComparison",
    "RunData",
    "SystemComparison",
    "check_gates",
    "compare_records",
    "compare_runs",
    "load_run",
    "mcnemar_test",
    "mean_ci",
    "mean_or_none",
    "metric_value",
    "pair_systems",
    "parse_gate",
    "summarize",
    "summarize_scorer",
]
