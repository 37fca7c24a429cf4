"""Sentence embeddings for answer scoring: a local model loaded offline or an OpenAI-compatible
endpoint, behind a persistent (model id, text hash) cache. Importing this does not load torch."""

# ruff: noqa: F401 - names imported here and left out of `__all__` are for queryeval's own
# packages (the private-modules contract has them import through here), not a public interface

from queryeval.embeddings._backends import (
    BUNDLED_MODEL_ID,
    EmbeddingsRejected,
    EmbeddingsUnavailable,
    LocalBackend,
    OpenAIBackend,
    resolve_device,
)
from queryeval.embeddings._batcher import EncodeBatcher
from queryeval.embeddings._cache import MemoryCache, SqliteCache, text_key
from queryeval.embeddings._calibration import (
    Calibration,
    encode_with_progress,
    load_calibration,
    save_calibration,
)
from queryeval.embeddings._config import EmbeddingsConfig, parse_embeddings_config
from queryeval.embeddings._embedder import (
    Embedder,
    EmbedderStats,
    build_embedder,
    embedder_from_context,
    similarity,
)

# What users call; the package's other names are for queryeval's own packages.
__all__ = [
    "Embedder",
    "EmbeddingsRejected",
    "EmbeddingsUnavailable",
    "EncodeBatcher",
    "LocalBackend",
    "MemoryCache",
    "OpenAIBackend",
    "SqliteCache",
    "build_embedder",
    "similarity",
]
