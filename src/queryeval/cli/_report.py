"""`queryeval report RUN_DIR`: rebuild reports from stored records (no re-scoring)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from queryeval.errors import InputError

if TYPE_CHECKING:
    from queryeval.log import RunLog
    from queryeval.runner import RunPlan


def report_command(run_dir: Path, review: Path | None = None, partial: bool = False) -> None:
    """Re-summarise and re-write the reports the run's suite asks for, with the overrides of
    `review` (else of the review file the run recorded, if any).

    A directory a run is still writing to is refused (InputError naming the run) unless
    `partial`: then the report covers the results stored so far, and says so on stderr
    (as it does for a run that stopped before the end)."""
    from queryeval.log import COMPARISON, SUMMARY, LogWriter, lock_holder, read_log
    from queryeval.reports import write_reports
    from queryeval.runner import (
        apply_golds,
        compare_with_baseline,
        load_baseline,
        load_review,
        load_suite,
        plan_run,
        reviewed_summary,
        summarized,
    )

    holder = lock_holder(run_dir)
    if holder is not None and not partial:
        raise InputError(
            f"a run is still writing to this directory ({holder}): a report now would show "
            "only the results stored so far; wait for the run to end, or pass --partial to "
            "report them as they are",
            path=run_dir,
        )
    log = read_log(run_dir, reviewed=False)  # the stored scores: the review is applied again
    info = log.info or {}
    suite_file = info.get("suite_file")
    if not suite_file:
        raise InputError("not a run directory (no run.json)", path=run_dir)
    suite = load_suite(Path(suite_file))
    plan = plan_run(suite, baseline=bool(info.get("baseline")))  # a --baseline run's gates
    if holder is not None or info.get("status") != "complete":
        typer.echo(f"warning: {run_dir}: {_partial_note(holder, info, log, plan)}", err=True)
    recorded = info.get("review") or {}
    path = review or (Path(recorded["file"]) if recorded.get("file") else None)
    rev = load_review(path) if path is not None else None
    if review is None and (note := _viewer_overrides_note(run_dir, path)):
        typer.echo(f"note: {note}", err=True)
    if rev is not None and rev.golds:
        if rev.describe()["sha256"] != recorded.get("sha256"):
            raise InputError(
                "the review file corrects golds, which needs scoring again: use "
                "`queryeval run --review FILE` (report re-scores nothing)",
                path=rev.path,
            )
        plan.cases = apply_golds(plan.cases, rev)  # applied when the run scored them
    baseline = load_baseline(
        suite,
        Path(info["baseline"]) if info.get("baseline") else None,
        [s.name for s in plan.systems],
    )
    writer = LogWriter(run_dir)
    if rev is None:
        summary = summarized(plan, log.records, baseline)
        writer.write_json(SUMMARY, summary)
    else:
        summary = reviewed_summary(plan, writer, rev, baseline)
        log = read_log(run_dir)  # the records with the review's overrides (review.json)
    log.summary = summary
    log.comparison = None
    if baseline is not None:
        log.comparison = compare_with_baseline(suite, baseline, log.records, run_dir)
        writer.write_json(COMPARISON, log.comparison)
    for kind, written in write_reports(suite, log, plan.cases, plan.scorers).items():
        typer.echo(f"{kind}: {written}")


def _viewer_overrides_note(run_dir: Path, recorded: Path | None) -> str | None:
    """What a report without --review does to the overrides `queryeval view` wrote into the
    run's review.json (it never applies them), or None when there are none."""
    from queryeval.log import REVIEW, REVIEWED_IN_VIEWER, read_review

    try:
        entries = (read_review(run_dir) or {}).get("records") or []
    except InputError:
        return None
    n = sum(
        1
        for e in entries
        for s in (e.get("scores") or {}).values()
        if (((s.get("details") or {}).get("review") or {}).get("source") == REVIEWED_IN_VIEWER)
    )
    if not n:
        return None
    done = (
        f"this report re-applies the run's review file {recorded} and writes review.json "
        "again from it, REPLACING them"
        if recorded is not None
        else "this report's figures leave them out (the stored scores)"
    )
    return (
        f"{run_dir / REVIEW} holds {n} verdict override(s) made in `queryeval view`; {done}. "
        "To apply them, save the viewer's review as a file (GET /api/runs/ID/review: its "
        f"`file`) and run `queryeval report {run_dir} --review FILE`"
    )


def _partial_note(holder: str | None, info: Mapping[str, Any], log: RunLog, plan: RunPlan) -> str:
    """Why the report is partial and how much it covers."""
    stored = len(log.records)
    expected = "" if info.get("selection") else f" of {len(plan.systems) * len(plan.cases)}"
    covers = f"this report is PARTIAL: {stored}{expected} (system, case) result(s) stored"
    if holder is not None:
        return f"the run is still in progress ({holder}); {covers} so far"
    return (
        f"the run did not complete (run.json status {info.get('status')!r}, and no run holds "
        f"the directory: it was stopped); {covers}; `queryeval run SUITE --out DIR --resume` "
        "finishes it"
    )
