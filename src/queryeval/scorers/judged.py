"""Judged scorers: `llm_query_similarity` (seed 002) and `llm_answer_correctness` (seed 004,
phase 3). Without a configured judge they are `unscored` and say how to configure one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from queryeval.cases import Answer, Case, Output, Query, Score
from queryeval.scorers._base import AsyncScorer, ScoringContext


class JudgedOptions(BaseModel):
    """Options of a judged scorer."""

    model_config = ConfigDict(extra="forbid")

    rubric: str | None = Field(default=None, description="rubric name; default: the scorer's own")
    human_label: str | None = Field(
        default=None,
        description="key of case.labels holding the human verdict; default: the scorer's "
        "label, then judge_score, then correct",
    )
    agreement_threshold: float = Field(
        default=0.5, ge=0, le=1, description="judge and human scores >= this count as correct"
    )


class QuerySimilarityOptions(JudgedOptions):
    """`llm_query_similarity` options: where the schema shown to the judge comes from."""

    include_schema: bool = True
    schema_text: str | None = Field(
        default=None,
        description="schema text for every case (else case.metadata.schema, else the engine's)",
    )


class _JudgedScorer(AsyncScorer):
    """Shared logic: collect the rubric's inputs, ask the judge, report cost and agreement."""

    rubric_name: ClassVar[str]
    options: JudgedOptions

    @property
    def rubric(self) -> str:
        """The rubric this scorer asks for."""
        return self.options.rubric or self.rubric_name

    def sub_metrics(self) -> frozenset[str]:
        """None: the value is the judge's score."""
        return frozenset()

    def judge_inputs(
        self, case: Case, output: Output | None, ctx: ScoringContext
    ) -> dict[str, Any] | Score:
        """The rubric's inputs for this case, or a Score when there is nothing to judge.
        `output=None` (not generated yet, for estimates) stands in the gold for the output."""
        raise NotImplementedError

    async def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:  # type: ignore[override]
        from queryeval.judges import HOW_TO_CONFIGURE

        prepared = self.judge_inputs(case, output, ctx)
        if isinstance(prepared, Score):
            return prepared
        judge = ctx.judge()
        if judge is None:
            return Score.unscored(HOW_TO_CONFIGURE)
        verdict = await judge.judge(self.rubric, prepared)
        return verdict.to_score()

    def human_label(self, case: Case) -> Any:
        """The case's human verdict for this scorer, if it carries one."""
        keys = (
            [self.options.human_label]
            if self.options.human_label
            else [self.label, "judge_score", "correct"]
        )
        return next((case.labels[k] for k in keys if k in case.labels), None)

    def aggregate(self, cases: Sequence[Case], scores: Sequence[Score]) -> dict[str, Any]:
        """Judge spend (apart from the system's cost), cache use, reasons for missing
        scores, and agreement with human labels when cases carry them."""
        from queryeval.metrics import agreement

        records = [s.details["judge"] for s in scores if isinstance(s.details.get("judge"), dict)]
        fresh = [r for r in records if not r.get("cached")]
        missing = Counter(_reason(s) for s in scores if s.status != "ok")
        out: dict[str, Any] = {
            "judge": {
                "judgments": len(records),
                "cached": len(records) - len(fresh),
                "prompt_tokens": sum(r.get("usage", {}).get("prompt_tokens", 0) for r in fresh),
                "completion_tokens": sum(
                    r.get("usage", {}).get("completion_tokens", 0) for r in fresh
                ),
                "cost_usd": _sum_costs(fresh),
                "cost_usd_including_cached": _sum_costs(records),
            },
            "not_scored": dict(missing),
        }
        pairs = [
            (s.value if s.status == "ok" else None, _as_number(self.human_label(c)))
            for c, s in zip(cases, scores, strict=False)
        ]
        pairs = [p for p in pairs if p[1] is not None]
        if pairs:
            result = agreement(
                [p[0] for p in pairs],
                [p[1] for p in pairs],
                threshold=self.options.agreement_threshold,
            )
            out["agreement"] = asdict(result)
        return out


