"""`queryeval selftest SUITE.yaml`: run every gold as the prediction; report the ceiling."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def selftest_command(
    suite: Annotated[Path, typer.Argument(help="the suite YAML file", exists=True)],
    cache_dir: Annotated[
        Path, typer.Option(help="cache folder (gold results, fixture databases)")
    ] = Path(".queryeval-cache"),
    strict: bool = False,
) -> None:
    """Run each gold query as if a system had predicted it; exit 1 when the ceiling < 1.0
    (and, with `strict`, when a gold is non-discriminating)."""
    from queryeval.cases import load_cases
    from queryeval.runner import load_suite, selftest
    from queryeval.scorers import ScoringContext

    config = load_suite(suite)
    cases = load_cases(config.cases, config.base_dir)
    ctx = ScoringContext(config, cache_dir=cache_dir)
    try:
        report = selftest(config, cases, ctx)
    finally:
        ctx.close()
    for item in report.failures:
        typer.echo(f"  {item.case_id} (gold {item.gold}): {item.status}: {item.explanation}")
    for finding in report.findings:
        typer.echo(f"  non-discriminating: {finding.line()}")
    ceiling = report.ceiling
    shown = "n/a" if ceiling is None else f"{ceiling:.3f}"
    typer.echo(
        f"{config.name}: {report.checked} gold queries checked, {len(report.failures)} failed, "
        f"{len(report.findings)} non-discriminating, {len(report.skipped)} cases without a "
        f"gold query; ceiling {shown}"
    )
    if (ceiling is not None and ceiling < 1.0) or (strict and report.findings):
        raise typer.Exit(1)
