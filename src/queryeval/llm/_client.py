"""Chat completions against one endpoint, OpenAI-compatible (one `openai.AsyncOpenAI`
client per event loop) or a provider through LiteLLM (`provider:`): the shared retry loop
(`with_retries`), the adaptive concurrency limit, and the memory of endpoints that reject
`response_format`."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from queryeval.config import ChatEndpoint
from queryeval.llm._calls import (
    CallError,
    CallStats,
    Fatal,
    Retryable,
    RetryNow,
    RetryPolicy,
    with_retries,
)
from queryeval.llm._limiter import AdaptiveLimiter
from queryeval.llm._retry import retry_after_s

if TYPE_CHECKING:
    from openai import AsyncOpenAI

_RETRYABLE_STATUS = {408, 409, 429}
StructuredOutput = Literal["auto", "json_schema", "off"]


@dataclass(frozen=True)
class ToolCall:
    """A function call the model asked for: its name and its arguments as sent (JSON text)."""

    name: str
    arguments: str


@dataclass(frozen=True)
class Reply:
    """What the endpoint answered: the text, token usage, cost, why it stopped, tool calls,
    and how long the request took (retries included)."""

    text: str
    usage: dict[str, int]
    cost: float | None
    finish_reason: str | None = None
    tool_calls: tuple[ToolCall, ...] = field(default=())
    latency_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-able copy (what the reply caches store)."""
        out: dict[str, Any] = {
            "text": self.text,
            "usage": self.usage,
            "cost": self.cost,
            "finish_reason": self.finish_reason,
        }
        if self.latency_s is not None:
            out["latency_s"] = self.latency_s
        if self.tool_calls:
            out["tool_calls"] = [
                {"name": t.name, "arguments": t.arguments} for t in self.tool_calls
            ]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Reply:
        """The reply `to_json` stored."""
        calls = tuple(
            ToolCall(str(t.get("name", "")), str(t.get("arguments", "")))
            for t in data.get("tool_calls") or ()
        )
        return cls(
            str(data.get("text", "")),
            dict(data.get("usage") or {}),
            data.get("cost"),
            data.get("finish_reason"),
            calls,
            data.get("latency_s"),
        )


def policy_of(config: ChatEndpoint) -> RetryPolicy:
    """The retry budgets and timing configured for an endpoint."""
    return RetryPolicy(
        max_attempts=config.max_attempts,
        max_rate_limited=config.max_rate_limited,
        backoff_base_s=config.backoff_base_s,
        backoff_max_s=config.backoff_max_s,
        max_retry_after_s=config.max_retry_after_s,
    )


def missing_key(config: ChatEndpoint, section: str) -> str | None:
    """Why the endpoint cannot be called for want of a key (None when it can)."""
    env = config.api_key_env
    if env and not os.environ.get(env):
        return (
            f"environment variable {env} ({section}.api_key_env) is not set; set it to the "
            "API key, or set api_key_env: null for an endpoint without keys"
        )
    return None


async def _close_when_the_loop_ends(client: AsyncOpenAI) -> None:
    """Sleeps until cancelled, then closes the client. `asyncio.run` cancels pending tasks
    before closing its loop, so the client's connections close inside their own loop even
    when the caller never calls `aclose()` (a closed loop can no longer close them)."""
    try:
        await asyncio.Event().wait()
    finally:
        await client.close()


def _litellm_create(config: ChatEndpoint) -> Callable[..., Awaitable[Any]]:
    """`chat.completions.create` through LiteLLM for a provider it speaks natively
    (Anthropic's Messages API, Gemini, Bedrock, Azure ...): the same arguments and an
    OpenAI-shaped reply; LiteLLM's errors are the openai SDK's classes, so the retry
    handling is shared. LiteLLM does not retry (we do); parameters a provider lacks
    (seed ...) are dropped by LiteLLM."""
    from queryeval.config import import_litellm

    litellm = import_litellm()
    env = config.api_key_env
    key = os.environ.get(env) if env else None

    async def create(**args: Any) -> Any:
        extra: dict[str, Any] = {"num_retries": 0, "drop_params": True}
        if key:
            extra["api_key"] = key
        if config.base_url:
            extra["api_base"] = config.base_url
        args = {**args, "model": config.litellm_model}
        return await litellm.acompletion(**args, timeout=config.timeout_s, **extra)

    return create


