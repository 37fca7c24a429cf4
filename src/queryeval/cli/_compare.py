"""`queryeval compare RUN_A RUN_B`: paired comparison of two stored runs (B against A)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer


class CompareFormat(StrEnum):
    """Output formats of `queryeval compare`."""

    text = "text"
    md = "md"
    json = "json"


def compare_command(
    run_a: Annotated[
        Path, typer.Argument(help="reference run directory (the baseline)", show_default=False)
    ],
    run_b: Annotated[
        Path, typer.Argument(help="candidate run directory (may be RUN_A)", show_default=False)
    ],
    output_format: Annotated[
        CompareFormat, typer.Option("--format", "-f", help="text, md (pull request) or json")
    ] = CompareFormat.text,
    alpha: Annotated[float, typer.Option(help="significance level (CIs are 1 - alpha)")] = 0.05,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            help="metric to compare (repeatable): pass, a scorer, scorer.sub_metric; "
            "the first decides the verdict"
        ),
    ] = None,
    system: Annotated[
        list[str] | None,
        typer.Option(help="system to compare (repeatable): NAME, or A_NAME=B_NAME"),
    ] = None,
    seed: Annotated[int, typer.Option(help="bootstrap seed")] = 0,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="write to this file instead of stdout")
    ] = None,
    fail_on_worse: Annotated[
        bool, typer.Option(help="exit with code 1 when the verdict is 'worse'")
    ] = False,
) -> None:
    """Compare run B with run A case by case: paired bootstrap CIs of every metric's
    difference, McNemar's test on pass/fail, flipped cases and a verdict.

    Exit codes: 0 done, 1 worse (with --fail-on-worse), 2 bad input.
    """
    import orjson

    from queryeval.cli._app import fail_input
    from queryeval.errors import InputError
    from queryeval.reports import comparison_markdown, comparison_text
    from queryeval.stats import WORSE
    from queryeval.viewer import compare_dirs

    try:
        # from the runs' indexes (the viewer's): the statistics of `stats.compare_runs`
        # without holding every record of both runs in memory
        result = compare_dirs(
            run_a, run_b, systems=system or None, metrics=metric or None, alpha=alpha, seed=seed
        )
    except InputError as exc:
        raise fail_input(exc) from None
    data = result.as_dict()
    if output_format is CompareFormat.json:
        text = orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"
    elif output_format is CompareFormat.md:
        text = comparison_markdown(data)
    else:
        text = comparison_text(data)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        typer.echo(f"{result.verdict}: written to {out}")
    else:
        typer.echo(text, nl=False)
    if fail_on_worse and result.verdict == WORSE:
        raise typer.Exit(code=1)
