"""The runner: plan a suite, generate and score every case, store, summarise, report."""

from queryeval.runner._baseline import compare_with_baseline, load_baseline
from queryeval.runner._check import load_suite
from queryeval.runner._executors import (
    AsyncExecutor,
    Executor,
    InlineExecutor,
    ScoreWork,
    WorkItem,
)
from queryeval.runner._pipeline import Scored, case_passed, make_record, score_output
from queryeval.runner._run import (
    Runner,
    RunPlan,
    RunResult,
    cache_dir,
    default_out_dir,
    plan_run,
    run_suite,
)
from queryeval.runner._selftest import GoldFinding, SelftestReport, gold_findings, selftest

__all__ = [
    "AsyncExecutor",
    "Executor",
    "GoldFinding",
    "InlineExecutor",
    "RunPlan",
    "RunResult",
    "Runner",
    "ScoreWork",
    "Scored",
    "SelftestReport",
    "WorkItem",
    "cache_dir",
    "case_passed",
    "compare_with_baseline",
    "default_out_dir",
    "gold_findings",
    "load_baseline",
    "load_suite",
    "make_record",
    "plan_run",
    "run_suite",
    "score_output",
    "selftest",
]
