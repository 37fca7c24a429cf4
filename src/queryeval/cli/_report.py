"""`queryeval report RUN_DIR`: rebuild reports from stored records (no re-scoring)."""

from __future__ import annotations

from pathlib import Path

import typer

from queryeval.errors import InputError


def report_command(run_dir: Path) -> None:
    """Re-summarise and re-write the reports the run's suite asks for."""
    from queryeval.log import COMPARISON, SUMMARY, LogWriter, read_log
    from queryeval.reports import write_reports
    from queryeval.runner import compare_with_baseline, load_baseline, load_suite, plan_run
    from queryeval.stats import check_gates, summarize

    log = read_log(run_dir)
    info = log.info or {}
    suite_file = info.get("suite_file")
    if not suite_file:
        raise InputError("not a run directory (no run.json)", path=run_dir)
    suite = load_suite(Path(suite_file))
    plan = plan_run(suite)
    summary = summarize(
        suite.name,
        plan.cases,
        log.records,
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
    writer = LogWriter(run_dir)
    writer.write_json(SUMMARY, summary)
    log.summary = summary
    log.comparison = None
    if baseline is not None:
        log.comparison = compare_with_baseline(suite, baseline, log.records, run_dir)
        writer.write_json(COMPARISON, log.comparison)
    for kind, path in write_reports(suite, log, plan.cases, plan.scorers).items():
        typer.echo(f"{kind}: {path}")
