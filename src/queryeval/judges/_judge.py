"""The judge: renders a rubric, consults the cache, and asks an OpenAI-compatible endpoint
with retries, an adaptive concurrency limit and a spend cap. Never raises for an outage:
every failure becomes an `error` or `unscored` verdict with its reason."""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from queryeval.judges._config import JudgeConfig
from queryeval.judges._parse import parse_reply
from queryeval.judges._rubric import Rubric, builtin_rubric, builtin_rubric_names, load_rubric
from queryeval.judges._verdict import Verdict
from queryeval.llm import (
    DEFAULT_MAX_BYTES,
    CallError,
    ChatService,
    Reply,
    ReplyCache,
    ServiceStats,
    SpendCapReached,
    estimate_prompt_tokens,
    request_key,
)


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
class JudgeStats(ServiceStats):
    """Counters over a run: judgments asked and their errors and unscored verdicts, beside
    the endpoint's (requests, cache hits, shared requests, spend-cap refusals, tokens, cost;
    HTTP calls, retries and 429s are in `Judge.client.stats`)."""

    judgments: int = 0
    errors: int = 0
    unscored: int = 0


class Judge:
    """An LLM judge over one OpenAI-compatible endpoint. Build it with `judge_from_context`."""

    def __init__(
        self,
        config: JudgeConfig,
        cache_dir: Path | None = None,
        rubric_files: dict[str, Path] | None = None,
        rng: random.Random | None = None,
        *,
        cache_max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.config = config
        cache = (
            ReplyCache(cache_dir / "judge" / "judgments.sqlite", cache_max_bytes)
            if config.cache and cache_dir
            else None
        )
        self.stats = JudgeStats()
        self.service = ChatService(
            config,
            cache,
            section="judge",
            rng=rng,
            stats=self.stats,
            structured_output=config.structured_output,
        )
        self.cache = cache
        self.client = self.service.client
        self.spend = self.service.spend
        self._rubric_files = dict(rubric_files or {})
        self._rubrics: dict[str, Rubric] = {}

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
        key = request_key(
            model=self.config.model, rubric=rub.hash, inputs=normalised, params=self.params
        )
        return JudgeRequest(rub, normalised, key)

    def is_cached(self, request: JudgeRequest) -> bool:
        """Whether a re-run would answer `request` from the cache."""
        return self.service.cached(request.key)

    def worst_case_cost(self, request: JudgeRequest) -> float:
        """Most a call could cost: the prompt estimate with a margin plus the full completion
        budget."""
        return self.service.worst_case_cost(request.prompt_tokens)

    # --- judging -------------------------------------------------------------------------

    async def judge(self, rubric: str, inputs: dict[str, Any]) -> Verdict:
        """Judge `inputs` with `rubric`. Never raises for the endpoint's failures."""
        self.stats.judgments += 1
        base: dict[str, Any] = {"model": self.config.model, "rubric": rubric}
        if self.config.provider:
            base["provider"] = self.config.provider
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
        try:
            answer = await self.service.ask(
                req.key,
                lambda: req.messages,
                source=req.rubric.name,
                response_format=_response_format(req.rubric),
            )
        except SpendCapReached as exc:
            return self._tally(Verdict.unscored(str(exc), **base))
        except CallError as exc:
            return self._tally(Verdict.error(str(exc), attempts=exc.attempts, **base))
        verdict = self._verdict(
            req, answer.reply, cached=answer.cached, attempts=answer.attempts, base=base
        )
        return self._tally(verdict)

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
        parsed = parse_reply(reply.text, req.inputs.values())  # never a number it quotes
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
        await self.service.aclose()

    def close(self) -> None:
        """Close the cache and the HTTP clients of loops that are not running."""
        self.service.close()


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
