"""Few-shot examples for prompts: other cases of the same task, with their gold as the output.

The case being asked is never its own example, nor is a case with the same question. The
draw is seeded by the suite's seed and the case id, so a prompt is the same in every run
(and its cached reply is found again).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from queryeval.cases import Case
from queryeval.systems._task import CaseTask, case_task

if TYPE_CHECKING:
    from queryeval.config import ExamplesSpec, SuiteConfig, SystemConfig


def gold_output(case: Case, task: str) -> str | None:
    """The text a prompt shows as the right output of `case` for `task` (None: none)."""
    target = case.target
    if target is None:
        return None
    if task in ("sql", "kql", "cypher"):
        query: Any = target.query
        return query if isinstance(query, str) else (query.text if query is not None else None)
    if task == "weaviate" and target.weaviate_query is not None:
        return json.dumps(target.weaviate_query, ensure_ascii=False)
    if task == "sdmx" and target.indicator_selection is not None:
        return json.dumps({"indicator_selection": target.indicator_selection}, ensure_ascii=False)
    if task == "answer" and target.answer is not None:
        answer: Any = target.answer
        return answer if isinstance(answer, str) else answer.text
    return None


class ExamplePool:
    """The candidate examples of one system, grouped by (task, database)."""

    def __init__(
        self, suite: SuiteConfig, system: SystemConfig, spec: ExamplesSpec, cases: Sequence[Case]
    ) -> None:
        self.spec = spec
        self.seed = suite.seed
        self._by_task: dict[tuple[str, str | None], list[tuple[Case, str]]] = {}
        for case in cases:
            task = case_task(case, suite, system)
            output = gold_output(case, task.task)
            if output is not None and case.question.strip():
                key = (task.task, task.database if spec.same_database else None)
                self._by_task.setdefault(key, []).append((case, output))

    def for_case(self, case: Case, task: CaseTask) -> list[dict[str, str]]:
        """Up to `count` examples for `case`, each `{question, output}`, in pool order."""
        if self.spec.count == 0:
            return []
        key = (task.task, task.database if self.spec.same_database else None)
        question = case.question.strip()
        candidates = [
            (i, c, out)
            for i, (c, out) in enumerate(self._by_task.get(key, []))
            if c.id != case.id and c.question.strip() != question
        ]
        rng = random.Random(f"{self.seed}:{case.id}")
        chosen = sorted(
            rng.sample(candidates, min(self.spec.count, len(candidates))), key=lambda item: item[0]
        )
        return [{"question": c.question, "output": out} for _, c, out in chosen]
