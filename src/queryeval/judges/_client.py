"""The HTTP side of the judge: one `openai.AsyncOpenAI` client per event loop, retries
with backoff that honour Retry-After, the adaptive concurrency limit, and the memory of
endpoints that reject `response_format`."""

from __future__ import annotations

import asyncio
import os
import random
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from queryeval.judges._config import JudgeConfig
from queryeval.judges._limiter import AdaptiveLimiter
from queryeval.judges._retry import retry_after_s, retry_delay_s

if TYPE_CHECKING:
    from openai import AsyncOpenAI

_RETRYABLE_STATUS = {408, 409, 429}


@dataclass(frozen=True)
class Reply:
    """What the endpoint answered: the text, token usage, cost and why it stopped."""

    text: str
    usage: dict[str, int]
    cost: float | None
    finish_reason: str | None = None


@dataclass
class CallStats:
    """HTTP-level counters: calls sent, retries, 429s."""

    calls: int = 0
    retries: int = 0
    rate_limited: int = 0


class JudgeCallError(Exception):
    """A judgment whose call failed for good (retries spent, or an error not worth retrying)."""

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


async def _close_when_the_loop_ends(client: AsyncOpenAI) -> None:
    """Sleeps until cancelled, then closes the client. `asyncio.run` cancels pending tasks
    before closing its loop, so the client's connections close inside their own loop even
    when the caller never calls `aclose()` (a closed loop can no longer close them)."""
    try:
        await asyncio.Event().wait()
    finally:
        await client.close()


class ChatClient:
    """Chat completions against one endpoint, shared by every judgment of a run."""

    def __init__(self, config: JudgeConfig, rng: random.Random | None = None) -> None:
        self.config = config
        self.limiter = AdaptiveLimiter(config.concurrency, factor=config.backoff_factor)
        self.stats = CallStats()
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
        mode = self.config.structured_output
        return mode == "json_schema" or (
            mode == "auto" and self.config.endpoint not in self._no_response_format
        )

    def _args(
        self, messages: list[dict[str, str]], response_format: dict[str, Any] | None
    ) -> dict[str, Any]:
        c = self.config
        args: dict[str, Any] = {
            "model": c.model,
            "messages": messages,
            "temperature": c.temperature,
            "max_tokens": c.max_tokens,
        }
        if c.seed is not None:
            args["seed"] = c.seed
        if response_format is not None:
            args["response_format"] = response_format
        return args

    async def complete(
        self, messages: list[dict[str, str]], response_format: dict[str, Any]
    ) -> tuple[Reply, int]:
        """(reply, attempts) for one judgment: retried on 429/5xx/408/409, timeouts and
        connection errors with backoff; `response_format` is dropped (and that remembered)
        for an endpoint that rejects it. JudgeCallError when it fails for good."""
        import openai

        env = self.config.api_key_env
        if env and not os.environ.get(env):
            raise JudgeCallError(
                f"environment variable {env} (judge.api_key_env) is not set; set it to the "
                "judge's API key, or set api_key_env: null for an endpoint without keys",
                attempts=0,
            )
        client = self._client()
        structured = self._structured()
        dropped_format = False
        calls = failures = limited = 0
        c = self.config
        while True:
            wait_hint: float | None = None
            async with self.limiter.slot(retry=calls > 0) as ticket:
                calls += 1
                self.stats.calls += 1
                try:
                    response = await client.chat.completions.create(
                        **self._args(messages, response_format if structured else None)
                    )
                except openai.RateLimitError as exc:
                    if exc.code == "insufficient_quota":
                        raise JudgeCallError(
                            f"HTTP 429 insufficient_quota: {exc.message}", calls
                        ) from None
                    ticket.overloaded = True
                    self.stats.rate_limited += 1
                    wait_hint = retry_after_s(exc.response.headers)
                    last = "HTTP 429 (rate limited)"
                    limited += 1
                except openai.APIStatusError as exc:
                    status = exc.status_code
                    if status in (400, 422) and structured and c.structured_output == "auto":
                        structured, dropped_format = False, True  # retry at once, plain JSON prompt
                        continue
                    if status not in _RETRYABLE_STATUS and status < 500:
                        raise JudgeCallError(f"HTTP {status}: {exc.message}", calls) from None
                    wait_hint = retry_after_s(exc.response.headers)
                    last = f"HTTP {status}: {exc.message}"
                    failures += 1
                except openai.APITimeoutError:
                    last = f"timed out after {c.timeout_s:g}s"
                    failures += 1
                except openai.APIConnectionError as exc:
                    last = f"connection error: {exc}"
                    failures += 1
                else:
                    ticket.succeeded = True
                    if dropped_format:  # remember: this endpoint rejects response_format
                        self._no_response_format.add(c.endpoint)
                    return self._reply(response), calls
            # failures and 429s have separate budgets: a busy endpoint may send many 429s
            # (each honoured with its wait) without the judgment being lost
            if failures >= c.max_attempts or limited >= c.max_rate_limited:
                raise JudgeCallError(
                    f"gave up after {calls} calls ({failures} failed, {limited} rate-limited); "
                    f"last: {last}",
                    calls,
                )
            if wait_hint is not None and wait_hint > c.max_retry_after_s:
                raise JudgeCallError(
                    f"{last}; the endpoint asks to wait {wait_hint:.0f}s, more than "
                    f"max_retry_after_s={c.max_retry_after_s:g}",
                    calls,
                )
            self.stats.retries += 1
            delay = retry_delay_s(
                failures + limited - 1,
                wait_hint,
                base_s=c.backoff_base_s,
                max_s=c.backoff_max_s,
                rng=self._rng,
            )
            await asyncio.sleep(delay)

    def _reply(self, response: Any) -> Reply:
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content or "") if choice is not None else ""
        usage = response.usage
        counts = {
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
        }
        price = self.config.price
        cost = price.cost(counts["prompt_tokens"], counts["completion_tokens"]) if price else None
        return Reply(text, counts, cost, getattr(choice, "finish_reason", None))

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
