"""Retry timing: Retry-After in seconds, milliseconds or as an HTTP date; full-jitter backoff."""

import random
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queryeval.llm import backoff_s, retry_after_s, retry_delay_s


def test_retry_after_seconds() -> None:
    assert retry_after_s({"Retry-After": "2"}) == 2.0
    assert retry_after_s({"retry-after": "0.25"}) == 0.25


def test_retry_after_ms_wins() -> None:
    assert retry_after_s({"retry-after-ms": "150", "retry-after": "9"}) == pytest.approx(0.15)


def test_retry_after_http_date() -> None:
    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)
    assert retry_after_s({"Retry-After": "Wed, 21 Oct 2015 07:28:30 GMT"}, now=now) == 30.0
    # a date in the past means: now
    assert retry_after_s({"Retry-After": "Wed, 21 Oct 2015 07:27:00 GMT"}, now=now) == 0.0


@pytest.mark.parametrize("headers", [None, {}, {"Retry-After": "soon"}, {"X-Other": "1"}])
def test_retry_after_absent_or_unreadable(headers: dict[str, str] | None) -> None:
    assert retry_after_s(headers) is None


@given(st.integers(0, 20), st.floats(0.01, 5), st.floats(0.1, 60), st.integers(0, 2**32))
def test_full_jitter_stays_in_its_window(attempt: int, base: float, cap: float, seed: int) -> None:
    delay = backoff_s(attempt, base, cap, random.Random(seed))
    assert 0.0 <= delay <= min(cap, base * 2**attempt)


def test_full_jitter_spreads_and_grows() -> None:
    rng = random.Random(0)
    early = [backoff_s(0, 1.0, 100, rng) for _ in range(500)]
    late = [backoff_s(5, 1.0, 100, rng) for _ in range(500)]
    assert max(early) <= 1.0 < max(late)
    assert sum(late) / 500 > 5 * sum(early) / 500
    assert len({round(d, 6) for d in early}) > 400  # jittered, not a fixed schedule


@given(st.integers(0, 10), st.floats(0, 30), st.integers(0, 2**32))
def test_retry_after_is_honoured(attempt: int, wait: float, seed: int) -> None:
    delay = retry_delay_s(attempt, wait, base_s=0.5, max_s=30, rng=random.Random(seed))
    assert wait <= delay <= wait * 1.1 + 1e-9
