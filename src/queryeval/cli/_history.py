"""`queryeval history RUNS_DIR...`: one HTML page over many stored runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def history_command(
    runs: Annotated[
        list[Path],
        typer.Argument(help="run directories, or folders of run directories", show_default=False),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="the HTML page to write")] = Path(
        "history.html"
    ),
    title: Annotated[str, typer.Option(help="page title")] = "queryeval — run history",
    alpha: Annotated[float, typer.Option(help="significance level of the diffs")] = 0.05,
    seed: Annotated[int, typer.Option(help="bootstrap seed of the diffs")] = 0,
    all_pairs_up_to: Annotated[
        int, typer.Option(help="diff every pair of runs up to this many runs")
    ] = 12,
) -> None:
    """Write one self-contained HTML page: the runs (suite, config hash, systems, headline
    figures), a trend chart per metric, and the diff of any two runs with the paired
    statistics of `queryeval compare`. Exit codes: 0 written, 2 bad input."""
    from queryeval.cli._app import fail_input
    from queryeval.errors import InputError
    from queryeval.reports import write_history
    from queryeval.viewer import index_diff

    if not 0 < alpha < 1:
        raise fail_input(InputError(f"alpha must be between 0 and 1, got {alpha}", where="--alpha"))
    try:
        path = write_history(
            runs,
            out,
            title=title,
            alpha=alpha,
            seed=seed,
            all_pairs_up_to=all_pairs_up_to,
            diff=index_diff(),  # from the runs' indexes: no run's records held in memory
        )
    except InputError as exc:
        raise fail_input(exc) from None
    typer.echo(f"history: {path}")
