"""What running the suite's model and endpoint systems would cost, computed before any call:
requests not in the output cache, estimated tokens (chars/4) and dollars."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from queryeval.cases import Case

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig
    from queryeval.scorers import ScoringContext


@dataclass(frozen=True)
class SystemEstimate:
    """Calls one system would make. `refine_extra`: further refinement iterations that may
    follow the first (how many depends on what the checks find)."""

    system: str
    kind: str
    model: str | None = None
    requests: int = 0
    cached: int = 0
    to_call: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    worst_case_usd: float | None = None
    max_cost_usd: float | None = None
    refine_extra: int = 0

    def line(self) -> str:
        """One line for the console."""
        if self.kind == "endpoint":
            return (
                f"system {self.system} (endpoint): {self.to_call} call(s) to make "
                "(services are not cached)"
            )
        from queryeval.llm import spend_parts  # asyncio and HTTP: only when estimating

        parts = [
            f"system {self.system} ({self.model}): {self.to_call} call(s) to make "
            f"({self.cached} of {self.requests} request(s) cached)"
        ]
        parts += spend_parts(
            self.to_call,
            self.prompt_tokens,
            self.completion_tokens,
            self.cost_usd,
            self.worst_case_usd,
            "model.prices",
        )
        if self.refine_extra:
            parts.append(
                f"refinement may add up to {self.refine_extra} call(s) (those not cached: "
                "which are asked depends on what the checks find)"
            )
        if self.max_cost_usd is not None:
            parts.append(f"spend cap ${self.max_cost_usd:g}")
        return "; ".join(parts)


def estimate_systems(
    suite: SuiteConfig, cases: Sequence[Case], ctx: ScoringContext
) -> list[SystemEstimate]:
    """One estimate per model or endpoint system (cache look-ups only; engines may start
    to render schemas; nothing is sent)."""
    from queryeval.systems._build import build_system
    from queryeval.systems._endpoint import EndpointSystem
    from queryeval.systems._model import ModelSystem

    out = []
    for i, config in enumerate(suite.systems):
        if config.model is None and config.endpoint is None:
            continue
        system = build_system(suite, i, config, cases)
        if isinstance(system, EndpointSystem):
            out.append(
                SystemEstimate(config.name, "endpoint", requests=len(cases), to_call=len(cases))
            )
            continue
        assert isinstance(system, ModelSystem)
        system.attach(ctx)
        out.append(_estimate_model(system, cases))
    return out


def _estimate_model(system: object, cases: Sequence[Case]) -> SystemEstimate:
    from queryeval.systems._model import ModelSystem

    assert isinstance(system, ModelSystem)
    spec = system.spec
    seen: set[str] = set()
    requests = cached = prompt = 0
    worst = 0.0
    for case in cases:
        for key, messages in system.first_requests(case):
            requests += 1
            if key in seen or system.service.cached(key):
                cached += 1
                continue
            seen.add(key)
            tokens = system.prompt_tokens(messages)
            prompt += tokens
            worst += system.service.worst_case_cost(tokens)
    to_call = requests - cached
    completion = to_call * spec.estimate_output_tokens
    refine = system.config.refine
    # later iterations depend on the checks' findings: the bound counts them all
    extra = len(cases) * (refine.max_iterations - 1) if refine is not None else 0
    price = spec.price
    return SystemEstimate(
        system=system.config.name,
        kind="model",
        model=spec.model,
        requests=requests,
        cached=cached,
        to_call=to_call,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=price.cost(prompt, completion) if price else None,
        worst_case_usd=worst if price else None,
        max_cost_usd=spec.max_cost_usd,
        refine_extra=extra,
    )
