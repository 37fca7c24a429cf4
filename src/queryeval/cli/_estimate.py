"""`queryeval estimate SUITE.yaml`: judge calls and model-system calls not in cache, tokens and
cost; calls nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from queryeval.errors import InputError


def estimate_command(
    suite: Annotated[Path, typer.Argument(help="suite YAML file", show_default=False)],
    cache_dir: Annotated[
        Path | None,
        typer.Option("--cache-dir", help="cache folder (default: the suite's settings.cache_dir)"),
    ] = None,
) -> None:
    """Print how many judge calls and model-system calls a run would make (those not in
    cache), their estimated tokens and cost, without calling the judge or any system. Exit
    code 2 on bad input."""
    try:
        lines = estimate_lines(suite, cache_dir)
    except InputError as exc:
        typer.echo(f"error: {exc.render()}", err=True)
        raise typer.Exit(code=2) from None
    for line in lines:
        typer.echo(line)


def estimate_lines(suite: Path, cache_dir: Path | None = None) -> list[str]:
    """The lines `estimate` prints: one per model or endpoint system, the judge's estimate,
    then what to do or the split by rubric."""
    from queryeval.cases import load_cases
    from queryeval.judges import HOW_TO_CONFIGURE
    from queryeval.runner import load_suite
    from queryeval.scorers import ScoringContext, estimate
    from queryeval.systems import PredictionsFile, estimate_systems

    config = load_suite(suite)
    cases = load_cases(config.cases, config.base_dir)
    outputs = {
        system.name: PredictionsFile(config.resolve(system.predictions)).outputs
        for system in config.systems
        if system.predictions
    }
    if cache_dir is None and config.settings.cache_dir:
        cache_dir = config.resolve(config.settings.cache_dir)
    ctx = ScoringContext(config, cache_dir or Path.cwd() / ".queryeval-cache")
    try:
        lines = [system.line() for system in estimate_systems(config, cases, ctx)]
        result = estimate(config, cases, outputs, ctx=ctx)
    finally:
        ctx.close()
    lines.append(result.line())
    if result.model is None:
        lines.append(HOW_TO_CONFIGURE)
    elif result.by_rubric:
        listed = ", ".join(f"{name}: {n}" for name, n in sorted(result.by_rubric.items()))
        lines.append(f"judgments by rubric: {listed}")
    return lines
