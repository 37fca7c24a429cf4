"""The runner: plan a suite, generate and score every case, store, summarise, report."""

from queryeval.runner._run import (
    Runner,
    RunPlan,
    RunResult,
    case_passed,
    default_out_dir,
    plan_run,
    run_suite,
)
from queryeval.runner._store import RunStore

__all__ = [
    "RunPlan",
    "RunResult",
    "RunStore",
    "Runner",
    "case_passed",
    "default_out_dir",
    "plan_run",
    "run_suite",
]
