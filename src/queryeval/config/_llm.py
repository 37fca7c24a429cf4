"""What every OpenAI-compatible chat endpoint needs to be reached: model, where, how fast, how
much it may cost, how to retry. The judge (`judge:`) and model systems (`systems[].model`)
share these keys; each adds its own."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


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
    """An OpenAI-compatible chat endpoint (OpenAI, Azure OpenAI, vLLM, Ollama, LiteLLM)."""

    model: str
    base_url: str | None = Field(default=None, description="None: the SDK's default (OpenAI)")
    api_key_env: str | None = Field(
        default="OPENAI_API_KEY", description="environment variable holding the key; None: no key"
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
    def _cap_needs_price(self) -> ChatEndpoint:
        if self.max_cost_usd is not None and self.model not in self.prices:
            raise ValueError(
                f"max_cost_usd needs a price for model {self.model!r}: add "
                f"prices: {{{self.model}: {{input_per_1k: ..., output_per_1k: ...}}}}"
            )
        return self

    @property
    def price(self) -> Price | None:
        """The price of the configured model, when the table has it."""
        return self.prices.get(self.model)

    @property
    def endpoint(self) -> str:
        """A name for the endpoint (state such as rate limits is kept per endpoint)."""
        return (self.base_url or "https://api.openai.com/v1").rstrip("/")
