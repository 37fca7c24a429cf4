"""The Embedder: L2-normalised vectors through a persistent cache, so each distinct text is
embedded once per model, ever; and the shared per-run embedder of a scoring context."""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from queryeval.embeddings._backends import Backend, backend_from_config
from queryeval.embeddings._cache import MemoryCache, SqliteCache, text_key
from queryeval.embeddings._config import EmbeddingsConfig, parse_embeddings_config

if TYPE_CHECKING:
    from queryeval.resources import RunResources

CACHE_FILE = "embeddings.sqlite"


@dataclass
class EmbedderStats:
    """Counters: texts asked for, served from the cache, sent to the model."""

    requested: int = 0
    cache_hits: int = 0
    embedded: int = 0


class Embedder:
    """Encode texts to unit vectors with a backend, reading and filling a cache first.

    Duplicate texts in one call are embedded once; misses go to the backend in chunks of
    `chunk_size` texts, each chunk stored as soon as it is done (a killed run keeps them).
    """

    def __init__(
        self,
        backend: Backend,
        cache: SqliteCache | MemoryCache | None = None,
        *,
        chunk_size: int = 4096,
    ) -> None:
        self.backend = backend
        self.model_id = backend.model_id
        self.cache = cache if cache is not None else MemoryCache()
        self.chunk_size = chunk_size
        self.stats = EmbedderStats()
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """An (n, d) float32 array of L2-normalised embeddings, one row per text."""
        texts = list(texts)
        keys = [text_key(t) for t in texts]
        with self._lock:
            unique = dict(zip(keys, texts, strict=True))
            found = self.cache.get_many(self.model_id, list(unique))
            missing = [(k, t) for k, t in unique.items() if k not in found]
            self.stats.requested += len(texts)
            self.stats.cache_hits += len(unique) - len(missing)
            for start in range(0, len(missing), self.chunk_size):
                chunk = missing[start : start + self.chunk_size]
                vectors = _normalise(self.backend.embed([t for _, t in chunk]))
                chunk_keys = [k for k, _ in chunk]
                self.cache.put_many(self.model_id, zip(chunk_keys, vectors, strict=True))
                found.update(zip(chunk_keys, vectors, strict=True))
                self.stats.embedded += len(chunk)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[k] for k in keys])

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two texts, in [-1, 1]."""
        vectors = self.encode([a, b])
        return float(np.clip(vectors[0] @ vectors[1], -1.0, 1.0))

    def similarities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Cosine similarity of each (a, b) pair, all texts embedded in one batched call."""
        if not pairs:
            return []
        vectors = self.encode([a for a, _ in pairs] + [b for _, b in pairs])
        n = len(pairs)
        sims = np.einsum("ij,ij->i", vectors[:n], vectors[n:])
        return [float(s) for s in np.clip(sims, -1.0, 1.0)]

    def close(self) -> None:
        """Release the cache and the backend's client."""
        self.cache.close()
        close = getattr(self.backend, "close", None)
        if callable(close):
            close()


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def build_embedder(config: EmbeddingsConfig, cache_dir: Path | None = None) -> Embedder:
    """An Embedder for a config; persistent cache under `cache_dir` unless `cache: false`."""
    cache: SqliteCache | MemoryCache
    if config.cache and cache_dir is not None:
        cache = SqliteCache(Path(cache_dir) / CACHE_FILE)
    else:
        cache = MemoryCache()
    return Embedder(backend_from_config(config), cache)


def embedder_from_context(ctx: RunResources) -> Embedder:
    """The run's one Embedder, built from the suite's `embeddings:` section on first use."""
    suite = ctx.suite
    config = parse_embeddings_config(
        suite.embeddings if suite is not None else None,
        path=suite.source if suite is not None else None,
    )
    return ctx.resource("embedder", lambda: build_embedder(config, ctx.cache_dir))


@functools.cache
def default_embedder() -> Embedder:
    """The default local model with an in-memory cache (for notebooks and quick checks)."""
    return build_embedder(EmbeddingsConfig(), cache_dir=None)


def similarity(prediction: str, reference: str) -> float:
    """Cosine similarity of two texts with the default local model (all-MiniLM-L6-v2)."""
    return default_embedder().similarity(prediction, reference)
