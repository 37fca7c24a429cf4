"""The judge: renders a rubric, consults the cache, and asks an OpenAI-compatible endpoint
with retries, an adaptive concurrency limit and a spend cap. Never raises for an outage:
every failure becomes an `error` or `unscored` verdict with its reason."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import weakref
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.judges._budget import SpendCap
from queryeval.judges._cache import CachedReply, JudgmentCache, request_key
from queryeval.judges._config import JudgeConfig
from queryeval.judges._limiter import AdaptiveLimiter
from queryeval.judges._parse import parse_reply
from queryeval.judges._retry import retry_after_s, retry_delay_s
from queryeval.judges._rubric import Rubric, builtin_rubric, builtin_rubric_names, load_rubric
from queryeval.judges._tokens import estimate_prompt_tokens
from queryeval.judges._verdict import Verdict

if TYPE_CHECKING:
    from openai import AsyncOpenAI

_RETRYABLE_STATUS = {408, 409, 429}
_RESERVE_MARGIN = 1.25  # chars/4 can undercount; reserve a bit more so the cap holds


class JudgeRequest:
    """A judgment ready to send: rubric, normalised inputs and cache key. The messages are
    rendered on first use, so a cache hit never renders its prompt."""

    def __init__(self, rubric: Rubric, inputs: dict[str, str], key: str) -> None:
        self.rubric = rubric
        self.inputs = inputs
        self.key = key

    @cached_property
    def messages(self) -> list[dict[str, str]]:
        """The chat messages (system prompt, fenced inputs)."""
        return self.rubric.render(self.inputs)

    @cached_property
    def prompt_tokens(self) -> int:
        """Estimated prompt size (chars/4)."""
        return estimate_prompt_tokens(self.messages)


@dataclass
class JudgeStats:
    """Counters over a run: judgments asked, HTTP calls sent, cache hits, failures, spend."""

    judgments: int = 0
    calls: int = 0
    cache_hits: int = 0
    deduplicated: int = 0
    retries: int = 0
    rate_limited: int = 0
    errors: int = 0
    unscored: int = 0
    spend_cap_refusals: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-able copy."""
        return dataclasses.asdict(self)


class JudgeCallError(Exception):
    """A judgment whose call failed for good (retries spent, or an error not worth retrying)."""

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


@dataclass
class _LoopState:
    client: AsyncOpenAI
    inflight: dict[str, asyncio.Future[Verdict]] = field(default_factory=dict)
    closer: asyncio.Task[None] | None = None


async def _close_when_the_loop_ends(client: AsyncOpenAI) -> None:
    """Sleeps until cancelled, then closes the client. `asyncio.run` cancels pending tasks
    before closing its loop, so the client's connections close inside their own loop even
    when the caller never calls `aclose()` (a closed loop can no longer close them)."""
    try:
        await asyncio.Event().wait()
    finally:
        await client.close()


