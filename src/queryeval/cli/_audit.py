"""`queryeval audit SUITE --out DIR`: find broken golds (docs/audit.md).

Exit codes: 0 done (findings or not), 1 a finding of a kind named in `--fail-on`, 2 bad
input (the suite, a predictions file, an unknown kind) or a database of the suite that cannot
be used (its golds are not checked; the report is written all the same).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def audit_command(
    suite: Annotated[Path, typer.Argument(help="the suite YAML file", show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="folder for audit.json, audit.html")],
    predictions: Annotated[
        list[Path] | None,
        typer.Option(
            help="a finished run folder (its results.jsonl) or a predictions JSONL file "
            "(case_id, query; the file's stem names the system); repeatable: for `disputed`"
        ),
    ] = None,
    systems: Annotated[
        str | None,
        typer.Option(
            help="comma-separated systems of the suite with saved predictions to read "
            "for `disputed` (default with no --predictions: every such system)"
        ),
    ] = None,
    agree: Annotated[
        int, typer.Option(help="`disputed`: this many systems agreeing against the gold")
    ] = 3,
    fail_on: Annotated[
        str | None,
        typer.Option(help="comma-separated kinds: exit 1 when a finding of one is made"),
    ] = None,
    write_overlay: Annotated[
        Path | None,
        typer.Option(help="draft an overlay (YAML) from the findings, entries `proposed`"),
    ] = None,
    cache_dir: Annotated[
        Path, typer.Option(help="cache folder (gold results, fixture databases)")
    ] = Path(".queryeval-cache"),
) -> None:
    """Audit a suite's golds: gold_fails, nondeterministic, non_discriminating,
    unknown_literal, disputed, conflicting_golds; write DIR/audit.json and DIR/audit.html
    and print the findings. Exit 0 with findings, 1 with a finding of a `--fail-on` kind,
    2 bad input."""
    from queryeval.cli._app import fail_input
    from queryeval.errors import InputError

    try:
        code = _audit(
            suite, out, predictions or [], systems, agree, fail_on, write_overlay, cache_dir
        )
    except InputError as exc:
        raise fail_input(exc) from None
    if code:
        raise typer.Exit(code)


def _audit(
    suite: Path,
    out: Path,
    predictions: list[Path],
    systems: str | None,
    agree: int,
    fail_on: str | None,
    write_overlay: Path | None,
    cache_dir: Path,
) -> int:
    from queryeval.audit import KINDS, audit_suite, console_lines, draft_overlay, write_report
    from queryeval.cases import load_cases
    from queryeval.errors import InputError
    from queryeval.runner import load_suite
    from queryeval.scorers import ScoringContext

    kinds = [k.strip() for k in (fail_on or "").split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise InputError(
            f"unknown kind(s) {', '.join(unknown)}; expected some of {', '.join(KINDS)}",
            where="--fail-on",
        )
    if agree < 2:
        raise InputError("expected at least 2", where="--agree")
    config = load_suite(suite)
    cases = load_cases(config.cases, config.base_dir)
    chosen = [s.strip() for s in systems.split(",") if s.strip()] if systems else None
    ctx = ScoringContext(config, cache_dir=cache_dir)
    try:
        report = audit_suite(
            config, cases, ctx, predictions=predictions, systems=chosen, agree=agree
        )
    finally:
        ctx.close()
    write_report(report, out)
    for line in console_lines(report):
        typer.echo(line)
    if write_overlay is not None:
        draft_overlay(report, write_overlay)
        typer.echo(f"overlay draft: {write_overlay} ({len(report.findings)} finding(s))")
    if report.unusable:  # the evaluator's trouble: the audit is incomplete
        typer.echo(f"error: database(s) {', '.join(report.unusable)} cannot be used", err=True)
        return 2
    if kinds and any(f.kind in kinds for f in report.findings):
        return 1
    return 0


def overlay_command(
    suite: Annotated[Path, typer.Argument(help="the suite YAML file", show_default=False)],
    run_dir: Annotated[
        Path, typer.Argument(help="a finished run of the suite", show_default=False)
    ],
    overlay: Annotated[
        list[Path] | None,
        typer.Option(help="an overlay file (repeatable; default: the suite's `overlays:`)"),
    ] = None,
    cache_dir: Annotated[
        Path, typer.Option(help="cache folder (gold results, fixture databases)")
    ] = Path(".queryeval-cache"),
) -> None:
    """Re-score a finished run under correction overlays (from its stored outputs: no
    system is called): write RUN_DIR/overlay-<name>.json and print both figures side by
    side. The run's own files are not touched. Exit 0 done, 2 bad input."""
    from queryeval.cli._app import fail_input
    from queryeval.errors import InputError

    try:
        _overlay(suite, run_dir, overlay or [], cache_dir)
    except InputError as exc:
        raise fail_input(exc) from None


def _overlay(suite: Path, run_dir: Path, files: list[Path], cache_dir: Path) -> None:
    from queryeval.audit import apply_overlay, overlay_lines
    from queryeval.cases import load_cases
    from queryeval.config import load_overlay, load_overlays
    from queryeval.errors import InputError
    from queryeval.runner import load_suite
    from queryeval.scorers import ScoringContext

    for name in ("results.jsonl", "summary.json"):
        if not (run_dir / name).is_file():
            raise InputError(f"expected a finished run ({name} missing)", path=run_dir)
    config = load_suite(suite)
    overlays = [load_overlay(f) for f in files] if files else load_overlays(config)
    if not overlays:
        raise InputError(
            "no overlay: the suite lists none (overlays:) and no --overlay given", path=suite
        )
    cases = load_cases(config.cases, config.base_dir)
    ctx = ScoringContext(config, cache_dir=cache_dir)
    try:
        for item in overlays:
            for line in overlay_lines(apply_overlay(run_dir, config, cases, item, ctx)):
                typer.echo(line)
    finally:
        ctx.close()
