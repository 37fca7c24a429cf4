"""Self-test of a suite: every gold query is run as if a system had predicted it and scored
with `execution_match`. The share that matches is the suite's ceiling; below 1.0 a gold is
broken (fails, times out, or is nondeterministic under the comparison policy)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from queryeval.cases import Attempt, Case, Output
from queryeval.config import ScorerConfig, SuiteConfig
from queryeval.scorers import ScoringContext


@dataclass(frozen=True)
class SelftestItem:
    case_id: str
    gold: int
    status: str  # ok | mismatch | gold_error
    explanation: str = ""


@dataclass(frozen=True)
class SelftestReport:
    items: list[SelftestItem] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # cases without a gold query

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
    return SelftestReport(items, skipped)
