"""The `retrieval` scorer: the system's retrieved passage ids (the final attempt's
`retrieved` list, best first) against the case's relevant ids (`target.relevant`, a list
or a mapping id -> grade), with recall@k, precision@k, hit rate@k, reciprocal rank and
nDCG@k as sub-metrics (`queryeval.metrics.rag`); the option `metric` picks the value.

A case without relevance labels is not applicable (unscored: the evaluator has nothing to
judge with); an output without a `retrieved` list, or with ids that are not text, is the
system's failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from queryeval.cases import Case, Output, Score
from queryeval.metrics.rag import (
    hit_rate_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)
from queryeval.scorers._base import Scorer, ScoringContext

RetrievalMetric = Literal["recall", "precision", "hit_rate", "mrr", "ndcg"]
SUB_METRICS: tuple[str, ...] = ("recall", "precision", "hit_rate", "mrr", "ndcg")


class RetrievalOptions(BaseModel):
    """The cut-off and which sub-metric is the scorer's value."""

    model_config = ConfigDict(extra="forbid")

    k: int = Field(default=5, ge=1, description="cut-off of recall, precision, hit rate, nDCG")
    metric: RetrievalMetric = Field(default="recall", description="the sub-metric as value")
    attempt: Literal["final", "first"] = Field(
        default="final", description="which attempt's retrieved ids are scored"
    )


def relevance(case: Case) -> list[str] | dict[str, float] | None:
    """The relevant ids of the case's main target that has some (None without labels)."""
    for target in case.targets:
        relevant = target.relevant
        if relevant:
            return dict(relevant) if isinstance(relevant, Mapping) else list(relevant)
    return None


class RetrievalScorer(Scorer):
    """Ranked retrieval quality of a RAG system's `retrieved` ids."""

    Options: ClassVar[type[BaseModel]] = RetrievalOptions
    options: RetrievalOptions
    reads = "output"
    shardable = True

    def sub_metrics(self) -> frozenset[str]:
        """The five retrieval metrics (all at the option `k` but MRR)."""
        return frozenset(SUB_METRICS)

    def not_applicable(self, case: Case) -> str | None:
        """A case without relevant ids cannot be judged."""
        relevant = relevance(case)
        if relevant is None or not any(
            (g > 0 for g in relevant.values()) if isinstance(relevant, dict) else relevant
        ):
            return "the case has no relevant ids (target.relevant)"
        return None

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        attempt = output.first if self.attempt_choice == "first" else output.final
        retrieved: Any = getattr(attempt, "retrieved", None) if attempt is not None else None
        if retrieved is None:
            return Score.failure("empty", "the output has no `retrieved` ids")
        if not isinstance(retrieved, list) or not all(isinstance(i, str) for i in retrieved):
            return Score.failure("invalid_output", "`retrieved` must be a list of text ids")
        relevant = relevance(case)
        assert relevant is not None  # not_applicable ran first
        k = self.options.k
        metrics = {
            "recall": recall_at_k(retrieved, relevant, k=k),
            "precision": precision_at_k(retrieved, relevant, k=k),
            "hit_rate": hit_rate_at_k(retrieved, relevant, k=k),
            "mrr": reciprocal_rank(retrieved, relevant),
            "ndcg": ndcg_at_k(retrieved, relevant, k=k),
        }
        return Score(
            value=metrics[self.options.metric],
            details={"metrics": metrics, "k": k, "retrieved": len(retrieved)},
        )
