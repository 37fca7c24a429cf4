"""One request, retried: the loop shared by the chat client (judge, model systems) and the
HTTP client (endpoint systems). Each try holds a slot of the adaptive concurrency limit;
429s shrink the limit and honour Retry-After; 5xx, timeouts and connection errors back off
with full jitter; what cannot succeed (400, 401, quota) fails at once.

Hand-written: the SDK's own retries must be off so that every call shares the endpoint's
rate-limit feedback, and no installed library combines retries with an adaptive limit.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from queryeval.llm._limiter import AdaptiveLimiter
from queryeval.llm._retry import retry_delay_s

T = TypeVar("T")


@dataclass
class CallStats:
    """HTTP-level counters: calls sent, retries, 429s."""

    calls: int = 0
    retries: int = 0
    rate_limited: int = 0


class CallError(Exception):
    """A request that failed for good (retries spent, or an error not worth retrying).
    `status` is the HTTP status of the last reply, when there was one."""

    def __init__(
        self, message: str, attempts: int, status: int | None = None, *, connection: bool = False
    ) -> None:
        super().__init__(message)
        self.message = message
        self.attempts = attempts
        self.status = status
        self.connection = connection  # every try failed to connect (no reply at all)


class Retryable(Exception):
    """A try that may succeed later (5xx, 408, 409, timeout, connection error, 429)."""

    def __init__(
        self,
        message: str,
        *,
        wait_hint: float | None = None,
        rate_limited: bool = False,
        status: int | None = None,
        connection: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.wait_hint = wait_hint
        self.rate_limited = rate_limited
        self.status = status
        self.connection = connection  # the connection itself failed (refused, reset, DNS)


class Fatal(Exception):
    """A try whose failure another try would repeat (400, 401, 404, quota)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class RetryNow(Exception):
    """Try again at once, not counted as a failure (the request was changed, e.g. an
    unsupported parameter dropped)."""


@dataclass(frozen=True)
class RetryPolicy:
    """Budgets and timing of retries."""

    max_attempts: int = 6
    max_rate_limited: int = 50
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    max_retry_after_s: float = 120.0


RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP status is worth another try (408, 409, 429 and every 5xx).

    >>> [is_retryable_status(s) for s in (400, 404, 408, 429, 503)]
    [False, False, True, True, True]
    """
    return status in RETRYABLE_STATUS or status >= 500


async def with_retries(
    send: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    limiter: AdaptiveLimiter,
    stats: CallStats,
    rng: random.Random,
) -> tuple[T, int]:
    """(value, calls made) of `send()`, retried by `policy` under `limiter`. `send` raises
    Retryable, Fatal or RetryNow; CallError when the request fails for good."""
    calls = failures = limited = 0
    last = "no call made"
    status: int | None = None
    connected = False  # some try reached the server (any reply, or a timeout)
    while True:
        wait_hint: float | None = None
        async with limiter.slot(retry=calls > 0) as ticket:
            calls += 1
            stats.calls += 1
            try:
                value = await send()
            except RetryNow:
                continue
            except Fatal as exc:
                raise CallError(exc.message, calls, exc.status) from None
            except Retryable as exc:
                wait_hint, last, status = exc.wait_hint, exc.message, exc.status
                connected = connected or not exc.connection
                if exc.rate_limited:
                    ticket.overloaded = True
                    stats.rate_limited += 1
                    limited += 1
                else:
                    failures += 1
            else:
                ticket.succeeded = True
                return value, calls
        # failures and 429s have separate budgets: a busy endpoint may send many 429s
        # (each honoured with its wait) without the request being lost
        if failures >= policy.max_attempts or limited >= policy.max_rate_limited:
            raise CallError(
                f"gave up after {calls} calls ({failures} failed, {limited} rate-limited); "
                f"last: {last}",
                calls,
                status,
                connection=not connected,
            )
        if wait_hint is not None and wait_hint > policy.max_retry_after_s:
            raise CallError(
                f"{last}; the endpoint asks to wait {wait_hint:.0f}s, more than "
                f"max_retry_after_s={policy.max_retry_after_s:g}",
                calls,
                status,
            )
        stats.retries += 1
        delay = retry_delay_s(
            failures + limited - 1,
            wait_hint,
            base_s=policy.backoff_base_s,
            max_s=policy.backoff_max_s,
            rng=rng,
        )
        await asyncio.sleep(delay)
