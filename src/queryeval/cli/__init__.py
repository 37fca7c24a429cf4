"""Command line interface (typer). `queryeval --help` is answered without importing typer
(`_help.HELP`); every other command line goes to the typer app (`app`, imported on first
use), built with only the command the line names (`_app.app_for`)."""

from __future__ import annotations

import gc
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from queryeval.cli._app import app

__all__ = ["app", "main"]

_gc_paused = False


def resume_gc() -> None:
    """Turn the cyclic collector back on if `main` paused it for the imports (a no-op
    otherwise, e.g. for an app invoked by a test)."""
    global _gc_paused
    if _gc_paused:
        _gc_paused = False
        gc.enable()


def _columns() -> int:
    """The terminal's width as click measures it (COLUMNS, else the terminal, else 80)."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


def main() -> None:
    """Entry point of the `queryeval` script."""
    # the command owns its process: numpy's OpenBLAS one thread (see _app.main), set before
    # numpy is first imported
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # pydantic looks for plugins before its first model: a read of every installed
    # distribution's entry points, 0.03-0.07 s of CPU of every command (issue 31). The
    # command offers its models to none; PYDANTIC_DISABLE_PLUGINS set to anything else in
    # the environment (empty: every plugin) is left as it is.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if sys.argv[1:] == ["--help"] and _columns() >= 80:  # the text typer prints at 80+
        from queryeval.cli._help import HELP

        sys.stdout.write(HELP)
        sys.stdout.flush()
        return
    # The imports before a command runs (typer, pydantic, numpy, the suite's models) leave
    # almost no cyclic garbage (under 1,000 objects) but trigger ~80 collections of the
    # young generations: 0.02-0.06 s of CPU of a small run (issue 31). The collector is
    # paused until the command starts its work (`resume_gc`: `run` after loading the suite,
    # every other command before typer parses its line) and always on again after it.
    global _gc_paused
    if gc.isenabled():
        gc.disable()
        _gc_paused = True
    try:
        from queryeval.cli._app import main as run_app

        run_app()
    finally:
        resume_gc()


def __getattr__(name: str) -> Any:
    if name == "app":
        from queryeval.cli._app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