class ChatClient:
    """Chat completions against one endpoint, shared by every request of a run (of one user:
    the judge and each model system have their own, so their accounting stays apart)."""

    def __init__(
        self,
        config: ChatEndpoint,
        rng: random.Random | None = None,
        *,
        structured_output: StructuredOutput = "auto",
        section: str = "judge",
    ) -> None:
        self.config = config
        self.section = section
        self.structured_output = structured_output
        self.limiter = AdaptiveLimiter(config.concurrency, factor=config.backoff_factor)
        self.stats = CallStats()
        self.policy = policy_of(config)
        self._rng = rng or random.Random(config.seed)
        self._clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[AsyncOpenAI, asyncio.Task[None]]
        ] = weakref.WeakKeyDictionary()
        self._no_response_format: set[str] = set()

    def _client(self) -> AsyncOpenAI:
        """The client of the running loop (an httpx pool cannot cross event loops)."""
        loop = asyncio.get_running_loop()
        entry = self._clients.get(loop)
        if entry is None:
            from openai import AsyncOpenAI

            env = self.config.api_key_env
            key = os.environ.get(env) if env else "unused"
            client = AsyncOpenAI(
                api_key=key or "missing",
                base_url=self.config.base_url,
                max_retries=0,  # we retry ourselves, sharing rate-limit feedback across calls
                timeout=self.config.timeout_s,
            )
            entry = self._clients[loop] = (
                client,
                loop.create_task(_close_when_the_loop_ends(client)),
            )
        return entry[0]

    def _structured(self) -> bool:
        mode = self.structured_output
        return mode == "json_schema" or (
            mode == "auto" and self.config.endpoint not in self._no_response_format
        )

    def request_args(
        self,
        messages: list[dict[str, Any]],
        *,
        response_format: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        temperature: float | None = None,
        seed: int | Literal["config"] | None = "config",
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of `chat.completions.create` for one request."""
        c = self.config
        args: dict[str, Any] = {
            "model": c.model,
            "messages": messages,
            "temperature": c.temperature if temperature is None else temperature,
            "max_tokens": c.max_tokens if max_tokens is None else max_tokens,
        }
        chosen_seed = c.seed if seed == "config" else seed
        if chosen_seed is not None:
            args["seed"] = chosen_seed
        if response_format is not None:
            args["response_format"] = response_format
        if tools:
            args["tools"] = tools
            if tool_choice is not None:
                args["tool_choice"] = tool_choice
        return args

    async def complete(
        self,
        messages: list[dict[str, Any]],
        response_format: dict[str, Any] | None = None,
        **call: Any,
    ) -> tuple[Reply, int]:
        """(reply, calls made) for one request: retried on 429/5xx/408/409, timeouts and
        connection errors with backoff; `response_format` is dropped (and that remembered)
        for an endpoint that rejects it. CallError when it fails for good. `call` holds
        the per-request overrides of `request_args` (tools, temperature, seed, ...)."""
        import openai

        why = missing_key(self.config, self.section)
        if why is not None:
            raise CallError(why, attempts=0)
        create = _litellm_create(self.config) if self.config.provider else None
        if create is None:
            create = self._client().chat.completions.create
        state = {"structured": response_format is not None and self._structured(), "dropped": 0}
        c = self.config

        async def send() -> Any:
            fmt = response_format if state["structured"] else None
            try:
                return await create(**self.request_args(messages, response_format=fmt, **call))
            except openai.RateLimitError as exc:
                if exc.code == "insufficient_quota":
                    raise Fatal(f"HTTP 429 insufficient_quota: {exc.message}", 429) from None
                raise Retryable(
                    "HTTP 429 (rate limited)",
                    wait_hint=retry_after_s(exc.response.headers),
                    rate_limited=True,
                    status=429,
                ) from None
            except openai.APIStatusError as exc:
                status = exc.status_code
                auto = self.structured_output == "auto"
                if status in (400, 422) and state["structured"] and auto:
                    state["structured"], state["dropped"] = False, 1  # plain JSON prompt
                    raise RetryNow from None
                if status not in _RETRYABLE_STATUS and status < 500:
                    raise Fatal(f"HTTP {status}: {exc.message}", status) from None
                raise Retryable(
                    f"HTTP {status}: {exc.message}",
                    wait_hint=retry_after_s(exc.response.headers),
                    status=status,
                ) from None
            except openai.APITimeoutError:
                raise Retryable(f"timed out after {c.timeout_s:g}s") from None
            except openai.APIConnectionError as exc:
                refused = type(exc.__cause__).__name__ == "ConnectError"  # httpx's: no reply
                raise Retryable(
                    f"connection error: {exc.__cause__ or exc}", connection=refused
                ) from None
            except openai.APIError as exc:  # LiteLLM's APIError: a status, no APIStatusError
                code = getattr(exc, "status_code", None)
                if isinstance(code, int) and (code >= 500 or code in _RETRYABLE_STATUS):
                    raise Retryable(f"HTTP {code}: {exc.message}", status=code) from None
                raise

        start = time.perf_counter()
        response, calls = await with_retries(
            send, policy=self.policy, limiter=self.limiter, stats=self.stats, rng=self._rng
        )
        if state["dropped"]:  # remember: this endpoint rejects response_format
            self._no_response_format.add(c.endpoint)
        reply = self._reply(response)
        return dataclasses.replace(reply, latency_s=time.perf_counter() - start), calls

    def _reply(self, response: Any) -> Reply:
        choice = response.choices[0] if response.choices else None
        message = choice.message if choice is not None else None
        text = (message.content or "") if message is not None else ""
        calls: list[ToolCall] = []
        for call in getattr(message, "tool_calls", None) or ():
            function = getattr(call, "function", None)
            if function is not None:
                calls.append(ToolCall(str(function.name or ""), str(function.arguments or "")))
        usage = response.usage
        counts = {
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
        }
        price = self.config.price
        cost = price.cost(counts["prompt_tokens"], counts["completion_tokens"]) if price else None
        return Reply(text, counts, cost, getattr(choice, "finish_reason", None), tuple(calls))

    async def aclose(self) -> None:
        """Close the client of the running loop."""
        entry = self._clients.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            entry[1].cancel()
            await entry[0].close()

    def close(self) -> None:
        """Close the clients of loops that are not running (asyncio.run closes its own)."""
        for loop, (client, closer) in list(self._clients.items()):
            if not loop.is_closed() and not loop.is_running():
                closer.cancel()
                loop.run_until_complete(client.close())
        self._clients.clear()
