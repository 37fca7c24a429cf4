"""Seed 004 phase 3 (`queryeval grid`, after a run): the top N configurations of a grid
re-scored with the LLM judge and ranked again (`unscored`, with why, without a judge)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from queryeval.cases import Case, Output, Score
from queryeval.config import SuiteConfig
from queryeval.scorers import ScoringContext
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
    from queryeval.runner._plan import SystemRun
    from queryeval.runner._work import LocalServices, Unit, Worker

    candidates = tuple(board.top(top_n))
    scorer = AnswerScorer(AnswerOptions(evaluation_method="llm_judge"))
    scorer.prepare(cases, ctx)
    if (missing := scorer.judge_missing) is not None:
        return FinalRanking("unscored", missing, candidates, None, 0, None)
    # the run's one loop on this event loop, `concurrency` at once: each candidate a system
    # whose outputs are the stored ones (a case without one counts as done)
    given = {cfg: [outputs.get(cfg, {}).get(c.id) for c in cases] for cfg in candidates}
    done = {
        cfg: frozenset(c.id for c in cases if c.id not in outputs.get(cfg, {})) for cfg in given
    }
    suite = cast(SuiteConfig, ctx.suite)  # read by a worker only to build what it is given here
    worker = Worker("grid", suite, ctx.cache_dir, (), LocalServices(ctx), list(cases))
    worker.width = concurrency
    worker.start({"judge": scorer}, [SystemRun(cfg, {}) for cfg in candidates], prepared=True)
    got: dict[tuple[str, str], Score] = {}
    try:
        await worker.arun(Unit(0, candidates, range(len(cases)), outputs=given, done=done),
                          lambda s: got.__setitem__((s.record["system"], s.record["case_id"]),
                                                    s.scores["judge"]))  # fmt: skip
    finally:
        worker.close(close_context=False)  # the caller's context stays theirs
    judged = {cfg: {c.id: got[cfg, c.id] for c in cases if (cfg, c.id) in got} for cfg in given}
    per_config = {cfg: {i: s.value if s.status == "ok" else None for i, s in mine.items()}
                  for cfg, mine in judged.items()}  # fmt: skip
    costs = [float(c) for mine in judged.values() for s in mine.values()
             if isinstance(c := s.details.get("judge", {}).get("cost"), int | float)]  # fmt: skip
    final = leaderboard(per_config, n_resamples=n_resamples, seed=seed)
    message = f"top {len(candidates)} re-scored with the LLM judge"
    calls, cost = sum(map(len, judged.values())), sum(costs) if costs else None
    return FinalRanking("ok", message, candidates, final, calls, cost)
