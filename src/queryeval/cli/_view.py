"""`queryeval view [RUNS_DIR ...]`: the local web viewer over folders of runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def view_command(
    runs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="folders of runs (searched recursively); default: runs", show_default=False
        ),
    ] = None,
    host: Annotated[
        str,
        typer.Option(help="address to listen on; anything but loopback needs the printed token"),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port (0: a free one)")] = 0,
    index_dir: Annotated[
        Path | None,
        typer.Option(help="where the runs' indexes are kept (default: ~/.cache/queryeval/index)"),
    ] = None,
) -> None:
    """Serve a local web viewer of every run below RUNS_DIR: runs grouped by suite with
    trends, one run's figures, its cases with filters, one case, two systems or two runs side
    by side, and a review written to the run's review.json. Exit codes: 0 stopped, 2 bad
    input."""
    from queryeval.cli._app import fail_input
    from queryeval.errors import InputError

    roots = runs or [Path("runs")]
    for root in roots:
        if not root.is_dir():
            raise fail_input(InputError("not a folder", path=root))
    try:
        from queryeval.viewer import serve
    except ImportError as exc:  # starlette/uvicorn: the `view` extra
        raise fail_input(
            InputError(f"the viewer needs the view extra (pip install 'queryeval[view]'): {exc}")
        ) from None
    from queryeval.viewer import default_index_root

    where = index_dir or default_index_root()
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise fail_input(
            InputError(f"cannot write the runs' indexes here ({exc.strerror})", path=where,
                       where="--index-dir")
        ) from None  # fmt: skip
    try:
        viewer = serve(roots, host=host, port=port, index_root=index_dir)
    except OSError as exc:
        raise fail_input(InputError(f"cannot listen on {host}:{port}: {exc.strerror}")) from None
    typer.echo(f"queryeval view: {viewer.url}  (Ctrl-C stops)")
    if viewer.token:
        typer.echo(f"listening beyond loopback: every request needs the token {viewer.token}")
    viewer.serve()
