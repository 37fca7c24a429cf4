"""The runner: plan a suite, generate and score every case, store, summarise, report.

>>> from queryeval.runner import CaseSelection
>>> CaseSelection(("hard",), 2).everything
False
"""

# ruff: noqa: F401 - the names under TYPE_CHECKING are for type checkers (loaded by `__getattr__`)

from __future__ import annotations

from typing import TYPE_CHECKING

from queryeval._registry import lazy_attributes

if TYPE_CHECKING:
    from queryeval.runner._baseline import compare_with_baseline, load_baseline
    from queryeval.runner._check import gold_problem, live_problem, load_suite
    from queryeval.runner._plan import RunPlan, cache_dir, plan_run
    from queryeval.runner._ray import with_executor
    from queryeval.runner._review import apply_golds
    from queryeval.runner._review import GoldCorrection, Override, Review, load_review
    from queryeval.runner._run import (
        RunResult,
        default_out_dir,
        reviewed_summary,
        run_suite,
        summarized,
    )
    from queryeval.runner._select import CaseSelection
    from queryeval.runner._selftest import SelftestReport, gold_findings, selftest
    from queryeval.scorers import case_passed

# name -> (the module defining it, its name there when another), imported on first use: a
# run pays neither for the gold self-test nor for the Ray executor nor for a review file's
# reader unless it uses them (issue 31). The names left out of `__all__` are for queryeval's
# own packages (the private-modules contract has them import through here).
_LAZY: dict[str, tuple[str, str | None]] = {
    "CaseSelection": ("queryeval.runner._select", None),
    "GoldCorrection": ("queryeval.runner._review", None),
    "Override": ("queryeval.runner._review", None),
    "Review": ("queryeval.runner._review", None),
    "RunPlan": ("queryeval.runner._plan", None),
    "RunResult": ("queryeval.runner._run", None),
    "SelftestReport": ("queryeval.runner._selftest", None),
    "apply_golds": ("queryeval.runner._review", None),
    "cache_dir": ("queryeval.runner._plan", None),
    "case_passed": ("queryeval.scorers", None),
    "compare_with_baseline": ("queryeval.runner._baseline", None),
    "default_out_dir": ("queryeval.runner._run", None),
    "gold_findings": ("queryeval.runner._selftest", None),
    "gold_problem": ("queryeval.runner._check", None),
    "live_problem": ("queryeval.runner._check", None),
    "load_baseline": ("queryeval.runner._baseline", None),
    "load_review": ("queryeval.runner._review", None),
    "load_suite": ("queryeval.runner._check", None),
    "plan_run": ("queryeval.runner._plan", None),
    "reviewed_summary": ("queryeval.runner._run", None),
    "run_suite": ("queryeval.runner._run", None),
    "selftest": ("queryeval.runner._selftest", None),
    "summarized": ("queryeval.runner._run", None),
    "with_executor": ("queryeval.runner._ray", None),
}

# What users call: load and run a suite (a subset, on another executor), where its run goes,
# the gold self-test, and a human review file.
__all__ = [
    "CaseSelection",
    "GoldCorrection",
    "Override",
    "Review",
    "RunResult",
    "SelftestReport",
    "default_out_dir",
    "load_review",
    "load_suite",
    "run_suite",
    "selftest",
    "with_executor",
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
