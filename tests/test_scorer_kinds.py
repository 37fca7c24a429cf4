"""What a scorer declares: a coroutine `score` (AsyncScorer), parts of the aggregate made in
forked workers (ShardableScorer), a blocking `score`."""

from __future__ import annotations

from queryeval.cases import Case, Output, Score
from queryeval.scorers import AsyncScorer, Scorer, ScoringContext, ShardableScorer, scorer_class


def test_coroutine_scorers_are_async_declared_or_not() -> None:
    class Declared(AsyncScorer):
        async def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:  # type: ignore[override]
            return Score(value=1.0)

    class Plain(Scorer):  # a coroutine score on the plain base is still seen
        async def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:  # type: ignore[override]
            return Score(value=1.0)

    class Sync(Scorer):
        def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
            return Score(value=1.0)

    assert Declared.is_async and Plain.is_async and not Sync.is_async
    assert scorer_class("llm_query_similarity").is_async
    assert scorer_class("answer").is_async and not scorer_class("bleu").is_async


def test_only_shardable_scorers_carry_partial_aggregates() -> None:
    assert issubclass(scorer_class("term_selection"), ShardableScorer)
    assert not issubclass(scorer_class("execution_match"), ShardableScorer)
    assert not hasattr(Scorer, "aggregate_partial")
    assert scorer_class("bird_ves").blocking and not scorer_class("bleu").blocking
