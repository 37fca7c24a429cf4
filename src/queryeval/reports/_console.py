"""A rich console table of the summary: per system and scorer, means with 95% CIs."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _ci(ci: dict[str, Any] | None) -> str:
    if not ci or ci.get("method") == "degenerate":
        return ""
    return f"[{ci['low']:.3f}, {ci['high']:.3f}]"


_COMPACT_ABOVE = 4  # more systems (a grid): one row each instead of one table each


def _print_compact(summary: dict[str, Any], console: Console) -> None:
    """One row per system configuration: cases, pass rate, each scorer's mean."""
    systems = summary.get("systems", {})
    labels = list(next(iter(systems.values())).get("scorers", {})) if systems else []
    table = Table(
        title=f"{escape(str(summary.get('suite')))}: {len(systems)} configurations",
        title_justify="left",
    )
    table.add_column("system", no_wrap=True)
    for col in ("cases", "pass rate", *labels):
        table.add_column(escape(col), justify="right", no_wrap=True)
    for name, entry in systems.items():
        means = [_pct(entry.get("scorers", {}).get(label, {}).get("mean")) for label in labels]
        table.add_row(escape(name), str(entry["cases"]), _pct(entry.get("pass_rate")), *means)
    console.print(table)


def _print_scorer_tables(entry: dict[str, Any], console: Console) -> None:
    """Tables a scorer builds from its dataset figures (e.g. the agentic report)."""
    from queryeval.scorers import scorer_class

    for label, s in entry.get("scorers", {}).items():
        name = (s.get("scorer") or {}).get("name")
        if not name or not s.get("aggregate"):
            continue
        try:
            tables = scorer_class(name).report_tables(s["aggregate"])
        except KeyError:
            continue
        for title, rows in tables:
            if len(rows) < 2:
                continue
            table = Table(title=f"{escape(label)}: {escape(title)}", title_justify="left")
            for i, col in enumerate(rows[0]):
                table.add_column(escape(str(col)), justify="left" if i == 0 else "right")
            for row in rows[1:]:
                table.add_row(*(_cell(v) for v in row))
            console.print(table)


def _print_breakdowns(entry: dict[str, Any], console: Console) -> None:
    """Per hardness / difficulty / turn, when the cases carry those tags."""
    from queryeval.reports._breakdown import breakdowns

    for title, rows in breakdowns(entry):
        table = Table(title=escape(title), title_justify="left")
        for i, col in enumerate(rows[0]):
            table.add_column(escape(str(col)), justify="left" if i == 0 else "right")
        for row in rows[1:]:
            table.add_row(*(_cell(v) for v in row))
        console.print(table)


def _print_failures(entry: dict[str, Any], console: Console) -> None:
    """Per scorer: why outputs failed (0 in the mean), and a flagged unscored share."""
    from queryeval.cases import describe_failures
    from queryeval.reports._flag import flag_note

    for label, s in entry.get("scorers", {}).items():
        if s.get("failures"):
            text = describe_failures(s["failures"])
            console.print(f"{escape(label)}: failed {s.get('failed_outputs', 0)}: {escape(text)}")
        if s.get("flagged"):
            console.print(
                f"[red]⚠ {escape(label)}: {escape(flag_note(s))} "
                "(settings.max_unscored_share)[/red]"
            )


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return "—" if value is None else escape(str(value))


def print_summary(summary: dict[str, Any], console: Console | None = None) -> None:
    """Print one table per system, then the gates."""
    if console is None:
        import sys

        # a log file is not a terminal: give tables room instead of rich's 80 columns
        console = Console() if sys.stdout.isatty() else Console(width=120)
    systems = summary.get("systems", {})
    if len(systems) > _COMPACT_ABOVE:
        _print_compact(summary, console)
        systems = {}
    for name, entry in systems.items():
        table = Table(
            title=f"{escape(str(summary.get('suite')))} — {escape(name)}: {entry['cases']} cases, "
            f"pass rate {_pct(entry.get('pass_rate'))} {_ci(entry.get('pass_rate_ci95'))}"
            + (
                f" ⚠ {entry.get('no_verdict_share', 0):.0%} of the cases without a verdict"
                if entry.get("flagged")
                else ""
            ),
            title_justify="left",
        )
        table.add_column("scorer / metric", no_wrap=True, min_width=18)
        for col in ("mean", "95% CI", "ok", "failed", "unscored", "error", "pass rate"):
            table.add_column(col, justify="right", no_wrap=True)
        for label, s in entry.get("scorers", {}).items():
            mean = _pct(s.get("mean")) + (" [red]⚠[/red]" if s.get("flagged") else "")
            table.add_row(
                f"[bold]{label}[/bold]",
                mean,
                _ci(s.get("ci95")),
                str(s.get("ok", 0)),
                str(s.get("failed_outputs", 0)),
                str(s.get("unscored", 0)),
                str(s.get("error", 0)),
                _pct(s.get("pass_rate")),
            )
            for metric, m in s.get("metrics", {}).items():
                table.add_row(
                    f"  {metric}", _pct(m.get("mean")), _ci(m.get("ci95")), str(m["n"]), "", "",
                    "", "",
                )  # fmt: skip
        console.print(table)
        _print_failures(entry, console)
        if entry.get("system_errors"):
            console.print(
                f"[yellow]{entry['system_errors']} case(s) where the system failed[/yellow]"
            )
        _print_scorer_tables(entry, console)
        _print_breakdowns(entry, console)
        for label, s in entry.get("scorers", {}).items():
            for reason, count in (s.get("not_scored_reasons") or {}).items():
                console.print(f"[dim]{escape(label)}: {count} not scored: {escape(reason)}[/dim]")
    review = summary.get("review")
    if review:
        kappas = ", ".join(
            f"{escape(label)} kappa {a['kappa']:.3f}"
            for label, a in (review.get("agreement") or {}).items()
            if a.get("kappa") is not None
        )
        console.print(
            f"human review {escape(str(review.get('file')))}: {review.get('overrides', 0)} "
            f"override(s), {review.get('gold_corrections', 0)} gold correction(s)"
            + (f"; {kappas}" if kappas else "")
        )
    for gate in summary.get("gates", []):
        mark = "[green]PASS[/green]" if gate["passed"] else "[red]FAIL[/red]"
        note = f"; {escape(gate['note'])}" if gate.get("note") else ""
        console.print(
            f"gate {mark} {gate['system']}: {gate['gate']} (value {_pct(gate['value'])}{note})"
        )
