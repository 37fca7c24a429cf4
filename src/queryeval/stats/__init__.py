"""Aggregation and statistics: means, pass rates, bootstrap confidence intervals."""

from queryeval.stats._aggregate import mean_or_none

__all__ = ["mean_or_none"]
