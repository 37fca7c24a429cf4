"""The judge: renders a rubric, consults the cache, and asks an OpenAI-compatible endpoint
with retries, an adaptive concurrency limit and a spend cap. Never raises for an outage:
every failure becomes an `error` or `unscored` verdict with its reason."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import weakref
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from queryeval.judges._budget import SpendCap
from queryeval.judges._cache import JudgmentCache, request_key
from queryeval.judges._client import ChatClient, JudgeCallError, Reply
from queryeval.judges._config import JudgeConfig
from queryeval.judges._parse import parse_reply
from queryeval.judges._rubric import Rubric, builtin_rubric, builtin_rubric_names, load_rubric
from queryeval.judges._tokens import estimate_prompt_tokens
from queryeval.judges._verdict import Verdict

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
    """Counters over a run: judgments asked, cache hits, failures, tokens and spend (HTTP
    calls, retries and 429s are in `Judge.client.stats`)."""

    judgments: int = 0
    cache_hits: int = 0
    deduplicated: int = 0
    errors: int = 0
    unscored: int = 0
    spend_cap_refusals: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-able copy."""
        return dataclasses.asdict(self)


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
        self.client = ChatClient(config, rng)
        self.spend = SpendCap(config.max_cost_usd)
        self.stats = JudgeStats()
        self._rubric_files = dict(rubric_files or {})
        self._rubrics: dict[str, Rubric] = {}
        self._inflight: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, asyncio.Future[Verdict]]
        ] = weakref.WeakKeyDictionary()
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
        inflight = self._inflight.setdefault(asyncio.get_running_loop(), {})
        leader = inflight.get(req.key)
        if leader is not None:  # the same judgment is being asked right now: share its answer
            self.stats.deduplicated += 1
            shared = await asyncio.shield(leader)
            return dataclasses.replace(
                shared, cached=True, usage={}, cost=0.0 if shared.cost is not None else None
            )
        future: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        inflight[req.key] = future
        try:
            verdict = self._tally(await self._judge_uncached(req, base))
        except BaseException:
            future.set_result(Verdict.error("judgment cancelled", **base))
            raise
        else:
            future.set_result(verdict)
            return verdict
        finally:
            inflight.pop(req.key, None)

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
            reply, attempts = await self.client.complete(req.messages, _response_format(req.rubric))
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
        reply: Reply,
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

    # --- lifecycle -------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """Model, endpoint and parameters, for the run record."""
        return {"model": self.config.model, "endpoint": self.config.endpoint, **self.params}

    async def aclose(self) -> None:
        """Close the HTTP client of the running loop."""
        await self.client.aclose()

    def close(self) -> None:
        """Close the cache and the HTTP clients of loops that are not running."""
        self.client.close()
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
