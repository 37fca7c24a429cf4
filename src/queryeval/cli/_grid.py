"""`queryeval grid RUN_DIR`: the grid-search analysis of a stored run (seed 004): leaderboard
with bootstrap CIs, the side-by-side of methods, and the LLM judge's re-ranking of the top N."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from queryeval.errors import InputError

if TYPE_CHECKING:
    from queryeval.runner.grid import FinalRanking
    from queryeval.stats import Leaderboard

GRID_FILE = "grid.json"


def grid_command(
    run_dir: Annotated[Path, typer.Argument(help="a run directory", show_default=False)],
    rank_by: Annotated[
        str | None, typer.Option(help="scorer label that ranks the grid (default: the first)")
    ] = None,
    top_n: Annotated[
        int | None, typer.Option(help="configurations re-scored by the judge (default 5)")
    ] = None,
    judge: Annotated[bool, typer.Option(help="re-score the top N with the LLM judge")] = True,
) -> None:
    """Print the leaderboard and method comparison, and write grid.json into the run.

    Exit codes: 0 done, 2 bad input (not a run directory, unknown --rank-by, ...).
    """
    from queryeval.cli._app import fail_input

    try:
        report = grid_report(run_dir, rank_by=rank_by, top_n=top_n, judge=judge)
    except InputError as exc:
        raise fail_input(exc) from None
    for section in report["grids"].values():
        typer.echo(section["text"])
        typer.echo("")
    if not report["grids"]:
        typer.echo("no system in this run has more than one configuration (no `params` grid)")
    typer.echo(f"written: {Path(run_dir) / GRID_FILE}")


def grid_report(
    run_dir: Path, *, rank_by: str | None = None, top_n: int | None = None, judge: bool = True
) -> dict[str, Any]:
    """The grid analysis of a run as a JSON-able dict (also saved as grid.json)."""
    from queryeval.log import RUN, LogWriter, read_log
    from queryeval.stats import format_leaderboard, grid_section

    log = read_log(run_dir)
    info = log.info
    if info is None:
        raise InputError("not a run directory (no run.json)", path=run_dir)
    records = log.records
    labels = list(info.get("scorers") or {})
    if not labels:
        raise InputError("the run has no scorers", path=Path(run_dir) / RUN)
    settings = ((info.get("config") or {}).get("settings") or {}).get("grid") or {}
    rank_by = rank_by or settings.get("rank_by") or labels[0]
    if rank_by not in labels:
        raise InputError(
            f"no scorer labelled {rank_by!r} in this run; expected one of {', '.join(labels)}",
            where="--rank-by",
        )
    top_n = int(top_n or settings.get("top_n") or 5)
    seed = int(info.get("seed") or 0)
    sections = grid_section(records, [rank_by, *(x for x in labels if x != rank_by)], seed=seed)

    out: dict[str, Any] = {"rank_by": rank_by, "top_n": top_n, "grids": {}}
    for base, comparison in sections.items():
        board = comparison.leaderboards[rank_by]
        lines = [format_leaderboard(board, title=f"{base}: ranked by {rank_by}")]
        lines.append("")
        lines.append(
            "method picks: " + "; ".join(f"{m} -> {c}" for m, c in comparison.picks.items())
        )
        for corr in comparison.correlations:
            rho = f"{corr.spearman:.2f}" if corr.spearman is not None else "-"
            tau = f"{corr.kendall:.2f}" if corr.kendall is not None else "-"
            lines.append(
                f"rank correlation {corr.method_a} vs {corr.method_b}: "
                f"Spearman {rho}, Kendall {tau} (n = {corr.n_configs})"
            )
        for m, dist in comparison.distributions.items():
            half = comparison.share_at_half[m]
            plateau = f", {half:.0%} at 0.5" if half else ""
            lines.append(f"values of {m}: {dist}{plateau}")
        if comparison.note:
            lines.append(comparison.note)
        section: dict[str, Any] = comparison.to_dict()
        if judge:
            final = _judge_top(info, records, board, top_n)
            section["final_ranking"] = final.to_dict()
            lines.append("")
            if final.board is None:
                lines.append(f"LLM judge re-ranking of the top {top_n}: unscored ({final.message})")
            else:
                lines.append(format_leaderboard(final.board, title="final ranking by the judge"))
        section["text"] = "\n".join(lines)
        out["grids"][base] = section
    LogWriter(run_dir).write_json(GRID_FILE, out)
    return out


def _judge_top(
    info: Mapping[str, Any], records: Sequence[Mapping[str, Any]], board: Leaderboard, top_n: int
) -> FinalRanking:
    """The judge's ranking of the board's top N, from the outputs stored in the run."""
    import asyncio

    from pydantic import ValidationError

    from queryeval.cases import Output, load_cases
    from queryeval.config import SuiteConfig
    from queryeval.runner import cache_dir
    from queryeval.runner.grid import judge_top_configurations
    from queryeval.scorers import ScoringContext

    suite_file = info.get("suite_file")
    if not suite_file or not isinstance(info.get("config"), dict):
        raise InputError("run.json names no suite file or config; cannot judge its cases")
    # the configuration the run used (its judge, embeddings, seed), not today's suite file
    try:
        suite = SuiteConfig.model_validate(info["config"])
    except ValidationError as exc:
        raise InputError(f"run.json: unusable config ({exc.error_count()} problem(s))") from None
    suite.source = Path(suite_file)
    suite.base_dir = suite.source.parent
    cases = load_cases(suite.cases, suite.base_dir)
    wanted = set(board.top(top_n))
    outputs: dict[str, dict[str, Output]] = {}
    for rec in records:
        if rec["system"] in wanted and "output" in rec:
            outputs.setdefault(rec["system"], {})[str(rec["case_id"])] = Output.model_validate(
                rec["output"]
            )
    ctx = ScoringContext(suite, cache_dir=cache_dir(suite))
    try:
        return asyncio.run(
            judge_top_configurations(board, cases, outputs, ctx, top_n=top_n, seed=suite.seed)
        )
    finally:
        ctx.close()
