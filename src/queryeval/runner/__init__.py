"""The runner: plan a suite, generate and score every case, store, summarise, report."""

from queryeval.runner._baseline import compare_with_baseline, load_baseline
from queryeval.runner._check import gold_problem, live_problem, load_suite
from queryeval.runner._executors import Executor, LocalExecutor
from queryeval.runner._pipeline import Scored, case_passed, make_record, score_output
from queryeval.runner._plan import RunPlan, plan_run
from queryeval.runner._ray import RayExecutor, with_executor
from queryeval.runner._review import apply_golds, apply_overrides, review_agreement
from queryeval.runner._review_file import GoldCorrection, Override, Review, load_review
from queryeval.runner._run import (
    Runner,
    RunResult,
    cache_dir,
    default_out_dir,
    reviewed_summary,
    run_suite,
)
from queryeval.runner._select import CaseSelection
from queryeval.runner._selftest import GoldFinding, SelftestReport, gold_findings, selftest
from queryeval.runner._work import Unit, Worker

__all__ = [
    "CaseSelection",
    "Executor",
    "GoldCorrection",
    "GoldFinding",
    "LocalExecutor",
    "Override",
    "RayExecutor",
    "Review",
    "RunPlan",
    "RunResult",
    "Runner",
    "Scored",
    "SelftestReport",
    "Unit",
    "Worker",
    "apply_golds",
    "apply_overrides",
    "cache_dir",
    "case_passed",
    "compare_with_baseline",
    "default_out_dir",
    "gold_findings",
    "gold_problem",
    "live_problem",
    "load_baseline",
    "load_review",
    "load_suite",
    "make_record",
    "plan_run",
    "review_agreement",
    "reviewed_summary",
    "run_suite",
    "score_output",
    "selftest",
    "with_executor",
]
