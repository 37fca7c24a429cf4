"""A rich console table of the summary: per system and scorer, means with 95% CIs; above
four systems (a grid) one row per system, the breakdowns with systems as rows."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from queryeval.cases import CaseInfo

Tables = list[tuple[str, list[list[Any]]]]  # (title, header row + rows) of a report table


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _ci(ci: dict[str, Any] | None) -> str:
    if not ci or ci.get("method") == "degenerate":
        return ""
    return f"[{ci['low']:.3f}, {ci['high']:.3f}]"


_COMPACT_ABOVE = 4  # more systems (a grid): one row each instead of one table each
_NAMED_CASES = 5  # case ids named in "where the system failed" before "and N more"


def _print_compact(
    summary: Mapping[str, Any], console: Console, errors: Mapping[str, Sequence[str]]
) -> None:
    """One row per system configuration: cases, pass rate, each scorer's mean; then each
    system's failures (its name first) and every table with the systems as rows."""
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
    for name, entry in systems.items():
        prefix = f"{escape(name)}: "
        _print_failures(entry, console, prefix)
        if entry.get("system_errors"):
            console.print(_system_errors(entry["system_errors"], errors.get(name), prefix))
        _print_not_scored(entry, console, prefix)
    _print_by_system(systems, _scorer_tables, console)
    _print_by_system(systems, _breakdowns, console)


def _scorer_tables(entry: Mapping[str, Any]) -> Tables:
    """Tables the scorers build from their dataset figures (e.g. the agentic report)."""
    from queryeval.scorers import scorer_class

    out: Tables = []
    for label, s in entry.get("scorers", {}).items():
        name = (s.get("scorer") or {}).get("name")
        if not name or not s.get("aggregate"):
            continue
        try:
            tables = scorer_class(name).report_tables(s["aggregate"])
        except KeyError:
            continue
        out += [(f"{label}: {title}", rows) for title, rows in tables if len(rows) >= 2]
    return out


def _breakdowns(entry: Mapping[str, Any]) -> Tables:
    """Per hardness / difficulty / turn, when the cases carry those tags."""
    from queryeval.reports._breakdown import breakdowns

    return breakdowns(entry)


def _print_tables(tables: Tables, console: Console) -> None:
    """One system's tables: the first column left, the figures right."""
    for title, rows in tables:
        table = Table(title=escape(title), title_justify="left")
        for i, col in enumerate(rows[0]):
            table.add_column(escape(str(col)), justify="left" if i == 0 else "right")
        for row in rows[1:]:
            table.add_row(*(_cell(v) for v in row))
        console.print(table)


def _print_by_system(
    systems: Mapping[str, Mapping[str, Any]],
    tables_of: Callable[[Mapping[str, Any]], Tables],
    console: Console,
) -> None:
    """Every system's tables with the systems as rows: one table per title and header,
    a `system` column first, a section per system."""
    grouped: dict[tuple[str, tuple[str, ...]], list[tuple[str, list[list[Any]]]]] = {}
    for name, entry in systems.items():
        for title, rows in tables_of(entry):
            key = (title, tuple(str(col) for col in rows[0]))
            grouped.setdefault(key, []).append((name, rows[1:]))
    for (title, header), parts in grouped.items():
        table = Table(title=escape(title), title_justify="left")
        table.add_column("system", no_wrap=True)
        for i, col in enumerate(header):
            table.add_column(escape(col), justify="left" if i == 0 else "right")
        for name, rows in parts:
            for j, row in enumerate(rows):
                table.add_row(
                    escape(name) if j == 0 else "",
                    *(_cell(v) for v in row),
                    end_section=j == len(rows) - 1,
                )
        console.print(table)


def _print_failures(entry: Mapping[str, Any], console: Console, prefix: str = "") -> None:
    """Per scorer: why outputs failed (0 in the mean), and a flagged unscored share."""
    from queryeval.cases import describe_failures
    from queryeval.reports._flag import flag_note

    for label, s in entry.get("scorers", {}).items():
        if s.get("failures"):
            text = describe_failures(s["failures"])
            console.print(
                f"{prefix}{escape(label)}: failed {s.get('failed_outputs', 0)}: {escape(text)}"
            )
        if s.get("flagged"):
            console.print(
                f"[red]⚠ {prefix}{escape(label)}: {escape(flag_note(s))} "
                "(settings.max_unscored_share)[/red]"
            )


