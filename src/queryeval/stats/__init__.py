"""Aggregation and statistics: means, pass rates, confidence intervals, gates, comparisons,
grid search.

Every name is loaded on first use (`_LAZY`): a process that only collects a run's columns
or parses a gate imports neither the comparisons nor the grid search (issue 31).

>>> from queryeval.stats import parse_gate
>>> parse_gate("execution_match >= 0.8").needs_baseline
False
"""

# ruff: noqa: F401 - the names under TYPE_CHECKING are for type checkers (loaded by `__getattr__`)

from __future__ import annotations

from typing import TYPE_CHECKING

from queryeval._registry import lazy_attributes, names_by_module

if TYPE_CHECKING:
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

_MODULES = {
    "queryeval.metrics.aggregate": ("mean_or_none",),
    "queryeval.stats._bootstrap": ("MAX_BOOTSTRAP_N", "Interval", "mean_ci"),
    "queryeval.stats._columns": ("RunColumns", "SystemColumns", "record_latency"),
    "queryeval.stats._compare": (
        "BETTER",
        "NO_DIFFERENCE",
        "WORSE",
        "MetricComparison",
        "RunComparison",
        "SystemComparison",
        "compare_records",
        "compare_runs",
        "pair_systems",
    ),
    "queryeval.stats._gates": (
        "Gate",
        "check_gates",
        "metric_flagged",
        "metric_value",
        "parse_gate",
    ),
    "queryeval.stats._grid": (
        "ConfigResult",
        "Leaderboard",
        "MethodComparison",
        "RankCorrelation",
        "base_system",
        "compare_methods",
        "format_leaderboard",
        "grid_section",
        "leaderboard",
        "scores_by_config",
    ),
    "queryeval.stats._headline": ("headline_metrics",),
    "queryeval.stats._mcnemar": ("McNemarResult", "mcnemar_test"),
    "queryeval.stats._summary": ("summarize", "summarize_scorer"),
}
# name -> (the module defining it, its name there when another); the names left out of
# `__all__` are for queryeval's own packages (the private-modules contract has them import
# through here), not a public interface
_LAZY = names_by_module(_MODULES)

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


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
