"""The runner: plan a suite, generate and score every case, store, summarise, report.

>>> from queryeval.runner import CaseSelection
>>> CaseSelection(("hard",), 2).everything
False
"""

# ruff: noqa: F401 - the names under TYPE_CHECKING are for type checkers (loaded by `__getattr__`)

from __future__ import annotations

from typing import TYPE_CHECKING

from queryeval._registry import lazy_attributes, names_by_module

if TYPE_CHECKING:
    from queryeval.runner._baseline import compare_with_baseline, load_baseline
    from queryeval.runner._check import gold_problem, live_problem, load_suite
    from queryeval.runner._plan import RunPlan, cache_dir, plan_run
    from queryeval.runner._ray import with_executor
    from queryeval.runner._review import GoldCorrection, Override, Review, apply_golds, load_review
    from queryeval.runner._run import (
        RunResult,
        default_out_dir,
        reviewed_summary,
        run_suite,
        summarized,
    )
    from queryeval.runner._select import CaseSelection
    from queryeval.runner._selftest import SelftestReport, gold_findings, selftest

# module -> the names it defines, imported on first use: a run pays neither for the gold
# self-test nor for the Ray executor nor for a review file's reader unless it uses them
# (issue 31). The names left out of `__all__` are for queryeval's own packages (the
# private-modules contract has them import through here).
_MODULES = {
    "_baseline": "compare_with_baseline load_baseline",
    "_check": "gold_problem live_problem load_suite",
    "_plan": "RunPlan cache_dir plan_run",
    "_ray": "with_executor",
    "_review": "GoldCorrection Override Review apply_golds load_review",
    "_run": "RunResult default_out_dir reviewed_summary run_suite summarized",
    "_select": "CaseSelection",
    "_selftest": "SelftestReport gold_findings selftest",
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

__getattr__, __dir__ = lazy_attributes(__name__, names_by_module(_MODULES, __name__))
