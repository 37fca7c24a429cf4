"""NL2KQL's offline metrics with Microsoft's Kusto.Language: `kql_syntax` (1 when the
generated KQL parses without a diagnostic) and `kql_semantic` (1 when parsing and analysis
against the case's database schema report nothing: no unknown table, column or function, no
type error).

Both need Node.js and the npm package `@kusto/language-service-next` (`make install` puts it
in the environment); a suite that asks for them without it stops before anything is scored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from queryeval.cases import Case, Output, Score
from queryeval.errors import InputError
from queryeval.scorers._base import Scorer, ScoringContext


class KqlValidityOptions(BaseModel):
    """Options of `kql_syntax` and `kql_semantic`: the database whose schema the analyzer
    uses when the case names none, and which attempt is checked."""

    model_config = ConfigDict(extra="forbid")

    database: str | None = None
    attempt: Literal["final", "first"] = "final"


class _KqlValidityScorer(Scorer):
    Options: ClassVar[type[BaseModel]] = KqlValidityOptions
    options: KqlValidityOptions
    default_threshold = 1.0
    reads = "query"
    judged_by_execution = False  # judged by Kusto.Language, whatever the engine can run
    uses_schema: ClassVar[bool] = True

    def prepare(self, cases: Sequence[Case], ctx: ScoringContext) -> None:
        """Stop the run (bad configuration) when Node or Kusto.Language is missing; else
        start the helper in the background, so its start is over before the first check."""
        from queryeval.engines import kql_validator_from_context

        validator = kql_validator_from_context(ctx)
        missing = validator.missing()
        if missing:
            raise InputError(missing, where=f"scorers.{self.label}")
        validator.warm()

    def _database(self, case: Case, ctx: ScoringContext) -> str | None:
        from queryeval.scorers.execution import case_database

        return case_database(case, self.options.database, ctx)

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        from queryeval.engines import (
            KqlValidatorError,
            KqlValidatorTimeout,
            kql_validity_in_context,
        )

        # a missing or empty query, a crashed system, a write: failures before this point
        attempt = output.final if self.options.attempt == "final" else output.first
        assert attempt is not None
        query = str(attempt.query or "")
        database = None
        if self.uses_schema:
            database = getattr(attempt, "database", None) or self._database(case, ctx)
            if database is None:
                return Score.unscored("no database for this case: set the scorer's "
                                      "'database', the gold query's 'database' or "
                                      "metadata.database")  # fmt: skip
        try:
            validity = kql_validity_in_context(ctx, query, database)
        except KqlValidatorTimeout as exc:  # the query's own CPU cost broke the limit
            return Score.failure("timeout", f"{exc} (Kusto.Language)")
        except KqlValidatorError as exc:  # no verdict (a slow start or machine): not the
            return Score.unscored(f"Kusto.Language gave no verdict: {exc}")  # system's
        ok = self.verdict(validity)
        details: dict[str, Any] = {"validity": validity.to_dict(),
                                   "metrics": {self.name: 1.0 if ok else 0.0}}  # fmt: skip
        if database is not None:
            details["database"] = database
        return Score(value=1.0 if ok else 0.0, details=details,
                     explanation="" if ok else validity.message())  # fmt: skip

    def verdict(self, validity: Any) -> bool:
        raise NotImplementedError

    def aggregate(self, cases: Sequence[Case], scores: Sequence[Score]) -> dict[str, Any]:
        """How often each diagnostic code was the reason for a 0."""
        codes: Counter[str] = Counter()
        for s in scores:
            validity = s.details.get("validity") or {}
            for d in (*validity.get("syntax", ()), *validity.get("semantic", ())):
                codes[d["code"]] += 1
        return {"diagnostic_codes": dict(codes.most_common())}


class KqlSyntaxScorer(_KqlValidityScorer):
    """NL2KQL's syntax score: 1 when Kusto.Language's parser reports no diagnostic."""

    uses_schema = False

    def verdict(self, validity: Any) -> bool:
        return bool(validity.syntax_ok)


class KqlSemanticScorer(_KqlValidityScorer):
    """NL2KQL's semantic score: 1 when parsing and analysis against the database schema
    report no error or warning (tables, columns, functions, types)."""

    def verdict(self, validity: Any) -> bool:
        return bool(validity.semantic_ok)
