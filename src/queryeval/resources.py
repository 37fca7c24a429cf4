"""What one run builds once and shares: engines, the judge, the embedder, memos of
executions and verdicts.

`RunResources` sits below the services (engines, judges, embeddings, kg), which keep what
they build in it, and below the scorers, whose `ScoringContext` extends it with typed
accessors (`ctx.engine(name)`, `ctx.judge()`, `ctx.embedder()`). The services never see the
scoring context; they see this store.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig

__all__ = ["RunResources"]

T = TypeVar("T")


class RunResources:
    """The suite, the cache folder, and a store of shared resources, each built once by its
    factory on first use (concurrent askers wait for the one build; lookups of built ones
    take no lock).

    >>> res = RunResources()
    >>> res.resource("answer", lambda: 42), res.resource("answer", lambda: 0)
    (42, 42)
    >>> res.close()
    """

    def __init__(self, suite: SuiteConfig | None = None, cache_dir: Path | None = None) -> None:
        self.suite = suite
        self.cache_dir = cache_dir or Path(".queryeval-cache")
        self._resources: dict[str, Any] = {}
        # DuckDB's threads in engines built from now on, where a database sets none (None:
        # DuckDB's default, every core): an executor running one engine per core lowers it
        self.engine_threads: int | None = None
        # re-entrant: a factory may ask for another resource (a KG validator for its engine)
        self._build_lock = threading.RLock()

    def resource(self, key: str, factory: Callable[[], T]) -> T:
        """The shared resource under `key`, built by `factory` on first use."""
        try:
            return self._resources[key]
        except KeyError:
            pass
        with self._build_lock:
            if key not in self._resources:
                self._resources[key] = factory()
            return self._resources[key]

    async def aclose(self) -> None:
        """Close the resources that need their event loop (`aclose`), inside it; the rest
        are closed by `close`."""
        for key, res in reversed(list(self._resources.items())):
            aclose = getattr(res, "aclose", None)
            if callable(aclose):
                with contextlib.suppress(Exception):
                    await aclose()
                self._resources.pop(key, None)

    def close_handles(self) -> None:
        """Close and forget the resources that hold something open (engines, connections,
        clients: whatever has `close`), newest first; plain data (memos, loaded files,
        settings made by a scorer's `prepare`) stays. Before a fork, so that no two
        processes share a connection: each opens its own on first use."""
        for key, res in reversed(list(self._resources.items())):
            close = getattr(res, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):  # closing is best effort
                    close()
                del self._resources[key]

    def flush(self) -> None:
        """Write out what the resources keep for later (`flush`: the gold cache's pending
        results, a reply cache), as a forked worker must before it may be ended; best
        effort, as `close` (they are caches)."""
        for res in list(self._resources.values()):
            flush = getattr(res, "flush", None)
            if callable(flush):
                with contextlib.suppress(Exception):
                    flush()

    def close(self) -> None:
        """Close every resource that can be closed (engines, clients), newest first, and
        forget them all."""
        self.close_handles()
        self._resources.clear()