def _print_not_scored(entry: Mapping[str, Any], console: Console, prefix: str = "") -> None:
    """Per scorer: the reasons cases were not scored, with their counts."""
    for label, s in entry.get("scorers", {}).items():
        for reason, count in (s.get("not_scored_reasons") or {}).items():
            console.print(
                f"[dim]{prefix}{escape(label)}: {count} not scored: {escape(reason)}[/dim]"
            )


def _system_errors(n: int, ids: Sequence[str] | None, prefix: str = "") -> str:
    """`2 cases where the system failed: q1, q7` (the first few ids, then how many more).

    >>> _system_errors(7, [f"q{i}" for i in range(7)])
    '[yellow]7 cases where the system failed: q0, q1, q2, q3, q4 and 2 more[/yellow]'
    """
    text = f"{prefix}{n} {'case' if n == 1 else 'cases'} where the system failed"
    if ids:
        text += ": " + ", ".join(escape(i) for i in ids[:_NAMED_CASES])
        if len(ids) > _NAMED_CASES:
            text += f" and {len(ids) - _NAMED_CASES} more"
    return f"[yellow]{text}[/yellow]"


def system_error_cases(
    records: Iterable[Mapping[str, Any]], cases: Sequence[CaseInfo] = ()
) -> dict[str, list[str]]:
    """system -> the ids of the cases where the system failed (the record's `error`), in
    case order; the last record of a (system, case) counts, as in the summary.

    >>> system_error_cases([{"system": "s", "case_id": "b", "error": "boom"},
    ...                     {"system": "s", "case_id": "a", "error": "x"},
    ...                     {"system": "s", "case_id": "a", "error": None}])
    {'s': ['b']}
    """
    order = {case.id: i for i, case in enumerate(cases)}
    last: dict[tuple[str, str], bool] = {}
    for rec in records:
        last[(rec["system"], rec["case_id"])] = bool(rec.get("error"))
    out: dict[str, list[str]] = {}
    for (system, case_id), failed in last.items():
        if failed and (not order or case_id in order):
            out.setdefault(system, []).append(case_id)
    for ids in out.values():
        ids.sort(key=lambda i: order.get(i, len(order)))
    return out


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return "—" if value is None else escape(str(value))


def print_summary(
    summary: Mapping[str, Any],
    console: Console | None = None,
    error_cases: Mapping[str, Sequence[str]] | None = None,
    overlays: Sequence[Mapping[str, Any]] = (),
) -> None:
    """Print one table per system (above four systems: one row per system, the breakdowns
    with systems as rows), then each correction overlay's figures beside the original ones
    with the cases it changes (`overlays`: overlay-<name>.json's contents), then the gates.
    `error_cases`: system -> the ids of the cases where it failed (`system_error_cases`),
    named after the count."""
    if console is None:
        import sys

        # a log file is not a terminal: give tables room instead of rich's 80 columns
        console = Console() if sys.stdout.isatty() else Console(width=120)
    systems = summary.get("systems", {})
    errors = error_cases or {}
    if len(systems) > _COMPACT_ABOVE:
        _print_compact(summary, console, errors)
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
            console.print(_system_errors(entry["system_errors"], errors.get(name)))
        _print_tables(_scorer_tables(entry), console)
        _print_tables(_breakdowns(entry), console)
        _print_not_scored(entry, console)
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
    if overlays:
        from queryeval.audit import overlay_lines

        for content in overlays:
            for line in overlay_lines(content):
                console.print(line, markup=False, highlight=False, soft_wrap=True)
    for gate in summary.get("gates", []):
        mark = "[green]PASS[/green]" if gate["passed"] else "[red]FAIL[/red]"
        note = f"; {escape(gate['note'])}" if gate.get("note") else ""
        console.print(
            f"gate {mark} {gate['system']}: {gate['gate']} (value {_pct(gate['value'])}{note})"
        )
