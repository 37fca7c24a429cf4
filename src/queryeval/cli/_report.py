"""`queryeval report RUN_DIR`: rebuild reports from stored records (no re-scoring)."""

from __future__ import annotations

from pathlib import Path

import typer

from queryeval.errors import InputError


def report_command(run_dir: Path) -> None:
    """Re-summarise and re-write the reports the run's suite asks for."""
    from queryeval.config import load_suite
    from queryeval.reports import write_reports
    from queryeval.runner import (
        COMPARISON,
        RUN,
        SUMMARY,
        RunStore,
        compare_with_baseline,
        load_baseline,
        plan_run,
    )
    from queryeval.stats import check_gates, summarize

    store = RunStore(run_dir)
    info = store.read_json(RUN)
    if info is None or not info.get("suite_file"):
        raise InputError("not a run directory (no run.json)", path=run_dir)
    suite = load_suite(Path(info["suite_file"]))
    plan = plan_run(suite)
    summary = summarize(
        suite.name,
        plan.cases,
        list(store.records()),
        plan.scorers,
        [s.name for s in plan.systems],
        seed=suite.seed,
        max_unscored_share=suite.settings.max_unscored_share,
    )
    baseline = load_baseline(
        suite,
        Path(info["baseline"]) if info.get("baseline") else None,
        [s.name for s in plan.systems],
    )
    summary["gates"] = check_gates(
        suite.gates, summary, baseline.summary if baseline is not None else None
    )
    store.write_json(SUMMARY, summary)
    comparison = None
    if baseline is not None:
        comparison = compare_with_baseline(suite, baseline, list(store.records()), run_dir)
        store.write_json(COMPARISON, comparison)
    for kind, path in write_reports(
        suite, run_dir, plan.cases, summary, store, plan.scorers, comparison=comparison
    ).items():
        typer.echo(f"{kind}: {path}")
