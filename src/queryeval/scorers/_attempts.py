"""Grading the attempts of an output: what the agentic scorers need per attempt that a
trace may not have recorded, computed on the suite's engine.

- correctness: `attempt.correct` when recorded, else the attempt's query is executed and
  its result compared with the gold's (`compare_results`, the suite's comparison policy);
- KG validity: the attempt's syntax/schema/properties findings when recorded, else CyVer's
  validators on the Cypher engine (`queryeval.kg`);
- execution outcome: recorded, or the one of the execution above.

Execution errors stay apart from KG validity, as seed 003 insists. An attempt whose query
did not run through its own fault (`queryeval.engines.blame`) is not correct; one the
engine could not run although it is valid has an unknown correctness. KG validity that the
validators could not establish for a query that failed through its own fault (a write, a
syntax error) is false: the system's failure is never left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from queryeval.cases import Attempt, Case, Query, Target
from queryeval.metrics.agentic import KG_CHECKS, AttemptSummary, summarize_attempt

if TYPE_CHECKING:
    from queryeval.scorers._base import ScoringContext

Source = Literal["auto", "recorded", "execute"]
KGSource = Literal["auto", "recorded", "validate", "off"]


def cluster_problems(options: GradingOptions, suite: Any) -> list[tuple[tuple[str, ...], str]]:
    """KG validity asked of a run on a Ray cluster: the validators use the Cypher engine's
    own driver, which cannot leave the run's process (a configuration that cannot be
    honoured: refused before anything runs)."""
    if suite.settings.executor != "ray" or options.kg_validity in ("recorded", "off"):
        return []
    return [
        (
            ("options", "kg_validity"),
            f"kg_validity: {options.kg_validity} checks queries with the Cypher engine's own "
            "driver, which stays in the run's process: on a Ray cluster use recorded or off, "
            "or run with the local executor (settings.executor: local)",
        )
    ]


class GradingOptions(BaseModel):
    """Where correctness and KG validity come from, and how results are compared."""

    model_config = ConfigDict(extra="forbid")

    correctness: Source = Field(
        default="auto",
        description="recorded: attempt.correct; execute: run and compare with the gold; "
        "auto: recorded when present, else execute",
    )
    kg_validity: KGSource = Field(
        default="auto",
        description="recorded: the attempt's findings; validate: CyVer on the engine; auto: "
        "recorded when the attempt has syntax and schema findings, else validate; off",
    )
    database: str | None = Field(
        default=None, description="database when the case names none; default: the only one"
    )
    comparison: dict[str, Any] = Field(
        default_factory=dict, description="compare_results policy; overrides suite.comparison"
    )

    @field_validator("comparison")
    @classmethod
    def _typed_policy(cls, v: dict[str, Any]) -> dict[str, Any]:
        from queryeval.scorers._policy import comparison_policy

        return comparison_policy(v)


def gold_query(target: Target) -> Query | None:
    """The target's gold query as a model (a bare string is shorthand for its text)."""
    query: Any = target.query
    return Query(text=query) if isinstance(query, str) else query


@dataclass
class GradedAttempt:
    """An attempt with its gaps filled, its summary, and what grading found out."""

    attempt: Attempt
    summary: AttemptSummary
    details: dict[str, Any] = field(default_factory=dict)
    comparison: Any = None  # the best ComparisonResult against a gold, when executed
    kg: Any = None  # the KGValidity, when validated
    failure: str | None = None  # the query's own failure reason, when it did not run
    kg_unknown: str | None = None  # why the validators gave no verdict, when they were asked


@dataclass
class _Gold:
    query: str | None
    result: Any = None
    problem: str | None = None


