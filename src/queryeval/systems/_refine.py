"""The checks of the built-in refinement loop (seed 003's agentic pipeline): an attempt's
query is validated (the engine's own parser and binder; CyVer's syntax, schema and
properties validators for Cypher, through `queryeval.kg`) and executed in the sandbox; the
findings are recorded on the attempt, and those of the enabled kinds are fed back.

The loop never sees a gold: the checks are what a deployed agent could run itself.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from queryeval.cases import ExecutionOutcome, Finding

if TYPE_CHECKING:
    from queryeval.scorers import ScoringContext


@dataclass
class Checked:
    """What the checks found: every finding (recorded) and the execution outcome."""

    findings: list[Finding] = field(default_factory=list)
    execution: ExecutionOutcome | None = None

    def problems(self, kinds: Collection[str]) -> list[Finding]:
        """The failed findings of the enabled kinds: what is fed back."""
        return [f for f in self.findings if f.kind in kinds and (f.score is None or f.score < 1)]


def _validate(ctx: ScoringContext, database: str, query: str, language: str) -> list[Finding]:
    """Syntax and schema (and for Cypher, properties) findings, each scored 1 or 0."""
    if language == "cypher":
        from queryeval.kg import KGValidationError

        try:
            return list(ctx.kg_validity(database, query).findings())
        except KGValidationError:  # not validated (a write): the execution check says why
            return []
    outcome = ctx.engine(database).validate(query)
    if outcome.kind == "syntax":
        return [Finding(kind="syntax", message=outcome.message, score=0.0)]
    if outcome.kind == "schema":
        return [
            Finding(kind="syntax", score=1.0),
            Finding(kind="schema", message=outcome.message, score=0.0),
        ]
    if outcome.kind == "ok":
        return [Finding(kind="syntax", score=1.0), Finding(kind="schema", score=1.0)]
    return []  # refused, timed out, unsupported: for the execution check to report


def check_query(
    ctx: ScoringContext, database: str, query: str, language: str, kinds: Collection[str]
) -> Checked:
    """Run the checks the enabled feedback `kinds` need on `query` (blocking)."""
    checked = Checked()
    if {"syntax", "schema", "properties"} & set(kinds):
        checked.findings.extend(_validate(ctx, database, query, language))
    if {"execution", "empty"} & set(kinds):
        run = ctx.execute(database, query)  # shared with the scorers: runs once
        checked.execution = run.outcome
        if not run.ok:
            o = run.outcome
            checked.findings.append(
                Finding(kind="execution", message=f"{o.kind}: {o.message}", score=0.0)
            )
        elif "empty" in kinds:
            rows = run.outcome.row_count or 0
            checked.findings.append(
                Finding(
                    kind="empty",
                    message="the query returned no rows" if not rows else "",
                    score=0.0 if not rows else 1.0,
                )
            )
    return checked
