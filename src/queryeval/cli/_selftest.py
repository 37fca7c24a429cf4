"""`queryeval selftest SUITE.yaml`: score every gold as the prediction with the suite's
scorers; report the ceiling.

Exit codes: 0 when every gold checked gets full marks; 1 when one does not (or, with
`strict`, when a gold is non-discriminating); 2 when the evaluator cannot do the check (a
database it cannot use, or nothing to check at all).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from queryeval.runner import SelftestReport

MAX_LINES = 20  # failure lines (one per reason); the rest are counted


def selftest_command(
    suite: Annotated[Path, typer.Argument(help="the suite YAML file", exists=True)],
    cache_dir: Annotated[
        Path, typer.Option(help="cache folder (gold results, fixture databases)")
    ] = Path(".queryeval-cache"),
    strict: bool = False,
) -> None:
    """Score each gold as if a system had answered with it; exit 1 when the ceiling < 1.0
    (and, with `strict`, when a gold is non-discriminating), 2 when nothing could be checked
    or a database cannot be used."""
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
    for line in report_lines(report):
        typer.echo(line)
    ceiling = report.ceiling
    typer.echo(
        f"{config.name}: {report.checked} gold(s) checked, {_below(report)} below full marks, "
        f"{sum(f.kind != 'order_dependent' for f in report.findings)} non-discriminating, "
        f"{sum(f.kind == 'order_dependent' for f in report.findings)} order-dependent, "
        f"{len(report.skipped)} case(s) without a "
        f"gold the scorers read; ceiling {shown(ceiling)}"
    )
    if report.trouble or ceiling is None:
        if ceiling is None and not report.trouble:
            typer.echo("nothing to self-test: no scorer of the suite could score any gold")
        raise typer.Exit(2)
    if ceiling < 1.0 or (strict and report.findings):
        raise typer.Exit(1)


def shown(ceiling: float | None) -> str:
    """A ceiling for a terminal: below 1 never shows as 1.000.

    >>> shown(1.0), shown(4969 / 4970), shown(0.5), shown(None)
    ('1.000', '0.9997', '0.500', 'n/a')
    """
    if ceiling is None:
        return "n/a"
    if ceiling < 1.0 and f"{ceiling:.3f}" == "1.000":
        return f"{math.floor(ceiling * 10_000) / 10_000:.4f}"
    return f"{ceiling:.3f}"


def _flat(text: str, limit: int = 300) -> str:
    """A reason on one line, cut after `limit` characters.

    >>> _flat("Catalog Error: no table!\\n\\nLINE 1: ...", limit=30)
    'Catalog Error: no table! LINE…'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _golds(golds: list[str]) -> str:
    """One gold as itself, several as their count and the first three."""
    if len(golds) == 1:
        return golds[0]
    return f"{len(golds)} golds ({', '.join(golds[:3])}{', ...' if len(golds) > 3 else ''})"


def _below(report: SelftestReport) -> int:
    return len({(i.case_id, i.gold) for i in report.failures})


def report_lines(report: SelftestReport) -> list[str]:
    """What the self-test found, a few lines at most per kind: failures grouped by scorer
    and reason (a reason shared by many golds is one line with their count), the ceiling
    per scorer, the scorers not self-tested, what could not be executed, and the evaluator's
    trouble once per database."""
    lines: list[str] = []
    # one line per reason: the golds that share it, and the scorers that gave it
    groups: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for item in report.failures:
        golds, scorers = groups.setdefault((item.status, item.explanation), ([], []))
        gold = f"{item.case_id} (gold {item.gold})"
        if gold not in golds:
            golds.append(gold)
        if item.scorer not in scorers:
            scorers.append(item.scorer)
    for n, ((status, why), (golds, scorers)) in enumerate(groups.items()):
        if n == MAX_LINES:
            rest = {g for gs, _ in list(groups.values())[MAX_LINES:] for g in gs}
            lines.append(f"  ... and {len(rest)} more gold(s) below full marks")
            break
        lines.append(f"  {_golds(golds)}: {', '.join(scorers)}: {status}: {_flat(why)}")
    # non-discriminating golds: one line per reason too (on empty tables every gold is one)
    found: dict[tuple[str, str], list[str]] = {}
    for finding in report.findings:
        found.setdefault((finding.kind, finding.message), []).append(
            f"{finding.case_id} (gold {finding.gold})"
        )
    for (kind, message), golds in list(found.items())[:MAX_LINES]:
        what = f"{kind.replace('_', ' ')}: {_flat(message)}"
        lines.append(f"  non-discriminating: {_golds(golds)}: {what}")
    if len(found) > MAX_LINES:
        more = sum(len(g) for g in list(found.values())[MAX_LINES:])
        lines.append(f"  ... and {more} more non-discriminating gold(s)")
    for check in report.scorers:
        if check.ceiling is not None:
            lines.append(
                f"  {check.label}: {check.checked} gold(s), ceiling {shown(check.ceiling)}"
            )
    for label, why in report.not_tested.items():
        lines.append(f"  {label}: not self-tested ({why})")
    if report.nothing_executable:
        lines.append(f"nothing executable: {report.nothing_executable}")
    elif report.not_executable:
        lines.append(
            f"  {report.not_executable} gold(s) not executed: their case names no database "
            "of the suite"
        )
    for database, why, left in report.trouble:
        lines.append(
            f"evaluator: database {database!r} cannot be used ({why}); {left} gold(s) not checked"
        )
    return lines
