"""`queryeval audit SUITE --out DIR`: find broken golds (docs/audit.md).

Exit codes: 0 done (findings or not), 1 a finding of a kind named in `--fail-on`, 2 bad
input (the suite, a predictions file, an unknown kind) or a database of the suite that cannot
be used (its golds are not checked; the report is written all the same).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

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
    suite: Annotated[
        Path | None, typer.Argument(help="the suite YAML file", show_default=False)
    ] = None,
    run_dir: Annotated[
        Path | None, typer.Argument(help="a finished run of the suite", show_default=False)
    ] = None,
    overlay: Annotated[
        list[Path] | None,
        typer.Option(help="an overlay file (repeatable; default: the suite's `overlays:`)"),
    ] = None,
    from_review: Annotated[
        Path | None,
        typer.Option(
            help="write an overlay (--out) from a human review's gold corrections: a run's "
            "review.json (or its folder), or a review file (YAML); SUITE, when given, "
            "checks the case ids"
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="with --from-review: the overlay to write")
    ] = None,
    cache_dir: Annotated[
        Path, typer.Option(help="cache folder (gold results, fixture databases)")
    ] = Path(".queryeval-cache"),
) -> None:
    """Re-score a finished run under correction overlays (from its stored outputs: no
    system is called): write RUN_DIR/overlay-<name>.json and print both figures side by
    side. The run's own files are not touched. With --from-review REVIEW --out FILE: write
    an overlay from a review's gold corrections instead (the viewer's proposals `proposed`,
    the golds a run applied not). Exit 0 done, 2 bad input."""
    from queryeval.cli._app import fail_input
    from queryeval.errors import InputError

    try:
        if from_review is not None:
            if out is None:
                raise InputError("expected --out FILE (the overlay to write)", where="--out")
            if run_dir is not None:
                raise InputError(
                    "with --from-review, give at most SUITE (to check the case ids)",
                    where="RUN_DIR",
                )
            _from_review(from_review, out, suite)
            return
        if suite is None or run_dir is None:
            raise InputError("expected SUITE RUN_DIR (or --from-review REVIEW --out FILE)")
        _overlay(suite, run_dir, overlay or [], cache_dir)
    except InputError as exc:
        raise fail_input(exc) from None


def _from_review(path: Path, out: Path, suite: Path | None) -> None:
    import orjson

    from queryeval.audit import file_provenance, merge_entries, review_entries, write_overlay_file
    from queryeval.config import load_overlay
    from queryeval.errors import InputError
    from queryeval.log import REVIEW
    from queryeval.runner import load_review

    if path.is_dir():
        path = path / REVIEW
    if not path.is_file():
        raise InputError("no such review file", path=path, where="--from-review")
    applied: list[dict[str, Any]] = []
    proposals: list[dict[str, Any]] = []
    if path.suffix.lower() == ".json":  # a run's review.json
        try:
            review = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc}", path=path) from None
        if not isinstance(review, dict) or not isinstance(review.get("golds") or [], list):
            raise InputError("expected a review.json (a mapping; `golds` a list)", path=path)
        run = _read_run(path.parent)
        applied_file = (run.get("review") or {}).get("file")
        if applied_file and Path(applied_file).is_file():  # the review file the run applied
            golds = [vars(g) for g in load_review(applied_file).golds]
            applied = review_entries(
                golds, proposed=False, source=f"review {applied_file} (applied by the run "
                f"{path.parent.name})", at=run.get("started_at")
            )  # fmt: skip
        proposals = review_entries(
            review.get("golds") or [], proposed=True, source=f"review {path} (queryeval view)"
        )
        applied_golds = {(e["case_id"], str(e["gold"])) for e in applied}
        proposals = [p for p in proposals if (p["case_id"], str(p["gold"])) not in applied_golds]
    else:  # a review file: what `run --review` applies
        golds = [vars(g) for g in load_review(path).golds]
        applied = review_entries(golds, proposed=False, source=f"review {path}")
    entries = merge_entries(applied, proposals)
    if suite is not None:
        _check_ids(suite, [e["case_id"] for e in entries], path)
    write_overlay_file(
        entries, out, provenance=file_provenance(path, made_by="queryeval overlay --from-review")
    )
    load_overlay(out)  # what was written reads back as an overlay
    n = sum(1 for e in entries if e.get("proposed"))
    typer.echo(f"overlay: {out} ({len(entries)} entr(y/ies), {n} proposed)")


def _read_run(run_dir: Path) -> dict[str, Any]:
    import orjson

    from queryeval.log import RUN

    path = run_dir / RUN
    try:
        data = orjson.loads(path.read_bytes()) if path.is_file() else {}
    except orjson.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def _check_ids(suite: Path, ids: list[str], review: Path) -> None:
    from queryeval.cases import load_cases
    from queryeval.errors import InputError
    from queryeval.runner import load_suite

    config = load_suite(suite)
    known = {c.id for c in load_cases(config.cases, config.base_dir)}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise InputError(
            f"case(s) not in the suite {suite}: {', '.join(unknown[:10])}", path=review
        )


def _overlay(suite: Path, run_dir: Path, files: list[Path], cache_dir: Path) -> None:
    from queryeval.audit import apply_overlay, overlay_lines
    from queryeval.cases import load_cases
    from queryeval.config import load_overlay, load_overlays
    from queryeval.errors import InputError
    from queryeval.log import RESULTS, SUMMARY
    from queryeval.runner import load_suite
    from queryeval.scorers import ScoringContext

    for name in (RESULTS, SUMMARY):
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