class Judge:
    """An LLM judge over one OpenAI-compatible endpoint. Build it with `judge_from_context`."""

    def __init__(
        self,
        config: JudgeConfig,
        cache_dir: Path | None = None,
        rubric_files: dict[str, Path] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.cache = JudgmentCache(cache_dir / "judge") if config.cache and cache_dir else None
        self.limiter = AdaptiveLimiter(config.concurrency)
        self.spend = SpendCap(config.max_cost_usd)
        self.stats = JudgeStats()
        self._rubric_files = dict(rubric_files or {})
        self._rubrics: dict[str, Rubric] = {}
        self._rng = rng or random.Random(config.seed)
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary()
        )
        self._no_response_format: set[str] = set()
        self._consecutive_failures = 0
        self._down_reason: str | None = None

    # --- rubrics and requests (no calls) ----------------------------------------------------

    def rubric(self, name: str) -> Rubric:
        """The rubric under `name`: the suite's override, else the shipped one (KeyError)."""
        if name not in self._rubrics:
            path = self._rubric_files.get(name)
            self._rubrics[name] = load_rubric(path) if path is not None else builtin_rubric(name)
        return self._rubrics[name]

    def rubric_names(self) -> list[str]:
        """Every rubric this judge can use."""
        return sorted(set(builtin_rubric_names()) | set(self._rubric_files))

    @property
    def params(self) -> dict[str, Any]:
        """Sampling parameters that shape a reply (part of the cache key)."""
        c = self.config
        return {"temperature": c.temperature, "seed": c.seed, "max_tokens": c.max_tokens}

    def request(self, rubric: str, inputs: dict[str, Any]) -> JudgeRequest:
        """Render a judgment without sending it. KeyError: unknown rubric; ValueError:
        a required input is missing."""
        rub = self.rubric(rubric)
        normalised = rub.normalise(inputs)
        key = request_key(self.config.model, rub.hash, normalised, self.params)
        return JudgeRequest(rub, normalised, key)

    def is_cached(self, request: JudgeRequest) -> bool:
        """Whether a re-run would answer `request` from the cache."""
        return self.cache is not None and request.key in self.cache

    def worst_case_cost(self, request: JudgeRequest) -> float:
        """Most a call could cost: the prompt estimate with a margin plus the full completion
        budget."""
        price = self.config.price
        if price is None:
            return 0.0
        prompt = int(request.prompt_tokens * _RESERVE_MARGIN)
        return price.cost(prompt, self.config.max_tokens)

    # --- judging -------------------------------------------------------------------------

    async def judge(self, rubric: str, inputs: dict[str, Any]) -> Verdict:
        """Judge `inputs` with `rubric`. Never raises for the endpoint's failures."""
        self.stats.judgments += 1
        base: dict[str, Any] = {"model": self.config.model, "rubric": rubric}
        try:
            req = self.request(rubric, inputs)
        except KeyError:
            self.stats.errors += 1
            known = ", ".join(self.rubric_names())
            return Verdict.error(f"unknown rubric {rubric!r}; known: {known}", **base)
        except ValueError as exc:
            self.stats.errors += 1
            return Verdict.error(str(exc), **base)
        base["rubric_hash"] = req.rubric.hash
        if self.cache is not None:
            hit = self.cache.get(req.key)
            if hit is not None:
                self.stats.cache_hits += 1
                return self._tally(self._verdict(req, hit, cached=True, attempts=0, base=base))
        state = self._state()
        leader = state.inflight.get(req.key)
        if leader is not None:  # the same judgment is being asked right now: share its answer
            self.stats.deduplicated += 1
            shared = await asyncio.shield(leader)
            return dataclasses.replace(
                shared, cached=True, usage={}, cost=0.0 if shared.cost is not None else None
            )
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        state.inflight[req.key] = future
        try:
            verdict = self._tally(await self._judge_uncached(req, base))
        except BaseException:
            future.set_result(Verdict.error("judgment cancelled", **base))
            raise
        else:
            future.set_result(verdict)
            return verdict
        finally:
            state.inflight.pop(req.key, None)

    async def _judge_uncached(self, req: JudgeRequest, base: dict[str, Any]) -> Verdict:
        if self._down_reason is not None:
            return Verdict.error(self._down_reason, **base)
        worst = self.worst_case_cost(req)
        if not self.spend.reserve(worst):
            self.stats.spend_cap_refusals += 1
            cap = self.config.max_cost_usd
            return Verdict.unscored(
                f"spend cap reached (max_cost_usd={cap}, spent ${self.spend.spent_usd:.4f})", **base
            )
        try:
            reply, attempts = await self._call(req)
        except JudgeCallError as exc:
            self.spend.settle(worst, 0.0)
            self._consecutive_failures += 1
            if self._consecutive_failures >= self.config.outage_after:
                self._down_reason = (
                    f"judge endpoint {self.config.endpoint} marked down after "
                    f"{self._consecutive_failures} failed judgments in a row; last error: {exc}"
                )
            return Verdict.error(str(exc), attempts=exc.attempts, **base)
        except Exception as exc:  # a judge problem must not stop the run
            self.spend.settle(worst, 0.0)
            return Verdict.error(f"unexpected judge error: {type(exc).__name__}: {exc}", **base)
        self._consecutive_failures = 0
        self.spend.settle(worst, reply.cost or 0.0)
        self.stats.prompt_tokens += reply.usage.get("prompt_tokens", 0)
        self.stats.completion_tokens += reply.usage.get("completion_tokens", 0)
        self.stats.cost_usd += reply.cost or 0.0
        if self.cache is not None:
            self.cache.put(req.key, self.config.model, req.rubric.name, reply)
        return self._verdict(req, reply, cached=False, attempts=attempts, base=base)

    def _tally(self, verdict: Verdict) -> Verdict:
        if verdict.status == "error":
            self.stats.errors += 1
        elif verdict.status == "unscored":
            self.stats.unscored += 1
        return verdict

    def _verdict(
        self,
        req: JudgeRequest,
        reply: CachedReply,
        *,
        cached: bool,
        attempts: int,
        base: dict[str, Any],
    ) -> Verdict:
        """Read the score out of a reply; a reply without a usable score is `unscored`."""
        extra: dict[str, Any] = {
            "raw": reply.text,
            "usage": reply.usage,
            "cost": reply.cost,
            "cached": cached,
            "attempts": attempts,
        }
        parsed = parse_reply(reply.text)
        if parsed is None:
            why = "the judge's reply holds no recognisable score"
            if reply.finish_reason == "length":
                why += " (the reply was cut at max_tokens)"
            return Verdict.unscored(why, **extra, **base)
        lo, hi = req.rubric.scale.min, req.rubric.scale.max
        if not lo <= parsed.score <= hi:
            return Verdict.unscored(
                f"the judge's score {parsed.score:g} is outside the rubric's scale "
                f"[{lo:g}, {hi:g}]",
                **extra,
                **base,
            )
        score = (parsed.score - lo) / (hi - lo)
        return Verdict(score=score, status="ok", reasoning=parsed.reasoning, **extra, **base)

    # --- the HTTP call ---------------------------------------------------------------------

    def _state(self) -> _LoopState:
        """Clients and in-flight maps are bound to an event loop; keep one set per loop."""
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            from openai import AsyncOpenAI

            env = self.config.api_key_env
            key = os.environ.get(env) if env else "unused"
            client = AsyncOpenAI(
                api_key=key or "missing",
                base_url=self.config.base_url,
                max_retries=0,  # we retry ourselves, sharing rate-limit feedback across calls
                timeout=self.config.timeout_s,
            )
            state = self._loops[loop] = _LoopState(client)
            state.closer = loop.create_task(_close_when_the_loop_ends(client))
        return state

    def _structured(self) -> bool:
        mode = self.config.structured_output
        return mode == "json_schema" or (
            mode == "auto" and self.config.endpoint not in self._no_response_format
        )

    def _call_args(self, req: JudgeRequest, structured: bool) -> dict[str, Any]:
        c = self.config
        args: dict[str, Any] = {
            "model": c.model,
            "messages": req.messages,
            "temperature": c.temperature,
            "max_tokens": c.max_tokens,
        }
        if c.seed is not None:
            args["seed"] = c.seed
        if structured:
            args["response_format"] = _response_format(req.rubric)
        return args

    async def _call(self, req: JudgeRequest) -> tuple[CachedReply, int]:
        """One judgment's calls: retried on 429/5xx/timeouts/connection errors with backoff."""
        import openai

        env = self.config.api_key_env
        if env and not os.environ.get(env):
            raise JudgeCallError(
                f"environment variable {env} (judge.api_key_env) is not set; set it to the "
                "judge's API key, or set api_key_env: null for an endpoint without keys",
                attempts=0,
            )
        client = self._state().client
        structured = self._structured()
        dropped_format = False
        attempt = 0
        c = self.config
        while True:
            wait_hint: float | None = None
            async with self.limiter.slot(retry=attempt > 0 or dropped_format) as ticket:
                self.stats.calls += 1
                try:
                    response = await client.chat.completions.create(
                        **self._call_args(req, structured)
                    )
                except openai.RateLimitError as exc:
                    if exc.code == "insufficient_quota":
                        raise JudgeCallError(
                            f"HTTP 429 insufficient_quota: {exc.message}", attempt + 1
                        ) from None
                    ticket.overloaded = True
                    self.stats.rate_limited += 1
                    wait_hint = retry_after_s(exc.response.headers)
                    last = "HTTP 429 (rate limited)"
                except openai.APIStatusError as exc:
                    status = exc.status_code
                    if status in (400, 422) and structured and c.structured_output == "auto":
                        structured, dropped_format = False, True  # retry at once, plain JSON prompt
                        continue
                    if status not in _RETRYABLE_STATUS and status < 500:
                        raise JudgeCallError(f"HTTP {status}: {exc.message}", attempt + 1) from None
                    wait_hint = retry_after_s(exc.response.headers)
                    last = f"HTTP {status}: {exc.message}"
                except openai.APITimeoutError:
                    last = f"timed out after {c.timeout_s:g}s"
                except openai.APIConnectionError as exc:
                    last = f"connection error: {exc}"
                else:
                    ticket.succeeded = True
                    if dropped_format:  # remember: this endpoint rejects response_format
                        self._no_response_format.add(c.endpoint)
                    return self._reply(response), attempt + 1
            attempt += 1
            if attempt >= c.max_attempts:
                raise JudgeCallError(f"gave up after {attempt} attempts; last: {last}", attempt)
            if wait_hint is not None and wait_hint > c.max_retry_after_s:
                raise JudgeCallError(
                    f"{last}; the endpoint asks to wait {wait_hint:.0f}s, more than "
                    f"max_retry_after_s={c.max_retry_after_s:g}",
                    attempt,
                )
            self.stats.retries += 1
            delay = retry_delay_s(
                attempt - 1,
                wait_hint,
                base_s=c.backoff_base_s,
                max_s=c.backoff_max_s,
                rng=self._rng,
            )
            await asyncio.sleep(delay)

    def _reply(self, response: Any) -> CachedReply:
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content or "") if choice is not None else ""
        usage = response.usage
        counts = {
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
        }
        price = self.config.price
        cost = price.cost(counts["prompt_tokens"], counts["completion_tokens"]) if price else None
        return CachedReply(text, counts, cost, getattr(choice, "finish_reason", None))

    # --- lifecycle -------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """Model, endpoint and parameters, for the run record."""
        return {"model": self.config.model, "endpoint": self.config.endpoint, **self.params}

    async def aclose(self) -> None:
        """Close the HTTP client of the running loop."""
        state = self._loops.pop(asyncio.get_running_loop(), None)
        if state is not None:
            if state.closer is not None:
                state.closer.cancel()
            await state.client.close()

    def close(self) -> None:
        """Close the cache and the HTTP clients of loops that are not running."""
        for loop, state in list(self._loops.items()):
            if not loop.is_closed() and not loop.is_running():
                if state.closer is not None:
                    state.closer.cancel()
                loop.run_until_complete(state.client.close())
        self._loops.clear()
        if self.cache is not None:
            self.cache.close()


def _response_format(rubric: Rubric) -> dict[str, Any]:
    """JSON-schema structured output: reasoning first (so the model reasons before scoring)."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "verdict",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {
                    "reasoning": {"type": "string"},
                    "score": {
                        "type": "number",
                        "description": f"from {rubric.scale.min:g} to {rubric.scale.max:g}",
                    },
                },
                "required": ["reasoning", "score"],
                "additionalProperties": False,
            },
        },
    }