class AttemptGrader:
    """Grades the attempts of one case; golds are executed once, lazily."""

    def __init__(self, case: Case, ctx: ScoringContext, options: GradingOptions) -> None:
        self.case = case
        self.ctx = ctx
        self.options = options
        self.database = self._database()
        self._golds: list[_Gold] | None = None

    # -- locating things -----------------------------------------------------------------

    def _database(self) -> str | None:
        from queryeval.scorers.execution import case_database

        return case_database(self.case, self.options.database, self.ctx)

    def gold_queries(self) -> list[str]:
        """The text of every accepted gold query."""
        return [q.text for t in self.case.targets if (q := gold_query(t)) is not None]

    def golds(self) -> list[_Gold]:
        """Every accepted gold with its result (a gold query runs once, cached on disk)."""
        if self._golds is None:
            from queryeval.metrics import ResultSet

            golds = []
            for target in self.case.targets:
                query = gold_query(target)
                if query is not None and self.database is not None:
                    run = self.ctx.gold_execution(query.database or self.database, query.text)
                    if run.ok:
                        golds.append(_Gold(query.text, run.result))
                    else:
                        o = run.outcome
                        problem = f"gold failed: {o.kind}: {o.message}"
                        golds.append(_Gold(query.text, problem=problem))
                elif target.result is not None:
                    golds.append(_Gold(None, ResultSet(target.result.columns, target.result.rows)))
            self._golds = golds
        return self._golds

    def policy(self) -> dict[str, Any]:
        """The comparison policy: suite, then scorer options, then the case's metadata."""
        policy: dict[str, Any] = dict(self.ctx.suite.comparison) if self.ctx.suite else {}
        policy.update(self.options.comparison)
        override = self.case.metadata.get("comparison")
        if isinstance(override, dict):
            policy.update(override)
        from queryeval.scorers._policy import comparison_policy

        return comparison_policy(policy)

    # -- grading -------------------------------------------------------------------------

    def grade(self, attempt: Attempt, *, need_results: bool = False) -> GradedAttempt:
        """The attempt with correctness, execution outcome and KG validity filled in where
        the options allow; `need_results` executes even when correctness is recorded."""
        details: dict[str, Any] = {}
        update: dict[str, Any] = {}
        graded = GradedAttempt(attempt, summarize_attempt(attempt), details)
        query = (attempt.query or "").strip()
        mode = self.options.correctness
        recorded = mode == "recorded" or (mode == "auto" and attempt.correct is not None)
        if query and (need_results or not recorded):
            self._execute(query, graded, update, set_correct=not recorded)
        if query and self._wants_validation(attempt):
            self._validate(query, graded, update)
        if update:
            graded.attempt = attempt.model_copy(update=update)
            graded.summary = summarize_attempt(graded.attempt)
        if not query:
            details["missing_query"] = True
            graded.summary = AttemptSummary(correct=False, kg_valid=False, error_type="no_query")
        elif graded.failure is not None and graded.summary.kg_valid is None and graded.kg_unknown:
            # the validators could not judge a query that failed through its own fault
            details["kg_invalid_because"] = graded.failure
            graded.summary = AttemptSummary(
                graded.summary.correct, False, graded.summary.error_type or graded.failure
            )
        return graded

    def _wants_validation(self, attempt: Attempt) -> bool:
        mode = self.options.kg_validity
        if mode in ("off", "recorded"):
            return False
        recorded = {f.kind for f in attempt.findings} >= {"syntax", "schema"}
        return mode == "validate" or not recorded

    def _execute(
        self, query: str, graded: GradedAttempt, update: dict[str, Any], *, set_correct: bool
    ) -> None:
        from queryeval.metrics import compare_results

        if self.database is None:
            graded.details["not_executed"] = "no database for this case"
            return
        run, fault = self.ctx.run_prediction(self.database, query)
        graded.details["execution"] = {"kind": run.outcome.kind, "message": run.outcome.message}
        update["execution"] = run.outcome  # what this run saw decides, not a recorded outcome
        if not run.ok:
            if fault.party == "system":
                graded.failure = graded.details["failure"] = fault.reason
                if set_correct:
                    update["correct"] = False
            else:  # a valid query the engine cannot run: correctness stays unknown
                graded.details["not_scored"] = fault.message
            return
        usable = [g for g in self.golds() if g.problem is None]
        problems = [g.problem for g in self.golds() if g.problem]
        if problems:
            graded.details["gold_problems"] = problems
        if not usable:
            return  # correctness stays unknown: the suite's gold is at fault, not the system
        dialect = self.ctx.engine(self.database).dialect
        best = None
        for gold in usable:
            extra: dict[str, Any] = (
                {"gold_query": gold.query, "language": dialect} if gold.query else {}
            )
            result = compare_results(run.result, gold.result, **self.policy(), **extra)
            if best is None or (result.exact, result.f1) > (best.exact, best.f1):
                best = result
        graded.comparison = best
        assert best is not None
        graded.details["comparison"] = {"exact": best.exact, "f1": best.f1,
                                        "reason": best.reason}  # fmt: skip
        if set_correct:
            update["correct"] = bool(best.exact)

    def _validate(self, query: str, graded: GradedAttempt, update: dict[str, Any]) -> None:
        from queryeval.kg import KGValidationError

        if self.database is None:
            graded.details["kg_unchecked"] = "no database for this case"
            return
        if graded.failure is None and "execution" not in graded.details:
            self._execute(query, graded, update, set_correct=False)  # whose fault, if it fails
        try:
            validity = self.ctx.kg_validity(self.database, query)
        except KGValidationError as exc:
            graded.details["kg_unchecked"] = graded.kg_unknown = str(exc)
            return
        except Exception as exc:  # e.g. the database is not a Cypher one
            graded.details["kg_unchecked"] = f"{type(exc).__name__}: {exc}"
            return
        graded.kg = validity
        graded.details["kg"] = validity.to_dict()
        kept = [f for f in graded.attempt.findings if f.kind not in KG_CHECKS]
        update["findings"] = [*kept, *validity.findings()]


def jaccard_of(comparison: Any) -> float:
    """Jaccard Output from a comparison: matched rows / (pred rows + gold rows - matched),
    under the comparator's alignment and tolerance; two empty results give 1."""
    union = comparison.pred_rows + comparison.gold_rows - comparison.matched_rows
    return 1.0 if union == 0 else comparison.matched_rows / union
