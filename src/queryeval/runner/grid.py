"""Seed 004 phase 3 (`queryeval grid`, after a run): the top N configurations of a grid
re-scored with the LLM judge and ranked again (`unscored`, with why, without a judge)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from queryeval.cases import Case, Output, Score
from queryeval.scorers import ScoringContext, ascore_case
from queryeval.scorers.answer import AnswerOptions, AnswerScorer
from queryeval.stats import Leaderboard, leaderboard


@dataclass(frozen=True)
class FinalRanking:
    """The judge's leaderboard of the top-N candidates (None when unscored)."""

    status: Literal["ok", "unscored"]
    message: str
    candidates: tuple[str, ...]
    board: Leaderboard | None
    judge_calls: int
    cost: float | None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        return {
            "status": self.status,
            "message": self.message,
            "candidates": list(self.candidates),
            "leaderboard": self.board.to_dict() if self.board is not None else None,
            "judge_calls": self.judge_calls,
            "cost": self.cost,
        }


async def judge_top_configurations(
    board: Leaderboard,
    cases: Sequence[Case],
    outputs: Mapping[str, Mapping[str, Output]],
    ctx: ScoringContext,
    *,
    top_n: int = 5,
    concurrency: int = 8,
    seed: int = 0,
    n_resamples: int = 2000,
) -> FinalRanking:
    """Judge (`answer_correctness` rubric) every case of the `top_n` best configurations of
    `board`; `outputs` maps configuration -> case id -> Output. Costs top_n x cases calls
    (fewer when the judge's cache has them)."""
    candidates = tuple(board.top(top_n))
    scorer = AnswerScorer(AnswerOptions(evaluation_method="llm_judge"))
    scorer.prepare(cases, ctx)
    missing = scorer.judge_missing
    if missing is not None:
        return FinalRanking("unscored", missing, candidates, None, 0, None)
    gate = asyncio.Semaphore(concurrency)

    async def one(config: str, case: Case) -> tuple[str, str, Score | None]:
        output = outputs.get(config, {}).get(case.id)
        if output is None:
            return config, case.id, None
        async with gate:
            return config, case.id, await ascore_case(scorer, case, output, ctx)

    results = await asyncio.gather(*(one(cfg, case) for cfg in candidates for case in cases))
    per_config: dict[str, dict[str, float | None]] = {cfg: {} for cfg in candidates}
    judged = [(cfg, case_id, s) for cfg, case_id, s in results if s is not None]
    for config, case_id, score in judged:
        per_config[config][case_id] = score.value if score.status == "ok" else None
    costs = [float(c) for *_, s in judged
             if isinstance(c := s.details.get("judge", {}).get("cost"), int | float)]  # fmt: skip
    final = leaderboard(per_config, n_resamples=n_resamples, seed=seed)
    message = f"top {len(candidates)} re-scored with the LLM judge"
    return FinalRanking(
        "ok", message, candidates, final, len(judged), sum(costs) if costs else None
    )
