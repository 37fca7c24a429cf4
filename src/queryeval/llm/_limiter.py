"""An adaptive concurrency limit per endpoint (AIMD: additive increase, multiplicative decrease).

Hand-written: asyncio.Semaphore has a fixed size and no installed library adapts a limit
to rate-limit feedback. The limit halves on a 429 and grows by one on each success, between
1 and the configured maximum. As in TCP congestion control, it decreases at most once per
round trip: a 429 from a call started before the last decrease, or arriving less than one
smoothed round-trip time after it, does not decrease again (those calls were sent under the
old limit; counting each of them would collapse the limit after a single burst).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


@dataclass
class Ticket:
    """A granted slot: mark it `overloaded` (429) or `succeeded` before leaving the slot."""

    epoch: int
    started: float = field(default_factory=time.monotonic)
    overloaded: bool = False
    succeeded: bool = False


class AdaptiveLimiter:
    """At most `limit` calls in flight; the limit adapts between `minimum` and `maximum`.

    Waiting calls are served first come, first served, except that retries go before new
    calls: they have waited longest, and serving them last would leave a tail of retries
    after everything else finished.
    """

    def __init__(self, maximum: int, minimum: int = 1, factor: float = 0.5) -> None:
        if not 1 <= minimum <= maximum:
            raise ValueError("need 1 <= minimum <= maximum")
        if not 0 < factor < 1:
            raise ValueError("the decrease factor must be between 0 and 1")
        self.maximum = maximum
        self.minimum = minimum
        self.factor = factor
        self.limit = float(maximum)
        self.in_flight = 0
        self.decreases = 0
        self.lowest = float(maximum)
        self.rtt_s: float | None = None  # smoothed duration of successful calls
        self._epoch = 0
        self._last_decrease = float("-inf")
        self._retries: deque[asyncio.Future[None]] = deque()
        self._new: deque[asyncio.Future[None]] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None

    @asynccontextmanager
    async def slot(self, retry: bool = False) -> AsyncIterator[Ticket]:
        """Hold one slot for a call; mark the ticket `overloaded` or `succeeded` inside."""
        await self._acquire(retry)
        ticket = Ticket(self._epoch)
        try:
            yield ticket
        finally:
            self.settle(ticket, time.monotonic())
            self.in_flight -= 1
            self._wake()

    async def _acquire(self, retry: bool) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # waiters of another (finished) loop cannot be woken
            self._loop, self._retries, self._new, self.in_flight = loop, deque(), deque(), 0
        if self.in_flight < int(self.limit) and not self._retries and not self._new:
            self.in_flight += 1
            return
        waiter: asyncio.Future[None] = loop.create_future()
        (self._retries if retry else self._new).append(waiter)
        try:
            await waiter  # `_wake` counts the slot in before it resolves the waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # granted, then cancelled: give back
                self.in_flight -= 1
                self._wake()
            else:
                for queue in (self._retries, self._new):
                    if waiter in queue:
                        queue.remove(waiter)
            raise

    def _wake(self) -> None:
        """Hand free slots to waiters, retries first."""
        while self.in_flight < int(self.limit) and (self._retries or self._new):
            waiter = (self._retries or self._new).popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)

    def settle(self, ticket: Ticket, now: float) -> None:
        """Adapt the limit to the outcome of one call."""
        if ticket.overloaded:
            recent = self.rtt_s is not None and now - self._last_decrease < self.rtt_s
            if ticket.epoch == self._epoch and not recent:
                self.limit = max(float(self.minimum), self.limit * self.factor)
                self.lowest = min(self.lowest, self.limit)
                self._epoch += 1
                self._last_decrease = now
                self.decreases += 1
        elif ticket.succeeded:
            self.limit = min(float(self.maximum), self.limit + 1)
            took = now - ticket.started
            self.rtt_s = took if self.rtt_s is None else 0.875 * self.rtt_s + 0.125 * took
