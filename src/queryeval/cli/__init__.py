"""Command line interface (typer)."""

from queryeval.cli._app import app, main

__all__ = ["app", "main"]
