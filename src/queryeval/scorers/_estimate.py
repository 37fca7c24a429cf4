"""What the suite's judged scorers would cost, before any judge call is made."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from queryeval.cases import Case, Output, Score
from queryeval.scorers._base import Scorer, ScoringContext
from queryeval.scorers._registry import build_scorer

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig
    from queryeval.judges import Estimate, JudgeRequest
    from queryeval.scorers.judged import _JudgedScorer


def judged_scorers(scorers: Sequence[Scorer]) -> Iterator[_JudgedScorer]:
    """Every judged scorer, looking inside composites."""
    from queryeval.scorers.judged import _JudgedScorer

    for scorer in scorers:
        if isinstance(scorer, _JudgedScorer):
            yield scorer
        yield from judged_scorers(getattr(scorer, "components", []))


def estimate(
    suite: SuiteConfig,
    cases: Sequence[Case],
    outputs: Mapping[str, Mapping[str, Output]] | None = None,
    *,
    cache_dir: Path | None = None,
    ctx: ScoringContext | None = None,
) -> Estimate:
    """Judge calls not in cache, estimated tokens and cost for scoring `cases` with every
    system configuration of the suite. `outputs` maps system configuration name -> case id
    -> Output; a missing output (not generated yet) is sized from the gold and never
    counted as cached. Calls nothing."""
    from queryeval.judges import estimate_requests

    own = ctx is None
    context = ctx if ctx is not None else ScoringContext(suite, cache_dir)
    try:
        judge = context.judge()
        if judge is None:
            return estimate_requests(None, [])
        scorers = list(judged_scorers([build_scorer(c) for c in suite.scorers]))
        names = [name for system in suite.systems for name, _ in system.configurations()]
        requests: list[tuple[JudgeRequest, bool]] = []
        for name in names:
            produced = (outputs or {}).get(name, {})
            for case in cases:
                output = produced.get(case.id)
                for scorer in scorers:
                    inputs = scorer.judge_inputs(case, output, context)
                    if isinstance(inputs, Score):
                        continue
                    try:
                        requests.append((judge.request(scorer.rubric, inputs), output is None))
                    except (KeyError, ValueError):  # unknown rubric / missing input: no call
                        continue
        return estimate_requests(judge, requests)
    finally:
        if own:  # engines opened for schemas, the cache file
            context.close()
