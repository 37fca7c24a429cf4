"""Sentence embeddings for answer scoring: a local model loaded offline or an OpenAI-compatible
endpoint, behind a persistent (model id, text hash) cache. Importing this does not load torch."""

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

__all__ = [
    "BUNDLED_MODEL_ID",
    "Calibration",
    "Embedder",
    "EmbedderStats",
    "EmbeddingsConfig",
    "EmbeddingsRejected",
    "EmbeddingsUnavailable",
    "EncodeBatcher",
    "LocalBackend",
    "MemoryCache",
    "OpenAIBackend",
    "SqliteCache",
    "build_embedder",
    "embedder_from_context",
    "encode_with_progress",
    "load_calibration",
    "parse_embeddings_config",
    "resolve_device",
    "save_calibration",
    "similarity",
    "text_key",
]
