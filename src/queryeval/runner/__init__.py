"""The runner: plan a suite, generate and score every case, store, summarise, report."""

from queryeval.runner._baseline import compare_with_baseline, load_baseline
from queryeval.runner._review import apply_golds, apply_overrides, review_agreement
from queryeval.runner._review_file import GoldCorrection, Override, Review, load_review
from queryeval.runner._run import (
    Runner,
    RunPlan,
    RunResult,
    cache_dir,
    case_passed,
    default_out_dir,
    plan_run,
    reviewed_summary,
    run_suite,
)
from queryeval.runner._selftest import GoldFinding, SelftestReport, gold_findings, selftest
from queryeval.runner._store import COMPARISON, RUN, SUMMARY, RunStore

__all__ = [
    "COMPARISON",
    "RUN",
    "SUMMARY",
    "GoldCorrection",
    "GoldFinding",
    "Override",
    "Review",
    "RunPlan",
    "RunResult",
    "RunStore",
    "Runner",
    "SelftestReport",
    "apply_golds",
    "apply_overrides",
    "cache_dir",
    "case_passed",
    "compare_with_baseline",
    "default_out_dir",
    "gold_findings",
    "load_baseline",
    "load_review",
    "plan_run",
    "review_agreement",
    "reviewed_summary",
    "run_suite",
    "selftest",
]
