"""The adaptive (AIMD) concurrency limit: halve on 429, +1 on success, within bounds."""

import asyncio

import pytest

from queryeval.llm import AdaptiveLimiter, Ticket


def test_halves_on_overload_and_grows_by_one() -> None:
    lim = AdaptiveLimiter(32)
    lim.settle(Ticket(epoch=0, overloaded=True), now=10.0)
    assert lim.limit == 16
    lim.settle(Ticket(epoch=1, succeeded=True, started=10.0), now=10.2)
    assert lim.limit == 17


def test_bounds() -> None:
    lim = AdaptiveLimiter(4, minimum=1)
    for i in range(10):
        lim.settle(Ticket(epoch=lim._epoch, overloaded=True), now=float(i) * 100)
    assert lim.limit == 1
    for _ in range(10):
        lim.settle(Ticket(epoch=lim._epoch, succeeded=True, started=0.0), now=0.1)
    assert lim.limit == 4


def test_one_decrease_per_window() -> None:
    lim = AdaptiveLimiter(32)
    old = [Ticket(epoch=0, overloaded=True) for _ in range(5)]
    for t in old:  # a burst of 429s from calls sent under the old limit
        lim.settle(t, now=1.0)
    assert lim.limit == 16 and lim.decreases == 1
    lim.rtt_s = 0.2
    lim.settle(Ticket(epoch=1, overloaded=True), now=1.05)  # new call, but within one RTT
    assert lim.limit == 16
    lim.settle(Ticket(epoch=1, overloaded=True), now=1.3)
    assert lim.limit == 8 and lim.decreases == 2


def test_rejects_bad_bounds() -> None:
    with pytest.raises(ValueError):
        AdaptiveLimiter(2, minimum=3)


def test_never_more_in_flight_than_the_limit() -> None:
    async def run() -> tuple[int, int]:
        lim = AdaptiveLimiter(5)
        peak = 0
        now_in = 0

        async def call(i: int) -> None:
            nonlocal peak, now_in
            async with lim.slot() as ticket:
                now_in += 1
                peak = max(peak, now_in)
                await asyncio.sleep(0.002)
                now_in -= 1
                if i == 10:
                    ticket.overloaded = True  # limit 5 -> 2 (then grows back)
                else:
                    ticket.succeeded = True

        await asyncio.gather(*(call(i) for i in range(60)))
        assert lim.decreases == 1
        assert lim.limit == 5  # grown back by the successes after the 429
        return peak, lim.in_flight

    peak, left = asyncio.run(run())
    assert peak == 5
    assert left == 0


def test_retries_are_served_before_new_calls() -> None:
    async def run() -> list[str]:
        lim = AdaptiveLimiter(1)
        order: list[str] = []
        gate = asyncio.Event()

        async def call(name: str, retry: bool) -> None:
            async with lim.slot(retry=retry) as ticket:
                order.append(name)
                if name == "first":
                    await gate.wait()
                ticket.succeeded = True

        first = asyncio.create_task(call("first", False))
        await asyncio.sleep(0)
        waiting = [
            asyncio.create_task(call("new", False)),
            asyncio.create_task(call("retry", True)),
        ]
        await asyncio.sleep(0)
        gate.set()
        await asyncio.gather(first, *waiting)
        return order

    assert asyncio.run(run()) == ["first", "retry", "new"]


def test_a_cancelled_waiter_leaks_no_slot() -> None:
    async def run() -> int:
        lim = AdaptiveLimiter(1)
        hold = asyncio.Event()

        async def call() -> None:
            async with lim.slot():
                await hold.wait()

        holder = asyncio.create_task(call())
        await asyncio.sleep(0)
        waiter = asyncio.create_task(call())
        await asyncio.sleep(0)
        waiter.cancel()
        hold.set()
        await holder
        await asyncio.gather(waiter, return_exceptions=True)
        async with lim.slot():  # the slot is free again
            return lim.in_flight

    assert asyncio.run(run()) == 1
