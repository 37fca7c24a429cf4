"""What `queryeval run` does once its command line is parsed, by typer (`_app.run`) or
without it (`_run_line`): the same function, so both print and exit alike. It imports
neither typer nor click."""

from __future__ import annotations

import gc
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")  # click's strip_ansi


def echo(message: str, *, err: bool = False) -> None:
    """Print one line to stdout (`err`: stderr) and flush, as `typer.echo` prints text:
    ANSI style codes are removed unless the stream is a terminal. (`_run_line` uses it
    only where the streams encode UTF-8, where click writes them as they are.)

    >>> echo("run directory: \\x1b[1mruns/x\\x1b[0m")
    run directory: runs/x
    """
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # no stream to write to, as click.echo
        return
    text = f"{message}\n"
    if "\033" in text and not _isatty(stream):
        text = _ANSI.sub("", text)
    stream.write(text)
    stream.flush()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:  # as click's isatty
        return False


def run_command(
    suite: Path,
    out: Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = True,
    baseline: Path | None = None,
    junit: Path | None = None,
    cache: bool = True,
    strict: bool = False,
    review: Path | None = None,
    filter_: list[str] | None = None,
    limit: int | None = None,
    retry_errors: bool = False,
    executor: str | None = None,
    address: str | None = None,
    shards: int | None = None,
    *,
    echo: Callable[..., None] = echo,
) -> int:
    """Run a suite (see `queryeval run --help`) and return the exit code: 0, or 1 when a
    gate failed (or, with `strict`, a mean is flagged); bad input raises `InputError`.
    `echo(message, err=...)` prints a line (typer's under typer)."""
    from queryeval.cli import resume_gc
    from queryeval.config import ReportConfig
    from queryeval.runner import CaseSelection, default_out_dir, load_suite, run_suite

    extra = [ReportConfig(kind="junit", path=str(junit.resolve()))] if junit else []
    selection = CaseSelection(tuple(filter_ or ()), limit)
    config = load_suite(suite)
    if executor is not None or address is not None or shards is not None:
        from queryeval.runner import with_executor  # the Ray executor's module

        config = with_executor(config, executor, address=address, shards=shards)
    # this process only runs the suite and exits: what it has imported is frozen out of
    # the collector's scans for good (run_suite then leaves what it freezes frozen too,
    # and the exit's final collection has nothing large to scan); the collector, paused
    # for the imports by `queryeval.cli.main`, runs from here on
    gc.freeze()
    resume_gc()
    from queryeval.viewer import index_during  # lazy: imports nothing heavy

    # the index that `view`, `compare` and `history` read, built while the run runs and
    # ready when it ends (a cache: a failure to write it is a warning, and they build it
    # when they first read the run)
    with index_during(out if out is not None else default_out_dir(config)) as index:
        result = run_suite(
            config,
            out,
            resume=resume,
            overwrite=overwrite,
            progress=progress,
            baseline=baseline,
            extra_reports=extra,
            use_cache=cache,
            review=review,
            selection=selection,
            retry_errors=retry_errors,
        )
    if (problem := index.finish(result.out_dir)) is not None:
        echo(f"warning: the run's index (for view, compare, history): {problem}", err=True)
    echo(f"run directory: {result.out_dir}")
    echo(f"  results.jsonl: {result.new_records} new record(s), {result.skipped} resumed")
    for kind, path in result.reports.items():
        echo(f"  {kind}: {path}")
    if result.overlays:
        from queryeval.audit import overlay_lines

        for content in result.overlays:
            for line in overlay_lines(content):
                echo(line)
    failed = [g for g in result.gates if not g["passed"]]
    for g in failed:
        bound = f", bound {g['bound']}" if "bound" in g else ""
        note = f"; {g['note']}" if g.get("note") else ""
        echo(f"gate failed: {g['system']}: {g['gate']} (value {g['value']}{bound}{note})", err=True)
    flags = result.flags if strict else []
    for f in flags:
        echo(
            f"strict: {f['system']}: {f['scorer']}: {f['unscored_share']:.1%} of the cases "
            f"unscored or in error (settings.max_unscored_share "
            f"{config.settings.max_unscored_share:g})",
            err=True,
        )
    return 1 if failed or flags else 0
