"""Command line interface (typer). `queryeval --help` is answered without importing typer
(`_help.HELP`); every other command line goes to the typer app (`app`, imported on first
use), built with only the command the line names (`_app.app_for`)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from queryeval.cli._app import app

__all__ = ["app", "main"]


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
    from queryeval.cli._app import main as run_app

    run_app()


def __getattr__(name: str) -> Any:
    if name == "app":
        from queryeval.cli._app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
