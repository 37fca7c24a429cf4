"""The `embeddings:` section of a suite: which backend and model, where it runs, batch size."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from queryeval.errors import InputError

DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"


class EmbeddingsConfig(BaseModel):
    """How to embed texts: a local sentence-transformers model (offline) or an
    OpenAI-compatible `/embeddings` endpoint."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["local", "openai"] = "local"
    model: str | None = Field(default=None, description="default: all-MiniLM-L6-v2 (local)")
    device: str = Field(default="auto", description="auto | cpu | cuda | cuda:N | mps")
    batch_size: int | None = Field(
        default=None, ge=1, le=65536, description="default: 1024 on CUDA, else 64"
    )
    precision: Literal["auto", "fp32", "fp16"] = Field(
        default="auto", description="local: auto = fp16 on CUDA, else fp32"
    )
    pipeline: bool = Field(default=True, description="local: tokenize beside the model's work")
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    dimensions: int | None = Field(default=None, ge=1, description="openai: output size")
    cache: bool = True
    timeout_s: float = Field(default=60.0, gt=0)

    @property
    def model_name(self) -> str:
        """The model asked for, or the backend's default."""
        if self.model:
            return self.model
        return DEFAULT_OPENAI_MODEL if self.backend == "openai" else DEFAULT_LOCAL_MODEL


def parse_embeddings_config(data: dict[str, Any] | None, *, path: Any = None) -> EmbeddingsConfig:
    """The validated config (defaults when the suite has none); problems name the suite file."""
    try:
        return EmbeddingsConfig.model_validate(data or {})
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = ".".join(str(p) for p in first["loc"])
        raise InputError(
            f"{first['msg']} (expected backend local|openai, model, device, batch_size, "
            "precision auto|fp32|fp16, pipeline, base_url, api_key_env, dimensions, cache, "
            "timeout_s)",
            path=path,
            where=f"embeddings.{field}" if field else "embeddings",
        ) from None
