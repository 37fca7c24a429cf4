"""A judge's verdict on one input, and its conversion to a Score."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from queryeval.cases import Score

VerdictStatus = Literal["ok", "unscored", "error"]


@dataclass(frozen=True)
class Verdict:
    """What the judge said. `unscored`/`error` carry the reason in `reasoning` and never a
    score: an unparseable reply, a spent budget or an outage is not a zero."""

    score: float | None
    status: VerdictStatus
    reasoning: str = ""
    raw: str | None = None
    cached: bool = False
    usage: dict[str, int] = field(default_factory=dict)
    cost: float | None = None
    model: str = ""
    provider: str = ""  # LiteLLM's provider (`provider:`); "" for the OpenAI-compatible API
    rubric: str = ""
    rubric_hash: str = ""
    attempts: int = 0

    def __post_init__(self) -> None:
        if (self.status == "ok") != (self.score is not None):
            raise ValueError("a verdict has a score exactly when its status is 'ok'")

    @classmethod
    def unscored(cls, why: str, **fields: Any) -> Verdict:
        """No score could be given (unparseable reply, spend cap reached ...)."""
        return cls(score=None, status="unscored", reasoning=why, **fields)

    @classmethod
    def error(cls, why: str, **fields: Any) -> Verdict:
        """The judge could not be asked (outage, bad request, missing key ...)."""
        return cls(score=None, status="error", reasoning=why, **fields)

    def details(self) -> dict[str, Any]:
        """JSON-able record of the judgment for a Score's details."""
        out: dict[str, Any] = {
            "model": self.model,
            "rubric": self.rubric,
            "rubric_hash": self.rubric_hash,
            "status": self.status,
            "score": self.score,
            "reasoning": self.reasoning,
            "cached": self.cached,
            "usage": dict(self.usage),
            "cost_usd": self.cost,
            "attempts": self.attempts,
        }
        if self.provider:
            out["provider"] = self.provider
        if self.status != "ok" and self.raw is not None:
            out["raw"] = self.raw
        return out

    def to_score(self) -> Score:
        """The verdict as a Score; its judge record goes under `details["judge"]`. A judge
        that could not be asked or gave no readable verdict is the evaluator's trouble:
        `unscored`, never a zero (and never a scorer `error`)."""
        details = {"judge": self.details()}
        if self.status == "ok":
            assert self.score is not None
            return Score(value=self.score, explanation=self.reasoning, details=details)
        return Score(status="unscored", explanation=self.reasoning, details=details)
