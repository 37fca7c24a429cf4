"""Serving the viewer: a socket bound first (so port 0 gives a known port), uvicorn on it,
and the runs indexed in the background while the pages are used."""

from __future__ import annotations

import socket
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from queryeval.viewer._app import build_app, needs_token, new_token
from queryeval.viewer._catalog import Catalog


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port); port 0 picks a free one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(64)
    return sock


def index_all(catalog: Catalog) -> None:
    """Build or bring up to date every run's index (a failure is the run's problem, shown
    on its page; it never stops the others)."""
    for run in catalog.runs():
        try:
            run.index.refresh()
        except Exception:
            continue


class Viewer:
    """A started viewer: its address, the token when one is needed, and `stop()`."""

    def __init__(
        self,
        roots: Sequence[Path],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        index_root: Path | None = None,
        background_index: bool = True,
    ) -> None:
        import uvicorn

        self.catalog = Catalog(list(roots), index_root)
        self.token = new_token() if needs_token(host) else None
        self.socket = bind(host, port)
        self.host, self.port = host, self.socket.getsockname()[1]
        app = build_app(self.catalog, token=self.token)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None
        if background_index:
            threading.Thread(target=index_all, args=(self.catalog,), daemon=True).start()

    @property
    def url(self) -> str:
        """The address to open (with the token when one is needed)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        base = f"http://{host}:{self.port}/"
        return f"{base}?token={self.token}" if self.token else base

    def serve(self) -> None:
        """Serve until interrupted (Ctrl-C)."""
        self.server.run(sockets=[self.socket])

    def start(self) -> Viewer:
        """Serve in a background thread (tests); returns self once it answers."""
        import time

        self._thread = threading.Thread(target=self.serve, daemon=True)
        self._thread.start()
        while not self.server.started:
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Stop a viewer started with `start()`."""
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.socket.close()


def serve(roots: Sequence[Path], **options: Any) -> Viewer:
    """A viewer over the runs below `roots` (not yet serving: call `serve()` or `start()`)."""
    return Viewer(roots, **options)