def _sum_costs(records: Sequence[dict[str, Any]]) -> float | None:
    costs = [r.get("cost_usd") for r in records]
    known = [c for c in costs if c is not None]
    return sum(known) if known or not costs else None


def _reason(score: Score) -> str:
    text = score.explanation or score.status
    return text if len(text) <= 100 else text[:97] + "..."


def _as_number(label: Any) -> float | None:
    if isinstance(label, bool):
        return float(label)
    if isinstance(label, int | float):
        return float(label)
    if isinstance(label, str) and label.strip().lower() in {"true", "yes", "correct"}:
        return 1.0
    if isinstance(label, str) and label.strip().lower() in {"false", "no", "incorrect"}:
        return 0.0
    return None


class QuerySimilarityScorer(_JudgedScorer):
    """Seed 002's "query similarity": an LLM compares the generated query with the gold one
    (question and schema in the prompt) on table selection, filters, aggregations, result
    equivalence, logic and efficiency; value = its 0-1 score."""

    Options = QuerySimilarityOptions
    rubric_name = "query_similarity"
    reads = "query"
    options: QuerySimilarityOptions

    def not_applicable(self, case: Case) -> str | None:
        """A case without a gold query."""
        target = case.target
        return (
            None
            if isinstance(getattr(target, "query", None), Query)
            else "the case has no gold query"
        )

    def judge_inputs(
        self, case: Case, output: Output | None, ctx: ScoringContext
    ) -> dict[str, Any] | Score:
        target = case.target
        gold = target.query if target is not None else None
        if not isinstance(gold, Query):  # shorthand strings are Query models after loading
            return Score.unscored("the case has no gold query")
        if output is None:
            generated: str | None = gold.text
        else:  # `score_case` has failed an output without a usable query
            final = output.final
            generated = final.query if final is not None else None
        return {
            "question": case.question,
            "schema": self._schema(case, gold.database, ctx),
            "gold_query": gold.text,
            "generated_query": generated,
        }

    def _schema(self, case: Case, database: str | None, ctx: ScoringContext) -> Any:
        if not self.options.include_schema:
            return None
        if "schema" in case.metadata:
            return case.metadata["schema"]
        if self.options.schema_text is not None:
            return self.options.schema_text
        suite = ctx.suite
        if suite is None or not suite.databases:
            return None
        only = next(iter(suite.databases)) if len(suite.databases) == 1 else None
        name = database or case.metadata.get("database") or only
        if name is None:
            return None
        return ctx.resource(f"judge-schema:{name}", lambda: _engine_schema(ctx, name))


def _engine_schema(ctx: ScoringContext, database: str) -> Any:
    """The database's schema from its engine, or None when no engine can give it (the
    schema only helps the judge; its absence is not an error)."""
    try:
        return ctx.engine(database).schema()
    except Exception:
        return None


class AnswerCorrectnessScorer(_JudgedScorer):
    """Seed 004 phase 3: an LLM rates the factual correctness of the answer against the
    expected one on 0 / 0.2 / 0.4 / 0.6 / 0.8 / 1.0. An unparseable reply is unscored,
    never the seed's 0."""

    Options = JudgedOptions
    rubric_name = "answer_correctness"
    reads = "answer"

    def not_applicable(self, case: Case) -> str | None:
        """A case without an expected answer."""
        target = case.target
        expected = target.answer if target is not None else None
        return None if isinstance(expected, Answer) else "the case has no expected answer"

    def judge_inputs(
        self, case: Case, output: Output | None, ctx: ScoringContext
    ) -> dict[str, Any] | Score:
        target = case.target
        expected = target.answer if target is not None else None
        if not isinstance(expected, Answer):
            return Score.unscored("the case has no expected answer")
        if output is None:
            generated: str | None = expected.text
        else:  # `score_case` has failed an output without a usable answer
            final = output.final
            generated = final.answer if final is not None else None
        return {
            "question": case.question,
            "expected_answer": expected.text,
            "generated_answer": generated,
        }
