"""Coalesce concurrent one-text encode requests into batched Embedder calls.

Scorers see one case at a time, but a model encodes a batch of 64 far faster than 64 single
texts; this lets per-case `async score` calls share batches, like a dynamic batching server.
"""

from __future__ import annotations

import asyncio

import numpy as np

from queryeval.embeddings._embedder import Embedder


class EncodeBatcher:
    """`await batcher.encode(text)` -> the text's unit vector. Requests that arrive while a
    batch is being encoded (in a worker thread) form the next batch."""

    def __init__(self, embedder: Embedder, *, max_batch: int = 8192) -> None:
        self.embedder = embedder
        self.max_batch = max_batch
        self.batches = 0
        self._pending: list[tuple[str, asyncio.Future[np.ndarray]]] = []
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def encode(self, text: str) -> np.ndarray:
        """The unit vector of `text`, encoded together with concurrent requests."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop: nothing pending belongs to it
            self._loop, self._pending, self._worker = loop, [], None
        future: asyncio.Future[np.ndarray] = loop.create_future()
        self._pending.append((text, future))
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        await asyncio.sleep(0)  # let every coroutine that is ready enqueue its text first
        while self._pending:
            batch = self._pending[: self.max_batch]
            del self._pending[: self.max_batch]
            self.batches += 1
            try:
                vectors = await asyncio.to_thread(self.embedder.encode, [t for t, _ in batch])
            except Exception as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), vector in zip(batch, vectors, strict=True):
                if not future.done():
                    future.set_result(vector)
