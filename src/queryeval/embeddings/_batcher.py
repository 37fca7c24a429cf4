"""Coalesce concurrent one-text encode requests into batched Embedder calls.

Scorers see one case at a time, but a model encodes a batch of 64 far faster than 64 single
texts; this lets per-case `async score` calls share batches, like a dynamic batching server.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from queryeval.embeddings._backends import EmbeddingsRejected, EmbeddingsUnavailable
from queryeval.embeddings._embedder import Embedder

PLAIN_TEXT = "The capital of France is Paris."
"""What an endpoint that refuses a batch is asked to embed alone, to tell its trouble from
the texts'."""
MIN_PREFIX = 64
"""A refused text is tried again cut in halves down to this many characters."""


class _Batch:
    """Texts waiting to be encoded together, and the one future all their callers await."""

    __slots__ = ("future", "texts")

    def __init__(self, future: asyncio.Future[np.ndarray]) -> None:
        self.future = future
        self.texts: list[str] = []


class EncodeBatcher:
    """`await batcher.encode(text)` -> the text's unit vector. Requests that arrive while a
    batch is being encoded (in a worker thread) form the next batch."""

    def __init__(self, embedder: Embedder, *, max_batch: int = 8192) -> None:
        self.embedder = embedder
        self.max_batch = max_batch
        self.batches = 0
        self._queue: list[_Batch] = []
        self._open: _Batch | None = None
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def encode(self, text: str) -> np.ndarray:
        """The unit vector of `text`, encoded together with concurrent requests."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop: nothing pending belongs to it
            self._loop, self._queue, self._open, self._worker = loop, [], None, None
        batch = self._open
        if batch is None or len(batch.texts) >= self.max_batch:
            batch = self._open = _Batch(loop.create_future())
            self._queue.append(batch)
        index = len(batch.texts)
        batch.texts.append(text)
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._drain())
        vectors = await batch.future
        vector = vectors[index]
        if isinstance(vector, BaseException):  # this text alone was refused
            raise vector
        return vector

    async def _drain(self) -> None:
        await asyncio.sleep(0)  # let every coroutine that is ready enqueue its text first
        while self._queue:
            batch = self._queue.pop(0)
            if batch is self._open:
                self._open = None  # closed: requests from now on start the next batch
            self.batches += 1
            try:
                vectors: Any = await asyncio.to_thread(self.embedder.encode, batch.texts)
            except EmbeddingsRejected as refused:
                try:
                    vectors = await self._refused(batch.texts, refused)
                except Exception as exc:
                    batch.future.set_exception(exc)
                else:
                    batch.future.set_result(vectors)
            except Exception as exc:
                batch.future.set_exception(exc)
            else:
                batch.future.set_result(vectors)

    async def _refused(self, texts: list[str], refused: EmbeddingsRejected) -> list[Any]:
        """A refused batch: where the endpoint embeds a plain short text (sent to the
        backend itself, never the cache), the texts at fault are found and the others
        encoded (`_split`); where it refuses that too, the endpoint is at fault and the
        whole batch unavailable."""
        try:
            await asyncio.to_thread(self.embedder.backend.embed, [PLAIN_TEXT])
        except EmbeddingsRejected as exc:
            raise EmbeddingsUnavailable(
                f"the embeddings endpoint refuses a plain text too ({exc}); first: {refused}"
            ) from refused
        return await self._split(texts)

    async def _split(self, texts: list[str]) -> list[Any]:
        """Each text's vector, or the `EmbeddingsRejected` of a text refused on its own:
        halves of a refused request are sent again (a few requests per refused text)."""
        try:
            return list(await asyncio.to_thread(self.embedder.encode, texts))
        except EmbeddingsRejected as exc:
            if len(set(texts)) > 1:
                middle = len(texts) // 2
                return await self._split(texts[:middle]) + await self._split(texts[middle:])
            return [await self._prefix(texts[0], exc)] * len(texts)

    async def _prefix(self, text: str, refused: EmbeddingsRejected) -> Any:
        """The vector of the longest halving of `text` the endpoint takes (a text over its
        context: what a local model does, reading the first tokens only), or the refusal
        where even its first `MIN_PREFIX` characters are refused."""
        cut = len(text) // 2
        while cut >= MIN_PREFIX:
            try:
                return (await asyncio.to_thread(self.embedder.encode, [text[:cut]]))[0]
            except EmbeddingsRejected:
                cut //= 2
        return refused
