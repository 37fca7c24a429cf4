"""A chat endpoint as one user of a run sees it (the judge, or one model system): the reply
cache, identical requests in flight asked once, the spend cap, outage detection, and the
token and cost accounting of that user alone."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import sqlite3
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from queryeval.config import ChatEndpoint
from queryeval.llm._budget import SpendCap
from queryeval.llm._cache import ReplyCache
from queryeval.llm._calls import CallError
from queryeval.llm._client import ChatClient, Reply, StructuredOutput
from queryeval.llm._tokens import estimate_prompt_tokens

Messages = list[dict[str, Any]] | Callable[[], list[dict[str, Any]]]
RESERVE_MARGIN = 1.25  # chars/4 can undercount; reserve a bit more so the cap holds


class SpendCapReached(Exception):
    """No further call may be issued: its worst-case cost would pass `max_cost_usd`."""


@dataclass
class ServiceStats:
    """What one user of an endpoint asked and spent: requests, cache hits, requests shared
    with an identical one in flight, failures, spend-cap refusals, tokens and cost."""

    requests: int = 0
    cache_hits: int = 0
    deduplicated: int = 0
    failed: int = 0
    spend_cap_refusals: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-able copy."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Answer:
    """A reply and where it came from: `cached` (the cache, or an identical request in
    flight: then `shared`, and usage and cost are not counted again), calls made."""

    reply: Reply
    cached: bool = False
    shared: bool = False
    attempts: int = 0


class ChatService:
    """Requests by content key to one endpoint, for one user of a run."""

    def __init__(
        self,
        config: ChatEndpoint,
        cache: ReplyCache | None = None,
        *,
        section: str = "judge",
        structured_output: StructuredOutput = "auto",
        rng: random.Random | None = None,
        stats: ServiceStats | None = None,
    ) -> None:
        self.config = config
        self.section = section
        self.cache = cache
        self.client = ChatClient(config, rng, structured_output=structured_output, section=section)
        self.spend = SpendCap(config.max_cost_usd)
        self.stats = stats if stats is not None else ServiceStats()
        self._inflight: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, asyncio.Future[Answer]]
        ] = weakref.WeakKeyDictionary()
        self._consecutive_failures = 0
        self.down_reason: str | None = None
        self.reached = False  # some call of this run reached the server (a reply, an error)
        self.refused = 0  # requests failed for good without ever reaching the server
        self._last_refusal = ""

    def worst_case_cost(self, prompt_tokens: int, max_tokens: int | None = None) -> float:
        """Most a call could cost: the prompt estimate with a margin plus the full completion
        budget (0 without a price)."""
        price = self.config.price
        if price is None:
            return 0.0
        budget = self.config.max_tokens if max_tokens is None else max_tokens
        return price.cost(int(prompt_tokens * RESERVE_MARGIN), budget)

    def cached(self, key: str) -> bool:
        """Whether a request with this key would be answered from the cache."""
        return self.cache is not None and key in self.cache

    async def ask(
        self,
        key: str,
        messages: Messages,
        *,
        source: str = "",
        **call: Any,
    ) -> Answer:
        """The reply to `messages` (keyed by `key`; a function giving them is called only when
        the request is sent): from the cache, shared with an identical request in flight, or
        called. CallError when the call fails for good or the endpoint is marked down;
        SpendCapReached when the cap forbids the call."""
        self.stats.requests += 1
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cache_hits += 1
                return Answer(hit, cached=True)
        loop = asyncio.get_running_loop()
        inflight = self._inflight.setdefault(loop, {})
        leader = inflight.get(key)
        if leader is not None:  # the same request is being asked right now: share its reply
            self.stats.deduplicated += 1
            shared = await asyncio.shield(leader)
            reply = dataclasses.replace(
                shared.reply, usage={}, cost=0.0 if shared.reply.cost is not None else None
            )
            return Answer(reply, cached=True, shared=True)
        future: asyncio.Future[Answer] = loop.create_future()
        future.add_done_callback(_retrieve)
        inflight[key] = future
        try:
            answer = await self._call(
                key, messages() if callable(messages) else messages, source, call
            )
        except BaseException as exc:
            future.set_exception(
                exc if isinstance(exc, CallError | SpendCapReached) else CallError("cancelled", 0)
            )
            raise
        else:
            future.set_result(answer)
            return answer
        finally:
            inflight.pop(key, None)

    async def _call(
        self,
        key: str,
        messages: list[dict[str, Any]],
        source: str,
        call: dict[str, Any],
    ) -> Answer:
        if self.down_reason is not None:
            self.stats.failed += 1
            raise CallError(self.down_reason, 0)
        worst = self.worst_case_cost(estimate_prompt_tokens(messages), call.get("max_tokens"))
        if not self.spend.reserve(worst):
            self.stats.spend_cap_refusals += 1
            raise SpendCapReached(
                f"spend cap reached (max_cost_usd={self.config.max_cost_usd}, spent "
                f"${self.spend.spent_usd:.4f})"
            )
        try:
            reply, attempts = await self.client.complete(messages, **call)
        except CallError as exc:
            self.spend.settle(worst, 0.0)
            self._failed(exc)
            raise
        except asyncio.CancelledError:
            self.spend.settle(worst, 0.0)
            raise
        except Exception as exc:  # the SDK's own surprises: a failed request, never a crash
            self.spend.settle(worst, 0.0)
            error = CallError(f"unexpected error: {type(exc).__name__}: {exc}", 0)
            self._failed(error)
            raise error from None
        self._consecutive_failures = 0
        self.reached = True
        self.spend.settle(worst, reply.cost or 0.0)
        self.stats.prompt_tokens += reply.usage.get("prompt_tokens", 0)
        self.stats.completion_tokens += reply.usage.get("completion_tokens", 0)
        self.stats.cost_usd += reply.cost or 0.0
        if self.cache is not None:
            self.cache.put(key, self.config.model, source, reply)
        return Answer(reply, attempts=attempts)

    def unreachable(self) -> str | None:
        """Why this endpoint cannot be reached at all: a request failed for good with every
        one of its tries (`max_attempts`, with backoff) refused at connection, and no call of
        the run has reached the server. That is the evaluator's configuration (a wrong
        base_url, a server not started), not the system's answers; None otherwise (a server
        that was reached once, or answers with errors, is not this)."""
        if self.reached or not self.refused:
            return None
        return (
            f"cannot connect to {self.config.endpoint}: no request reached the server "
            f"({self._last_refusal}); is it running at this base_url?"
        )

    def _failed(self, exc: CallError) -> None:
        self.stats.failed += 1
        if exc.connection:
            self.refused += 1
            self._last_refusal = exc.message
        else:
            self.reached = True
        self._consecutive_failures += 1
        if self._consecutive_failures >= self.config.outage_after:
            self.down_reason = (
                f"{self.section} endpoint {self.config.endpoint} marked down after "
                f"{self._consecutive_failures} failed requests in a row; last error: {exc}"
            )

    async def aclose(self) -> None:
        """Close the HTTP client of the running loop; record the cache's pending uses."""
        await self.client.aclose()
        if self.cache is not None:
            with contextlib.suppress(sqlite3.Error):
                self.cache.flush()

    def close(self) -> None:
        """Close the cache and the HTTP clients of loops that are not running."""
        self.client.close()
        if self.cache is not None:
            self.cache.close()


def _retrieve(future: asyncio.Future[Answer]) -> None:
    """Mark a failed leader's exception as seen (followers may be none)."""
    if not future.cancelled():
        future.exception()
