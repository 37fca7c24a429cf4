"""What judging will cost, computed before any call: calls not in cache, tokens, dollars."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from queryeval.judges._judge import Judge, JudgeRequest
from queryeval.llm import TOKENIZER_NOTE, spend_parts


@dataclass(frozen=True)
class Estimate:
    """Judge calls a run would make and what they would cost (None: no price known).

    `approximate` counts judgments whose output is not generated yet: their size is guessed
    from the gold, and they are never counted as cached.
    """

    model: str | None
    judgments: int = 0
    cached: int = 0
    to_call: int = 0
    approximate: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    worst_case_usd: float | None = None
    max_cost_usd: float | None = None
    by_rubric: dict[str, int] = field(default_factory=dict)
    tokenizer: str = TOKENIZER_NOTE

    def line(self) -> str:
        """One line for the console, printed before a run starts spending."""
        if self.model is None:
            return "judge: none configured (judged scores will be unscored); 0 judge calls"
        parts = [
            f"judge {self.model}: {self.to_call} call(s) to make "
            f"({self.cached} of {self.judgments} judgment(s) cached)",
        ]
        parts += spend_parts(
            self.to_call,
            self.prompt_tokens,
            self.completion_tokens,
            self.cost_usd,
            self.worst_case_usd,
            "judge.prices",
        )
        if self.max_cost_usd is not None:
            parts.append(f"spend cap ${self.max_cost_usd:g}")
        if self.approximate:
            parts.append(f"{self.approximate} sized from the gold (outputs not generated yet)")
        return "; ".join(parts)


def estimate_requests(
    judge: Judge | None, requests: Iterable[tuple[JudgeRequest, bool]]
) -> Estimate:
    """Sum (request, approximate) pairs: cache look-ups only, nothing is sent."""
    if judge is None:
        return Estimate(model=None)
    judgments = cached = approximate = prompt = 0
    worst = 0.0
    by_rubric: Counter[str] = Counter()
    seen: set[str] = set()
    for req, approx in requests:
        judgments += 1
        by_rubric[req.rubric.name] += 1
        if not approx and (req.key in seen or judge.is_cached(req)):
            cached += 1
            continue
        seen.add(req.key)
        approximate += int(approx)
        prompt += req.prompt_tokens
        worst += judge.worst_case_cost(req)
    to_call = judgments - cached
    completion = to_call * judge.config.estimate_output_tokens
    price = judge.config.price
    return Estimate(
        model=judge.config.model,
        judgments=judgments,
        cached=cached,
        to_call=to_call,
        approximate=approximate,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=price.cost(prompt, completion) if price else None,
        worst_case_usd=worst if price else None,
        max_cost_usd=judge.config.max_cost_usd,
        by_rubric=dict(by_rubric),
    )
