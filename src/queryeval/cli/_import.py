"""`queryeval import FORMAT SRC... --out DIR`: a benchmark's files -> a suite directory."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

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


# `queryeval import FORMAT --help` prints that format's help: the command reads --help itself
IMPORT_CONTEXT: dict[str, Any] = {"help_option_names": []}


def import_command(
    ctx: typer.Context,
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
        typer.Option(
            "--set",
            help="a format option KEY=VALUE, or a scorer's option [SCORER.]OPTION=VALUE (bare: "
            "every scorer that takes it; repeatable; `queryeval import FORMAT --help` lists them)",
        ),
    ] = None,
    skip_missing: Annotated[
        bool,
        typer.Option(
            "--skip-missing", help="leave out (and report) questions whose database is absent"
        ),
    ] = False,
    name: Annotated[str | None, typer.Option(help="suite name")] = None,
    overwrite: Annotated[bool, typer.Option(help="replace a suite already in --out")] = False,
    list_formats: Annotated[bool, typer.Option("--list", help="list the formats")] = False,
    show_help: Annotated[
        bool, typer.Option("--help", "-h", help="this help; after FORMAT, that format's")
    ] = False,
) -> None:
    """Write a suite (suite.yaml, cases, databases, predictions) from a benchmark's files.

    Exit codes: 0 written, 2 bad input (the error names the file and the place).
    """
    from queryeval.cli._app import fail_input
    from queryeval.importers import ImportRequest, check_out, formats, importer, write_suite

    if show_help and not format:
        typer.echo(ctx.get_help())
        return
    if list_formats or not format:
        for key, summary in formats().items():
            typer.echo(f"{key:16} {summary}")
        return
    try:
        module = importer(format)
        if show_help:
            typer.echo(format_help(format, module))
            return
        if out is None:
            raise InputError("--out DIR is required")
        if not sources:
            raise InputError(f"{format}: give the downloaded files or folders to import")
        for source in sources:
            if not source.exists():
                raise InputError("not found", path=source)
        if skip_missing and not getattr(module, "SKIPS_MISSING", False):
            raise InputError(f"--skip-missing: {format} has no per-question databases to skip")
        check_out(out, overwrite=overwrite)
        format_options, scorer_options = _split_options(
            _pairs(option or [], "--set"), getattr(module, "OPTIONS", None)
        )
        request = ImportRequest(
            sources=list(sources),
            out=out,
            predictions=_predictions(predictions or []),
            options=format_options,
            name=name,
            skip_missing=skip_missing,
        )
        suite = module.build(request)
        applied = apply_scorer_options(suite, scorer_options, getattr(module, "OPTIONS", None))
        write_suite(suite, out, overwrite=overwrite)
    except InputError as exc:
        raise fail_input(exc) from None
    typer.echo(f"suite: {out / 'suite.yaml'}")
    typer.echo(
        f"  {len(suite.cases)} case(s), {len(suite.databases)} database(s), "
        f"system(s): {', '.join(suite.predictions) or 'gold (every gold as the prediction)'}"
    )
    for line in _preset_lines(suite.preset, suite.leaderboard):
        typer.echo(f"  {line}")
    for line in applied:
        typer.echo(f"  scorer option: {line}")
    for note in suite.notes:
        typer.echo(f"  note: {note}")
    typer.echo(f"next: queryeval run {out / 'suite.yaml'}")


def _preset_lines(preset: str | None, leaderboard: str | None) -> list[str]:
    """What the suite is scored by, and where the leaderboards' figures come from.

    >>> _preset_lines("spider", "spider_legacy")[1]
    "leaderboard figures: preset spider_legacy (the official scripts' verdicts): import \
with --set preset=spider_legacy"
    """
    if not preset:
        return []
    if leaderboard is None:
        return [f"preset: {preset}"]
    if preset == leaderboard:
        return [f"preset: {preset} (the leaderboards' figures: the official scripts' verdicts)"]
    return [
        f"preset: {preset} (queryeval's conventions)",
        f"leaderboard figures: preset {leaderboard} (the official scripts' verdicts): import "
        f"with --set preset={leaderboard}",
    ]


def _split_options(
    pairs: list[tuple[str, str]], known: Mapping[str, str] | None
) -> tuple[dict[str, str], list[tuple[str | None, str, str]]]:
    """(the format's options, scorer options as (scorer or None, option, value)): a dotted
    key is a scorer's; a bare key the format does not list goes to the scorers."""
    format_options: dict[str, str] = {}
    scorer_options: list[tuple[str | None, str, str]] = []
    for key, value in pairs:
        target, dot, option = key.rpartition(".")
        if dot:
            if not target or not option:
                raise InputError(f"--set {key}: expected SCORER.OPTION=VALUE")
            scorer_options.append((target, option, value))
        elif known is not None and key not in known:
            scorer_options.append((None, key, value))
        else:
            format_options[key] = value
    return format_options, scorer_options


def apply_scorer_options(
    suite: Any, options: list[tuple[str | None, str, str]], known: Mapping[str, str] | None = None
) -> list[str]:
    """Set each scorer option in the suite's scorers (written out from the preset when the
    suite had none), checked against the scorer's own options; returns what was set."""
    import yaml
    from pydantic import ValidationError

    from queryeval.config import PRESETS
    from queryeval.scorers import scorer_class

    if not options:
        return []
    scorers = suite.suite.get("scorers")
    if scorers is None:
        scorers = copy.deepcopy(PRESETS.get(suite.preset or "", {}).get("scorers", []))
    applied = []
    for target, option, text in options:
        fields = {
            i: scorer_class(entry["name"]).Options.model_fields
            for i, entry in enumerate(scorers)
            if isinstance(entry, dict) and "name" in entry
        }
        if target is None:
            hits = [i for i, f in fields.items() if option in f]
            if not hits:
                raise InputError(
                    f"--set {option}: not an option of this format "
                    f"({', '.join(known or {}) or 'it has none'}) nor of its scorers "
                    f"({', '.join(_labels(scorers))})"
                )
        else:
            hits = [i for i in fields if target in (scorers[i].get("id"), scorers[i]["name"])]
            if not hits:
                raise InputError(
                    f"--set {target}.{option}: no scorer {target!r} in this suite; its scorers: "
                    f"{', '.join(_labels(scorers))}"
                )
        if target is not None and len(hits) > 1:
            raise InputError(f"--set {target}.{option}: several scorers are named {target!r}")
        for i in hits:  # a bare option: every scorer of the suite that takes it
            entry = scorers[i]
            if option not in fields[i]:
                raise InputError(
                    f"--set {_label(entry)}.{option}: {entry['name']} has no option "
                    f"{option!r}; its options: {', '.join(fields[i])}"
                )
            value = yaml.safe_load(text) if text.strip() else text
            merged = {**(entry.get("options") or {}), option: value}
            try:
                scorer_class(entry["name"]).Options.model_validate(merged)
            except ValidationError as error:
                problem = error.errors()[0]
                raise InputError(
                    f"--set {_label(entry)}.{option}={text}: {problem['msg']}"
                ) from None
            entry["options"] = merged
            applied.append(f"{_label(entry)}.{option} = {value!r}")
    suite.suite["scorers"] = scorers
    return applied


def _label(entry: Mapping[str, Any]) -> str:
    return str(entry.get("id") or entry["name"])


def _labels(scorers: list[Any]) -> list[str]:
    return [_label(e) for e in scorers if isinstance(e, dict) and "name" in e]


def format_help(name: str, module: Any) -> str:
    """A format's help: its sources (the module's text), its options and its scorers'."""
    from queryeval.scorers import scorer_class

    lines = [f"queryeval import {name} SRC... --out DIR [--predictions [NAME=]FILE]... "
             "[--set KEY=VALUE]...", ""]  # fmt: skip
    lines.append(str(getattr(module, "SUMMARY", "")))
    lines += ["", (getattr(module, "HELP", None) or module.__doc__ or "").strip(), ""]
    options = getattr(module, "OPTIONS", None)
    if options is not None:
        lines.append("Format options (--set KEY=VALUE):")
        lines += [f"  {k}: {v}" for k, v in options.items()] or ["  none"]
        lines.append("")
    if getattr(module, "SKIPS_MISSING", False):
        lines += ["--skip-missing: leave out (and report) questions whose database is absent", ""]
    scorers = getattr(module, "SCORERS", ())
    if scorers:
        lines.append("Scorer options (--set SCORER.OPTION=VALUE; OPTION=VALUE sets it in every "
                     "scorer of the suite that takes it):")  # fmt: skip
        for scorer in scorers:
            for field, info in scorer_class(scorer).Options.model_fields.items():
                text = f": {info.description}" if info.description else ""
                lines.append(f"  {scorer}.{field}{text}")
    return "\n".join(lines).rstrip() + "\n"
