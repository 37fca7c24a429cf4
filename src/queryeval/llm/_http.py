"""JSON over HTTP to a deployed service (endpoint systems): the same retry loop, backoff,
Retry-After and adaptive concurrency as the chat client, with `httpx2` (the HTTP library
the `openai` SDK is built on), one connection pool per event loop."""

from __future__ import annotations

import asyncio
import random
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from queryeval.llm._calls import (
    CallError,
    CallStats,
    Fatal,
    Retryable,
    RetryPolicy,
    is_retryable_status,
    with_retries,
)
from queryeval.llm._limiter import AdaptiveLimiter
from queryeval.llm._retry import retry_after_s

if TYPE_CHECKING:
    import httpx2

__all__ = ["CallError", "HttpReply", "JsonClient"]


@dataclass(frozen=True)
class HttpReply:
    """A successful (2xx) reply: status and body text."""

    status: int
    text: str


class JsonClient:
    """Sends JSON bodies to one URL; 429 / 5xx / 408 / 409, timeouts and connection errors are
    retried, other 4xx fail at once (CallError with the status)."""

    def __init__(
        self,
        url: str,
        *,
        method: str = "POST",
        headers: dict[str, str] | None = None,
        timeout_s: float = 60.0,
        concurrency: int = 8,
        backoff_factor: float = 0.75,
        policy: RetryPolicy | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.url = url
        self.method = method
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s
        self.policy = policy or RetryPolicy()
        self.limiter = AdaptiveLimiter(concurrency, factor=backoff_factor)
        self.stats = CallStats()
        self._rng = rng or random.Random(0)
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx2.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def _client(self) -> httpx2.AsyncClient:
        import httpx2

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = httpx2.AsyncClient(
                timeout=self.timeout_s, headers=self.headers, trust_env=False
            )
        return client

    async def send(self, body: Any) -> tuple[HttpReply, int]:
        """(reply, calls made) for one JSON body. CallError when it fails for good."""
        import httpx2

        client = self._client()

        async def once() -> HttpReply:
            try:
                response = await client.request(self.method, self.url, json=body)
            except httpx2.TimeoutException:
                raise Retryable(f"timed out after {self.timeout_s:g}s") from None
            except httpx2.TransportError as exc:
                raise Retryable(
                    f"connection error: {type(exc).__name__}: {exc}",
                    connection=isinstance(exc, httpx2.ConnectError),  # never reached the server
                ) from None
            status = response.status_code
            if status < 300:
                return HttpReply(status, response.text)
            excerpt = response.text[:300]
            if status == 429:
                raise Retryable(
                    "HTTP 429 (rate limited)",
                    wait_hint=retry_after_s(dict(response.headers)),
                    rate_limited=True,
                    status=429,
                )
            if is_retryable_status(status):
                raise Retryable(
                    f"HTTP {status}: {excerpt}",
                    wait_hint=retry_after_s(dict(response.headers)),
                    status=status,
                )
            raise Fatal(f"HTTP {status}: {excerpt}", status)

        return await with_retries(
            once, policy=self.policy, limiter=self.limiter, stats=self.stats, rng=self._rng
        )

    async def aclose(self) -> None:
        """Close the pool of the running loop."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    def close(self) -> None:
        """Forget pools of other loops (their loop closed them, or will not run again)."""
        self._clients.clear()
