"""`queryeval import FORMAT SRC... --out DIR`: a benchmark's files -> a suite directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from queryeval.errors import InputError


def _pairs(values: list[str], what: str) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise InputError(f"{what} {value!r}: expected NAME=VALUE")
        pairs.append((key.strip(), rest))
    return pairs


def _predictions(values: list[str]) -> list[tuple[str, Path]]:
    """`--predictions FILE` (system named after the file) or `--predictions NAME=FILE`."""
    found: list[tuple[str, Path]] = []
    for value in values:
        name, sep, rest = value.partition("=")
        if sep and name and not Path(value).exists():
            found.append((name.strip(), Path(rest)))
        else:
            found.append((Path(value).stem, Path(value)))
    names = [n for n, _ in found]
    for name in names:
        if names.count(name) > 1:
            raise InputError(f"--predictions: two systems named {name!r}; use NAME=FILE")
    for _, path in found:
        if not path.exists():
            raise InputError("predictions not found", path=path)
    return found


def import_command(
    format: Annotated[
        str, typer.Argument(help="benchmark format (see `queryeval import --list`)")
    ] = "",
    sources: Annotated[
        list[Path] | None,
        typer.Argument(help="the downloaded files or folders", show_default=False),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="suite folder to write")] = None,
    predictions: Annotated[
        list[str] | None,
        typer.Option(
            "--predictions", "-p", help="a system's predictions: FILE or NAME=FILE (repeatable)"
        ),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option("--set", help="a format option KEY=VALUE (repeatable)"),
    ] = None,
    name: Annotated[str | None, typer.Option(help="suite name")] = None,
    overwrite: Annotated[bool, typer.Option(help="replace a suite already in --out")] = False,
    list_formats: Annotated[bool, typer.Option("--list", help="list the formats")] = False,
) -> None:
    """Write a suite (suite.yaml, cases, databases, predictions) from a benchmark's files.

    Exit codes: 0 written, 2 bad input (the error names the file and the place).
    """
    from queryeval.cli._app import fail_input
    from queryeval.importers import ImportRequest, check_out, formats, run_import

    if list_formats or not format:
        for key, summary in formats().items():
            typer.echo(f"{key:16} {summary}")
        return
    try:
        if out is None:
            raise InputError("--out DIR is required")
        if not sources:
            raise InputError(f"{format}: give the downloaded files or folders to import")
        for source in sources:
            if not source.exists():
                raise InputError("not found", path=source)
        check_out(out, overwrite=overwrite)
        request = ImportRequest(
            sources=list(sources),
            out=out,
            predictions=_predictions(predictions or []),
            options=dict(_pairs(option or [], "--set")),
            name=name,
        )
        suite = run_import(format, request, overwrite=overwrite)
    except InputError as exc:
        raise fail_input(exc) from None
    typer.echo(f"suite: {out / 'suite.yaml'}")
    typer.echo(
        f"  {len(suite.cases)} case(s), {len(suite.databases)} database(s), "
        f"system(s): {', '.join(suite.predictions) or 'gold (every gold as the prediction)'}"
    )
    if suite.preset:
        typer.echo(f"  preset: {suite.preset}")
    for note in suite.notes:
        typer.echo(f"  note: {note}")
    typer.echo(f"next: queryeval run {out / 'suite.yaml'}")
