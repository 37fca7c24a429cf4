"""Scorers `llmetric_q` and `kg_valid` (seed 003, after kg-axel).

LLMetric-Q = 0.3 Pass@1 Output + 0.4 KG Valid + 0.2 Jaccard Output + 0.1 JaRou, where
Pass@1 Output is an exact result match, Jaccard Output the rows' Jaccard similarity (both
from the suite's result comparator), and JaRou = (Jaro-Winkler + ROUGE-L F1) / 2 of the
query texts. The original's jump to the maximum when Pass@1 and KG Valid both hold is the
`legacy_jump` option, off by default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator

from queryeval.cases import Case, Output, Score
from queryeval.metrics import jaro_winkler, llmetric_q, rouge_l
from queryeval.metrics.agentic import LLMETRIC_Q_WEIGHTS, jarou
from queryeval.scorers._attempts import AttemptGrader, GradingOptions, jaccard_of
from queryeval.scorers._base import Scorer, ScoringContext
from queryeval.scorers._registry import register_scorer


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


@register_scorer("llmetric_q")
class LLMetricQScorer(Scorer):
    """LLMetric-Q of the final (or first) attempt, in [0, 1]."""

    Options: ClassVar[type[BaseModel]] = LLMetricQOptions
    options: LLMetricQOptions

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        attempt = _attempt(output, self.options.attempt)
        if attempt is None:
            return (
                self.system_failed(output)
                if output.error
                else Score(value=0.0, explanation="no attempt was produced")
            )
        grader = AttemptGrader(case, ctx, self.options)
        golds = grader.gold_queries()
        if not golds:
            return Score.unscored("LLMetric-Q needs a gold query text (for JaRou)")
        if grader.database is None:
            return Score.unscored("no database to execute on (Pass@1 and Jaccard Output)")
        graded = grader.grade(attempt, need_results=True)
        details: dict[str, Any] = {"attempt": graded.details}
        query = attempt.query or ""
        if not query.strip():
            pass_1, jaccard_out = 0.0, 0.0
        elif graded.comparison is not None:
            pass_1 = 1.0 if graded.comparison.exact else 0.0
            jaccard_out = jaccard_of(graded.comparison)
        elif "execution" in graded.details and graded.details["execution"]["kind"] != "ok":
            kind = graded.details["execution"]["kind"]
            if kind == "unsupported":
                return Score.unscored("the engine cannot run this query", **details)
            pass_1, jaccard_out = 0.0, 0.0  # it did not run: no result to match
        else:
            why = graded.details.get("gold_problems") or ["no gold result"]
            return Score.failed("; ".join(why), **details)
        kg = graded.summary.kg_valid if query.strip() else False
        if kg is None:
            reason = graded.details.get("kg_unchecked", "KG validity is unknown")
            return Score.unscored(f"KG Valid unknown: {reason}", **details)
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


@register_scorer("kg_valid")
class KGValidScorer(Scorer):
    """KG validity of the final (or first) attempt: 1 when syntax and schema score 1 and
    properties score 1 or are not applicable (CyVer on the Cypher engine), else 0."""

    Options: ClassVar[type[BaseModel]] = KGValidOptions
    options: KGValidOptions
    default_threshold = 1.0

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        attempt = _attempt(output, self.options.attempt)
        if attempt is None:
            return (
                self.system_failed(output)
                if output.error
                else Score(value=0.0, explanation="no attempt was produced")
            )
        options = self.options.model_copy(update={"correctness": "recorded"})
        graded = AttemptGrader(case, ctx, options).grade(attempt)
        valid = graded.summary.kg_valid
        details: dict[str, Any] = {"attempt": graded.details}
        if valid is None:
            reason = graded.details.get("kg_unchecked", "no syntax/schema findings")
            return Score.unscored(f"KG validity unknown: {reason}", **details)
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
