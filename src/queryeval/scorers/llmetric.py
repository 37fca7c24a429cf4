"""Scorers `llmetric_q` and `kg_valid` (seed 003, after kg-axel).

LLMetric-Q = 0.3 Pass@1 Output + 0.4 KG Valid + 0.2 Jaccard Output + 0.1 JaRou, where
Pass@1 Output is an exact result match, Jaccard Output the rows' Jaccard similarity (both
from the suite's result comparator), and JaRou = (Jaro-Winkler + ROUGE-L F1) / 2 of the
query texts. The original's jump to the maximum when Pass@1 and KG Valid both hold is the
`legacy_jump` option, off by default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator

from queryeval.cases import Case, Output, Score
from queryeval.metrics import jaro_winkler, llmetric_q, rouge_l
from queryeval.metrics.agentic import LLMETRIC_Q_WEIGHTS, jarou
from queryeval.scorers._attempts import (
    AttemptGrader,
    GradingOptions,
    cluster_problems,
    gold_query,
    jaccard_of,
)
from queryeval.scorers._base import Scorer, ScoringContext

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig


class LLMetricQOptions(GradingOptions):
    """Options of `llmetric_q`."""

    weights: list[float] = Field(
        default=list(LLMETRIC_Q_WEIGHTS),
        description="w1..w4 for Pass@1 Output, KG Valid, Jaccard Output, JaRou (sum 1)",
    )
    legacy_jump: bool = Field(
        default=False, description="score 1 whenever Pass@1 Output and KG Valid both hold"
    )
    attempt: Literal["final", "first"] = "final"

    @field_validator("weights")
    @classmethod
    def _four_summing_to_one(cls, v: list[float]) -> list[float]:
        if len(v) != 4 or any(w < 0 for w in v) or abs(sum(v) - 1.0) > 1e-9:
            raise ValueError("weights must be 4 non-negative numbers summing to 1")
        return v


def _attempt(output: Output, which: str) -> Any:
    return output.final if which == "final" else output.first


def _kg_unknown(graded: Any, details: dict[str, Any]) -> Score:
    """KG validity unknown: unscored when the validators were not asked (no findings, off,
    no database); when they were asked and gave no verdict on this query, its validity is
    not established and the case fails, reported apart (see `queryeval.cases._rule`)."""
    if graded.kg_unknown:
        why = f"KG validity not established: {graded.kg_unknown}"
        return Score.failure("engine_could_not_run", why, **details)
    reason = graded.details.get("kg_unchecked", "no syntax/schema findings")
    return Score.unscored(f"KG validity unknown: {reason}", **details)


class LLMetricQScorer(Scorer):
    """LLMetric-Q of the final (or first) attempt, in [0, 1]."""

    Options: ClassVar[type[BaseModel]] = LLMetricQOptions
    reads = "query"
    needs_database = True
    options: LLMetricQOptions

    def config_problems(self, suite: SuiteConfig) -> list[tuple[tuple[str | int, ...], str]]:
        """The base checks, and KG validation asked of a run on a Ray cluster."""
        return [*super().config_problems(suite), *cluster_problems(self.options, suite)]

    def sub_metrics(self) -> frozenset[str]:
        """LLMetric-Q and its terms."""
        return frozenset({"llmetric_q", "pass_at_1_output", "kg_valid", "jaccard_output",
                          "jaro_winkler", "rouge_l_f1", "jarou"})  # fmt: skip

    def not_applicable(self, case: Case) -> str | None:
        """JaRou needs a gold query text."""
        if any(gold_query(t) is not None for t in case.targets):
            return None
        return "LLMetric-Q needs a gold query text (for JaRou)"

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        attempt = _attempt(output, self.options.attempt)
        assert attempt is not None and attempt.query  # `score_case` failed the others
        grader = AttemptGrader(case, ctx, self.options)
        golds = grader.gold_queries()
        if not golds:
            return Score.unscored("LLMetric-Q needs a gold query text (for JaRou)")
        if grader.database is None:
            return Score.unscored("no database to execute on (Pass@1 and Jaccard Output)")
        graded = grader.grade(attempt, need_results=True)
        details: dict[str, Any] = {"attempt": graded.details}
        query = attempt.query
        if graded.comparison is not None:
            pass_1 = 1.0 if graded.comparison.exact else 0.0
            jaccard_out = jaccard_of(graded.comparison)
        elif "not_scored" in graded.details:  # a valid query the engine cannot run
            return Score.unscored(graded.details["not_scored"], **details)
        else:
            why = graded.details.get("gold_problems") or ["no gold result"]
            return Score.unscored("; ".join(why), **details)
        kg = graded.summary.kg_valid
        if kg is None:
            return _kg_unknown(graded, details)
        jw = max(jaro_winkler(query, g) for g in golds)
        rl = max(rouge_l(query, g) for g in golds)
        value = llmetric_q(pass_1, kg, jaccard_out, jw, rl, weights=self.options.weights,
                           legacy_jump=self.options.legacy_jump)  # fmt: skip
        details["metrics"] = {
            "llmetric_q": value,
            "pass_at_1_output": pass_1,
            "kg_valid": float(kg),
            "jaccard_output": jaccard_out,
            "jaro_winkler": jw,
            "rouge_l_f1": rl,
            "jarou": jarou(jw, rl),
        }
        return Score(value=value, details=details)

    def aggregate(self, cases: Sequence[Case], scores: Sequence[Score]) -> dict[str, Any]:
        """Model-level LLMetric (kg-axel): the weights applied to the mean of each term,
        which equals the mean LLMetric-Q unless `legacy_jump` lifted some cases."""
        terms = ("pass_at_1_output", "kg_valid", "jaccard_output", "jarou")
        rows = [s.details["metrics"] for s in scores if s.status == "ok" and "metrics" in s.details]
        if not rows:
            return {"llmetric": None, "cases": 0}
        means = {t: sum(r[t] for r in rows) / len(rows) for t in terms}
        model = sum(w * means[t] for w, t in zip(self.options.weights, terms, strict=True))
        return {"llmetric": model, "term_means": means, "cases": len(rows)}


class KGValidOptions(GradingOptions):
    """Options of `kg_valid`."""

    attempt: Literal["final", "first"] = "final"


class KGValidScorer(Scorer):
    """KG validity of the final (or first) attempt: 1 when syntax and schema score 1 and
    properties score 1 or are not applicable (CyVer on the Cypher engine), else 0."""

    Options: ClassVar[type[BaseModel]] = KGValidOptions
    options: KGValidOptions
    default_threshold = 1.0
    reads = "query"
    needs_database = True

    def config_problems(self, suite: SuiteConfig) -> list[tuple[tuple[str | int, ...], str]]:
        """The base checks, and KG validation asked of a run on a Ray cluster."""
        return [*super().config_problems(suite), *cluster_problems(self.options, suite)]

    def sub_metrics(self) -> frozenset[str]:
        """KG validity and the three checks' scores."""
        return frozenset({"kg_valid", "syntax", "schema", "properties"})

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        attempt = _attempt(output, self.options.attempt)
        assert attempt is not None  # `score_case` failed an output without one
        options = self.options.model_copy(update={"correctness": "recorded"})
        graded = AttemptGrader(case, ctx, options).grade(attempt)
        valid = graded.summary.kg_valid
        details: dict[str, Any] = {"attempt": graded.details}
        if valid is None:
            return _kg_unknown(graded, details)
        checks = {f.kind: f.score for f in graded.attempt.findings
                  if f.kind in ("syntax", "schema", "properties")}  # fmt: skip
        details["metrics"] = {"kg_valid": float(valid), **{k: v for k, v in checks.items()}}
        explanation = (
            ""
            if valid
            else "; ".join(
                f"{f.kind}: {f.message or f.score}"
                for f in graded.attempt.findings
                if f.kind in checks and f.score is not None and f.score < 1
            )
        )
        return Score(value=float(valid), details=details, explanation=explanation)
