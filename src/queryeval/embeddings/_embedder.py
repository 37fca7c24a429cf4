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

from queryeval._unicode import readable
from queryeval.embeddings._backends import Backend, backend_from_config
from queryeval.embeddings._cache import MemoryCache, SqliteCache, text_key
from queryeval.embeddings._config import EmbeddingsConfig, parse_embeddings_config

if TYPE_CHECKING:
    from queryeval.resources import RunResources

CACHE_FILE = "embeddings.sqlite"
_BLOCK = 8192  # rows per block of normalising and of pairwise cosines


@dataclass
class EmbedderStats:
    """Counters: texts asked for, served from the cache, sent to the model."""

    requested: int = 0
    cache_hits: int = 0
    embedded: int = 0


class Embedder:
    """Encode texts to unit vectors with a backend, reading and filling a cache first.

    Duplicate texts in one call are embedded once; misses go to the backend in chunks of
    `chunk_size` texts (default: the backend's `chunk_size`, else 4096), each chunk stored as
    soon as it is done (a killed run keeps them). Vectors are cached under the backend's
    `cache_id` where it has one (a model in float16 apart from float32), else its `model_id`.
    """

    def __init__(
        self,
        backend: Backend,
        cache: SqliteCache | MemoryCache | None = None,
        *,
        chunk_size: int | None = None,
    ) -> None:
        self.backend = backend
        self.model_id = backend.model_id
        self.cache = cache if cache is not None else MemoryCache()
        self.chunk_size = chunk_size
        self._cache_id: str | None = None
        self.stats = EmbedderStats()
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """An (n, d) float32 array of L2-normalised embeddings, one row per text."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        unique, inverse, shared = self._unique_vectors(texts)
        if len(unique) != len(texts):
            return unique[inverse]
        return unique.copy() if shared else unique  # never the cache's own memory

    def _unique_vectors(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, bool]:
        """(one unit vector per distinct text, each text's row in it, whether that array is
        also the cache's): cached vectors read, the others embedded chunk by chunk and
        cached as each chunk is done."""
        keys = [text_key(t) for t in texts]
        rows: dict[bytes, int] = {}
        inverse = np.fromiter(
            (rows.setdefault(k, len(rows)) for k in keys), dtype=np.intp, count=len(keys)
        )
        unique_keys = list(rows)
        with self._lock:
            cache_id = self._cache_id or self._resolve_cache_id()
            found = self.cache.get_many(cache_id, unique_keys)
            missing = [i for i, k in enumerate(unique_keys) if k not in found]
            self.stats.requested += len(texts)
            self.stats.cache_hits += len(unique_keys) - len(missing)
            first = np.empty(len(rows), dtype=np.intp)
            first[inverse] = np.arange(len(texts))  # a text of each row (all are the same)
            vectors: np.ndarray | None = None
            shared = False
            size = self.chunk_size or int(getattr(self.backend, "chunk_size", 4096))
            for start in range(0, len(missing), size):
                chunk = missing[start : start + size]
                embedded = _normalise(
                    self.backend.embed([readable(texts[first[i]]) for i in chunk])
                )
                self.cache.put_many(
                    cache_id, zip((unique_keys[i] for i in chunk), embedded, strict=True)
                )
                self.stats.embedded += len(chunk)
                if len(chunk) == len(unique_keys):  # all rows, in order: no copy
                    vectors, shared = embedded, True
                    continue
                if vectors is None:
                    vectors = np.empty((len(unique_keys), embedded.shape[1]), np.float32)
                vectors[chunk] = embedded
        if found:
            if vectors is None:
                vectors = np.empty((len(unique_keys), len(next(iter(found.values())))), np.float32)
            for i, key in enumerate(unique_keys):
                hit = found.get(key)
                if hit is not None:
                    vectors[i] = hit
        assert vectors is not None  # texts is not empty: every row is found or embedded
        return vectors, inverse, shared

    def _resolve_cache_id(self) -> str:
        self._cache_id = str(getattr(self.backend, "cache_id", self.model_id))
        return self._cache_id

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two texts, in [-1, 1]."""
        vectors = self.encode([a, b])
        return float(np.clip(vectors[0] @ vectors[1], -1.0, 1.0))

    def similarities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Cosine similarity of each (a, b) pair, all texts embedded in one batched call."""
        if not pairs:
            return []
        n = len(pairs)
        unique, inverse, _ = self._unique_vectors([a for a, _ in pairs] + [b for _, b in pairs])
        sims = np.empty(n, dtype=np.float32)
        for start in range(0, n, _BLOCK):  # blocks: no (n, d) temporaries
            stop = min(n, start + _BLOCK)
            left, right = unique[inverse[start:stop]], unique[inverse[n + start : n + stop]]
            sims[start:stop] = np.einsum("ij,ij->i", left, right)
        return [float(s) for s in np.clip(sims, -1.0, 1.0)]

    def close(self) -> None:
        """Release the cache and the backend's client."""
        self.cache.close()
        close = getattr(self.backend, "close", None)
        if callable(close):
            close()


def _normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows kept), in place where `vectors` is a writable
    float32 array (a backend's fresh result), a block of rows at a time: the same arithmetic
    as one `vectors / norm(vectors)`, without (n, d) temporaries."""
    out = np.asarray(vectors, dtype=np.float32)
    if not out.flags.writeable:
        out = out.copy()
    for start in range(0, len(out), _BLOCK):
        block = out[start : start + _BLOCK]
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        np.divide(block, np.where(norms == 0, 1.0, norms), out=block)
    return out


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
