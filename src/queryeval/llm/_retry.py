"""Retry timing: exponential backoff with full jitter, and the server's Retry-After.

Hand-written because the SDK's own retries must be off (we need per-endpoint rate-limit
feedback and a shared concurrency limit) and no installed library exposes both.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


def retry_after_s(headers: Mapping[str, str] | None, now: datetime | None = None) -> float | None:
    """Seconds the server asks us to wait: `retry-after-ms`, or `Retry-After` given in
    seconds or as an HTTP date. None when absent or unreadable."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    now = now or datetime.now(UTC)
    return max(0.0, (when - now).total_seconds())


def backoff_s(attempt: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """Full jitter: uniform in [0, min(max_s, base_s * 2**attempt)] (attempt counts from 0)."""
    return rng.uniform(0.0, min(max_s, base_s * 2.0**attempt))


def retry_delay_s(
    attempt: int,
    retry_after: float | None,
    *,
    base_s: float,
    max_s: float,
    rng: random.Random,
) -> float:
    """How long to wait before the next attempt. A Retry-After is honoured (never retry
    sooner) with up to 10% spread so that the callers it sent away do not return at once."""
    if retry_after is not None:
        return retry_after * (1.0 + rng.uniform(0.0, 0.1))
    return backoff_s(attempt, base_s, max_s, rng)
