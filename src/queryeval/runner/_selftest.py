"""Self-test of a suite: every gold query is run as if a system had predicted it and scored
with `execution_match`. The share that matches is the suite's ceiling; below 1.0 a gold is
broken (fails, times out, or is nondeterministic under the comparison policy).

`gold_findings` also flags golds that cannot tell a right prediction from a wrong one
(`non-discriminating`): a gold that returns no rows (any query returning nothing matches
it), or one that returns the same result on empty tables of the same schema (a query that
ignores the data matches it: a `count()` of an empty `ago()` window is 0 either way); and
golds the language's independent validity check finds invalid against their database's
schema (`invalid`: KQL by Kusto.Language), even when the engine runs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queryeval.cases import Attempt, Case, Output
from queryeval.config import ScorerConfig, SuiteConfig
from queryeval.engines import Engine, empty_twin
from queryeval.scorers import ScoringContext


@dataclass(frozen=True)
class SelftestItem:
    case_id: str
    gold: int
    status: str  # ok | mismatch | gold_error
    explanation: str = ""


@dataclass(frozen=True)
class GoldFinding:
    """A problem with one gold: `failed` (it does not run) or `non_discriminating`."""

    case_id: str
    gold: int
    kind: str  # failed | invalid | no_rows | same_on_empty
    message: str

    def line(self) -> str:
        """One line for a terminal."""
        return f"{self.case_id} (gold {self.gold}): {self.kind.replace('_', ' ')}: {self.message}"


@dataclass(frozen=True)
class SelftestReport:
    items: list[SelftestItem] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # cases without a gold query
    findings: list[GoldFinding] = field(default_factory=list)  # non-discriminating golds

    @property
    def checked(self) -> int:
        return len(self.items)

    @property
    def ceiling(self) -> float | None:
        """Matching golds / golds checked (None when none could be checked)."""
        if not self.items:
            return None
        return sum(1 for i in self.items if i.status == "ok") / len(self.items)

    @property
    def failures(self) -> list[SelftestItem]:
        return [i for i in self.items if i.status != "ok"]


def selftest(suite: SuiteConfig, cases: Sequence[Case], ctx: ScoringContext) -> SelftestReport:
    """Run each gold query of each case as the prediction (see the module docstring)."""
    from queryeval.scorers import build_scorer, score_case
    from queryeval.scorers.execution import target_query

    scorer = build_scorer(ScorerConfig(name="execution_match"))
    scorer.prepare(cases, ctx)
    items: list[SelftestItem] = []
    skipped: list[str] = []
    for case in cases:
        queries = [(i, q) for i, t in enumerate(case.targets) if (q := target_query(t))]
        if not queries:
            skipped.append(case.id)
            continue
        for index, query in queries:
            extra: dict[str, Any] = {"database": query.database} if query.database else {}
            output = Output(attempts=[Attempt(query=query.text, language=query.language, **extra)])
            score = score_case(scorer, case, output, ctx)
            if score.status != "ok" or score.failure_reason is not None:
                status = "gold_error"
            elif score.status == "ok" and score.value == 1.0:
                status = "ok"
            else:
                status = "mismatch"
            items.append(SelftestItem(case.id, index, status, score.explanation))
    findings = [f for f in gold_findings(suite, cases, ctx) if f.kind != "failed"]
    return SelftestReport(items, skipped, findings)


def gold_findings(
    suite: SuiteConfig, cases: Sequence[Case], ctx: ScoringContext
) -> list[GoldFinding]:
    """Every gold query run (from the gold cache when it ran before) and checked: does it
    run, does it return rows, does it return something else than on empty tables."""
    import tempfile

    from queryeval.metrics import compare_results
    from queryeval.scorers.execution import case_database, target_query

    found: list[GoldFinding] = []
    twins: dict[str, Engine | None] = {}
    scratch = tempfile.TemporaryDirectory(prefix="queryeval-empty-")
    try:
        for case in cases:
            database = case_database(case, None, ctx)
            for index, target in enumerate(case.targets):
                query = target_query(target)
                if query is None:
                    continue
                name = query.database or database
                if name is None or name not in suite.databases:
                    continue
                invalid = _invalid(ctx.engine(name), query.text)
                if invalid is not None:
                    found.append(GoldFinding(case.id, index, "invalid", invalid))
                run = ctx.gold_execution(name, query.text)
                if not run.ok:
                    o = run.outcome
                    found.append(GoldFinding(case.id, index, "failed", f"{o.kind}: {o.message}"))
                    continue
                assert run.result is not None
                if not run.result.rows:
                    why = "the gold returns no rows: a query returning nothing matches it"
                    found.append(GoldFinding(case.id, index, "no_rows", why))
                    continue
                if name not in twins:
                    folder = Path(scratch.name) / str(len(twins))
                    twins[name] = empty_twin(ctx.engine(name), folder)
                twin = twins[name]
                if twin is None:
                    continue
                empty = twin.execute(query.text)
                if not empty.ok or empty.result is None:
                    continue
                policy = dict(suite.comparison)
                override = case.metadata.get("comparison")
                if isinstance(override, dict):
                    policy.update(override)
                same = compare_results(empty.result, run.result, **policy, gold_query=query.text,
                                       language=twin.dialect)  # fmt: skip
                if same.exact:
                    why = ("the gold gives the same result on empty tables: a query that "
                           "ignores the data matches it")  # fmt: skip
                    found.append(GoldFinding(case.id, index, "same_on_empty", why))
    finally:
        for twin in twins.values():
            if twin is not None:
                twin.close()
        scratch.cleanup()
    return found


def _invalid(engine: Engine, query: str) -> str | None:
    """Why the independent validity check of the engine's language rejects `query` against
    its schema (None: valid, or no check for that language, or no verdict)."""
    from queryeval.engines import check_validity, validity_checker

    if validity_checker(engine.language) is None:
        return None
    try:
        schema = engine.cached_schema()
    except Exception:  # no schema: no verdict on the names
        return None
    verdict = check_validity(engine.language, query, schema=schema, dialect=engine.dialect)
    if verdict.validity != "invalid":
        return None
    return f"not valid {engine.language.upper()} ({verdict.checker}): {verdict.message}"
