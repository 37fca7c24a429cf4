"""`queryeval replay RUN_DIR CASE_ID`: rebuild a verified_match counterexample's database
and show what the gold and the prediction return on it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer


def replay_command(
    run_dir: Annotated[Path, typer.Argument(help="a run directory", show_default=False)],
    case_id: Annotated[str, typer.Argument(help="the case's id", show_default=False)],
    system: Annotated[
        str | None, typer.Option(help="the system (default: every system with a witness)")
    ] = None,
    script: Annotated[
        Path | None, typer.Option(help="also write the witness's SQL script here")
    ] = None,
) -> None:
    """Rebuild the witness database of a case's counterexample (its CREATE and INSERT
    script, in a scratch SQLite file or in-memory DuckDB; a DuckDB file queried by the embedded
    KQL engine for KQL: your database is not touched),
    run the gold and the prediction on it read-only, and print the rows, the results and
    whether they are the ones stored. Exit codes: 0 replayed as stored, 1 a result differs
    from the stored one, 2 bad input (no run, no such case, no counterexample)."""
    from queryeval.cli._app import fail_input
    from queryeval.errors import InputError
    from queryeval.log import read_log

    try:
        log = read_log(run_dir)
        found = _witnesses(log.records, case_id, system)
    except InputError as exc:
        raise fail_input(exc) from None
    if not found:
        where = f"case {case_id}" + (f", system {system}" if system else "")
        raise fail_input(InputError(
            "no verified_match counterexample for this case (a case EX rejects, or one whose "
            "variants all agreed, has none)", path=run_dir, where=where))  # fmt: skip
    same = True
    for name, label, witness in found:
        same = _show(name, label, witness, script) and same
    raise typer.Exit(code=0 if same else 1)


def _witnesses(records: Any, case_id: str, system: str | None) -> list[tuple[str, str, Any]]:
    out = []
    for record in records:
        if record["case_id"] != case_id or (system is not None and record["system"] != system):
            continue
        for label, score in (record.get("scores") or {}).items():
            witness = (score.get("details") or {}).get("counterexample")
            if isinstance(witness, dict) and witness.get("script"):
                out.append((record["system"], label, witness))
    return out


def _show(system: str, label: str, witness: dict[str, Any], script: Path | None) -> bool:
    from rich.console import Console
    from rich.table import Table

    from queryeval.engines import Limits
    from queryeval.verify import replay, result_record

    console = Console()
    console.print(f"[bold]{system}[/bold] · {label} · variant: {witness.get('variant')} · "
                  f"{witness.get('rows')} row(s) · {witness.get('dialect')}")  # fmt: skip
    if script is not None:
        script.write_text(witness["script"], encoding="utf-8")
        console.print(f"script written to {script}")
    console.print(witness["script"], markup=False, highlight=False)
    for a in witness.get("assumptions") or []:
        console.print(f"assumes: {a.get('text')}", markup=False)
    queries = witness.get("queries") or {}
    runs = replay(witness["script"], str(witness["dialect"]), queries, Limits(),
                  witness.get("now"))  # fmt: skip
    same = True
    for name in ("gold", "prediction"):
        if name not in runs:
            continue
        record = result_record(runs[name])
        stored = witness.get(name) or {}
        matches = record.get("rows") == stored.get("rows")
        same = same and matches
        console.print(f"[bold]{name}[/bold]")
        console.print(str(queries.get(name)), markup=False, highlight=False)
        table = Table()
        for column in record.get("columns") or ["error"]:
            table.add_column(str(column))
        for row in record.get("rows") or ([[record["error"]]] if "error" in record else []):
            table.add_row(*("NULL" if v is None else str(v) for v in row))
        console.print(table)
        console.print(
            "  same as stored" if matches else "  [red]differs from the stored result[/red]"
        )
    return same
