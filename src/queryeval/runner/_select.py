"""A subset of a suite's cases for one run (`run --filter`, `--limit`): cases whose id or
one of whose tags matches a glob, then the first N of them in the suite's order.
Predictions for cases outside the subset are read and checked as usual, then ignored."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from queryeval.errors import InputError

if TYPE_CHECKING:
    from queryeval.cases import Case
    from queryeval.log import SelectionInfo


@dataclass(frozen=True)
class CaseSelection:
    """`patterns`: globs on case ids and tags (any one matching selects a case; none: every
    case); `limit`: at most this many of the selected cases, in the suite's order.

    >>> from queryeval.cases import Case
    >>> cases = [Case.model_validate({"id": f"q{i}", "tags": ["hard"] if i % 2 else [],
    ...          "conversation": [{"content": "?", "target": {"answer": "a"}}]})
    ...          for i in range(6)]
    >>> [c.id for c in CaseSelection(("hard",), 2).apply(cases)]
    ['q1', 'q3']
    >>> [c.id for c in CaseSelection(("q[45]",)).apply(cases)]
    ['q4', 'q5']
    """

    patterns: tuple[str, ...] = ()
    limit: int | None = None

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise InputError(f"--limit {self.limit}: expected a positive number of cases")

    @property
    def everything(self) -> bool:
        """Whether this selects the whole suite."""
        return not self.patterns and self.limit is None

    def matches(self, case: Case) -> bool:
        """Whether `case`'s id or one of its tags matches a pattern (True without any)."""
        if not self.patterns:
            return True
        names = (case.id, *case.tags)
        return any(fnmatchcase(name, p) for p in self.patterns for name in names)

    def apply(self, cases: Sequence[Case]) -> list[Case]:
        """The selected cases, in their order; InputError when none is selected."""
        chosen = [c for c in cases if self.matches(c)][: self.limit]
        if not chosen:
            raise InputError(f"no case matches --filter {' '.join(self.patterns)}")
        return chosen

    def describe(self) -> SelectionInfo:
        """What run.json records of the selection."""
        return {"filter": list(self.patterns), "limit": self.limit}
