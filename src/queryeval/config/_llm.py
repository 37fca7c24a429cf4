"""What every OpenAI-compatible chat endpoint needs to be reached: model, where, how fast, how
much it may cost, how to retry. The judge (`judge:`) and model systems (`systems[].model`)
share these keys; each adds its own."""

from __future__ import annotations

import os
from functools import cache
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
# LiteLLM's key variables where they are not <PROVIDER>_API_KEY; Bedrock and Vertex AI
# use their clouds' credential chains (no key variable)
_KEY_ENV = {"bedrock": None, "vertex_ai": None, "sagemaker": None}


def import_litellm() -> ModuleType:
    """LiteLLM, imported with its bundled cost table (LITELLM_LOCAL_MODEL_COST_MAP while it
    imports: otherwise its import fetches the table from the network, three tries with
    waits). ImportError names the extra to install."""
    name = "LITELLM_LOCAL_MODEL_COST_MAP"
    before = os.environ.get(name)
    os.environ[name] = "True"
    try:
        import litellm
    except ImportError:
        raise ImportError(
            "provider: needs LiteLLM; install it with: pip install 'queryeval[litellm]'"
        ) from None
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before
    litellm.suppress_debug_info = True  # its "Give Feedback" banner on every error
    return litellm


@cache
def _providers() -> frozenset[str]:
    return frozenset(str(getattr(p, "value", p)) for p in import_litellm().provider_list)


@cache
def litellm_price(provider: str, model: str) -> Price | None:
    """The price of `provider/model` in LiteLLM's cost table (USD per token there), or None
    when the table has no such model or no token prices for it."""
    table: dict[str, Any] = import_litellm().model_cost
    for name in (f"{provider}/{model}", model, model.split("/", 1)[-1]):
        entry = table.get(name)
        if isinstance(entry, dict):
            cost_in = entry.get("input_cost_per_token")
            cost_out = entry.get("output_cost_per_token")
            if isinstance(cost_in, int | float) and isinstance(cost_out, int | float):
                return Price(input_per_1k=cost_in * 1000, output_per_1k=cost_out * 1000)
    return None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Price(_Model):
    """USD per 1,000 prompt (input) and completion (output) tokens.

    >>> Price(input_per_1k=0.5, output_per_1k=1.5).cost(2000, 1000)
    2.5
    """

    input_per_1k: float = Field(ge=0)
    output_per_1k: float = Field(ge=0)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """The price of one call."""
        return (
            prompt_tokens / 1000 * self.input_per_1k + completion_tokens / 1000 * self.output_per_1k
        )


class ChatEndpoint(_Model):
    """A chat endpoint: OpenAI-compatible (OpenAI, vLLM, Ollama, a LiteLLM proxy ...) by
    default, or a provider LiteLLM speaks natively (`provider: anthropic`, `gemini`,
    `bedrock`, `azure`, ...), its prices then from LiteLLM's cost table."""

    model: str
    provider: str | None = Field(
        default=None,
        description="None: the OpenAI-compatible client; a LiteLLM provider name (anthropic, "
        "gemini, bedrock, azure, vertex_ai, ...): calls go through LiteLLM (the litellm extra)",
    )
    base_url: str | None = Field(default=None, description="None: the SDK's default (OpenAI)")
    api_key_env: str | None = Field(
        default=DEFAULT_KEY_ENV,
        description="environment variable holding the key; None: no key (default: "
        "OPENAI_API_KEY, or <PROVIDER>_API_KEY for a LiteLLM provider)",
    )
    concurrency: int = Field(default=8, ge=1, le=1024, description="most calls in flight")
    backoff_factor: float = Field(
        default=0.75,
        gt=0,
        lt=1,
        description="the concurrency limit is multiplied by this on a 429 (at most once per "
        "round trip); 0.75 keeps throughput under sporadic 429s, 0.5 backs off harder",
    )
    max_cost_usd: float | None = Field(default=None, ge=0, description="hard cap on spend per run")
    prices: dict[str, Price] = Field(default_factory=dict)
    seed: int | None = 0
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=512, ge=1, description="completion budget of one call")
    timeout_s: float = Field(default=60.0, gt=0)
    max_attempts: int = Field(
        default=6, ge=1, le=50, description="calls per request that may fail (5xx, timeout...)"
    )
    max_rate_limited: int = Field(
        default=50, ge=1, le=1000, description="429 replies tolerated per request"
    )
    backoff_base_s: float = Field(default=0.5, gt=0)
    backoff_max_s: float = Field(default=30.0, gt=0)
    max_retry_after_s: float = Field(
        default=120.0, gt=0, description="a longer Retry-After gives up instead of waiting"
    )
    outage_after: int = Field(
        default=5, ge=1, description="consecutive failed requests that mark the endpoint down"
    )
    estimate_output_tokens: int = Field(
        default=150, ge=1, description="typical reply length used by `estimate`"
    )
    cache: bool = True

    @model_validator(mode="after")
    def _known_provider(self) -> ChatEndpoint:
        """A provider LiteLLM knows (LiteLLM installed), and its key variable by default."""
        if self.provider is None:
            return self
        try:
            known = _providers()
        except ImportError as exc:
            raise ValueError(str(exc)) from None
        if self.provider not in known:
            raise ValueError(
                f"unknown provider {self.provider!r}: LiteLLM's providers include "
                "anthropic, azure, bedrock, gemini, vertex_ai, openai (see litellm.provider_list)"
            )
        if "api_key_env" not in self.model_fields_set:
            default = _KEY_ENV.get(self.provider, f"{self.provider.upper()}_API_KEY")
            object.__setattr__(self, "api_key_env", default)
        return self

    @model_validator(mode="after")
    def _cap_needs_price(self) -> ChatEndpoint:
        if self.max_cost_usd is not None and self.price is None:
            if self.provider is not None:
                raise ValueError(
                    f"max_cost_usd needs a price for model {self.model!r}: LiteLLM's cost "
                    f"table has none for {self.provider}/{self.model}; add prices: "
                    f"{{{self.model}: {{input_per_1k: ..., output_per_1k: ...}}}}"
                )
            raise ValueError(
                f"max_cost_usd needs a price for model {self.model!r}: add "
                f"prices: {{{self.model}: {{input_per_1k: ..., output_per_1k: ...}}}}"
            )
        return self

    @property
    def price(self) -> Price | None:
        """The price of the configured model: `prices`, else (a LiteLLM provider)
        LiteLLM's cost table; None when neither has it."""
        found = self.prices.get(self.model)
        if found is None and self.provider is not None:
            found = litellm_price(self.provider, self.model)
        return found

    @property
    def litellm_model(self) -> str:
        """The model as LiteLLM names it: `provider/model`."""
        prefix = f"{self.provider}/"
        return self.model if self.model.startswith(prefix) else prefix + self.model

    @property
    def endpoint(self) -> str:
        """A name for the endpoint (state such as rate limits is kept per endpoint)."""
        if self.provider is not None and self.base_url is None:
            return f"litellm:{self.provider}"
        return (self.base_url or "https://api.openai.com/v1").rstrip("/")
