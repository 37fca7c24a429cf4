"""The data model: cases (what to ask, what is right), outputs (what a system said), scores."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, Protocol

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from queryeval.cases._rule import FailureReason, OutcomeKind, OutputFailure

ScoreStatus = Literal["ok", "unscored", "error"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# --- SDMX term selection (seed 001) -------------------------------------------------------


# Plain validated dicts, not model instances: a case holds many terms, and building a
# pydantic instance per term made loading 100,000 cases several times slower.


class Term(TypedDict):
    """One code of a dimension: its ID and, for display, its name."""

    __pydantic_config__ = ConfigDict(extra="forbid", coerce_numbers_to_str=True)  # type: ignore[misc]

    id: str
    name: NotRequired[str | None]


class DimensionSelection(TypedDict):
    """The terms chosen (or expected) for one dimension. `values: []` is an explicit empty set."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    dimension_name: str
    values: NotRequired[list[Term] | None]


class DatasetSelection(TypedDict):
    """The dimensions selected in one dataset (seed 001's `indicator_selection` items)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    dataset_id: str
    dimensions: NotRequired[list[DimensionSelection] | None]


# --- queries, answers, results ------------------------------------------------------------


class Query(_Model):
    """A query in some language, optionally bound to a named database of the suite."""

    language: str = "sql"
    text: str
    database: str | None = None


class Answer(_Model):
    """An expected natural-language answer, with optional keywords for keyword scoring."""

    text: str
    keywords: list[str] = Field(default_factory=list)


class ExpectedResult(_Model):
    """Expected rows, for cases with no gold query."""

    columns: list[str]
    rows: list[list[Any]]


class TaskTest(_Model):
    """One test of a task, run on the disposable copy after the system's statements: a
    `query` and the `rows` it must return (in order when the query orders them), or a
    `condition` (a query whose first cell must be true), or for a benchmark's import a
    Python test function (`python`: its source, run in a limited subprocess)."""

    name: str | None = None
    query: str | None = None
    rows: list[list[Any]] | None = None
    condition: str | None = None
    python: str | None = None


class Task(_Model):
    """A task scored by tests (`task_tests`): `setup` statements run on a disposable copy
    of `database`, then the system's statements (writes allowed, on the copy only), then
    each test, then `cleanup`. `solution`: a reference answer's statements (optional)."""

    database: str | None = None
    setup: list[str] = Field(default_factory=list)
    tests: list[TaskTest] = Field(min_length=1)
    cleanup: list[str] = Field(default_factory=list)
    solution: list[str] = Field(default_factory=list)


class Target(_Model):
    """What is right for a turn. Any combination of the kinds may be present."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    query: Query | str | None = Field(default=None, union_mode="left_to_right")
    weaviate_query: Any = None
    indicator_selection: list[DatasetSelection] | None = None
    answer: Answer | str | None = Field(default=None, union_mode="left_to_right")
    result: ExpectedResult | None = None
    # RAG: the ids of the passages that answer the question (grade 1 each), or id -> grade
    relevant: list[str] | dict[str, float] | None = None
    # a task scored by tests on a disposable copy of its database (scorer task_tests)
    task: Task | None = None

    # Validation stays in pydantic's core (no Python validators: loading 100k cases is hot);
    # shorthand strings are turned into models here instead.
    def model_post_init(self, context: Any, /) -> None:
        """Expand `query: "SELECT ..."` and `answer: "..."` shorthands into models."""
        if isinstance(self.query, str):
            self.query = Query(text=self.query)
        if isinstance(self.answer, str):
            self.answer = Answer(text=self.answer)


class Turn(_Model):
    """One message of the conversation; a turn may carry the target (or several accepted ones)."""

    role: Literal["user", "assistant", "system", "tool"] = "user"
    content: str = ""
    target: Target | list[Target] | None = Field(default=None, union_mode="left_to_right")
    alternatives: list[Target] = Field(
        default_factory=list, description="further accepted targets (any-of)"
    )

    def model_post_init(self, context: Any, /) -> None:
        """A list of targets means any of them is right: the first is the main one."""
        if isinstance(self.target, list):
            targets = self.target
            self.target = targets[0] if targets else None
            self.alternatives = [*targets[1:], *self.alternatives]

    @property
    def main_target(self) -> Target | None:
        """The target (after any-of expansion it is never a list)."""
        return self.target if isinstance(self.target, Target) else None


class CaseInfo(Protocol):
    """What summaries, the console and JUnit reports and shardable scorers' aggregates read
    of a case: its id, name, tags, metadata and labels (not its conversation or golds). A
    `Case` is one; a large sharded run holds only these (`runner`'s stubs)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def tags(self) -> list[str]: ...
    @property
    def metadata(self) -> dict[str, Any]: ...
    @property
    def labels(self) -> dict[str, Any]: ...


class Case(_Model):
    """One test case: a conversation whose last targeted turn says what is right."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, coerce_numbers_to_str=True)

    id: str
    name: str = ""
    tags: list[str] = Field(default_factory=list)
    comments: str | None = ""
    labels: dict[str, Any] = Field(
        default_factory=dict, description="human judgements, e.g. {correct: 1}"
    )
    metadata: dict[str, Any] = Field(default_factory=dict)

    conversation: list[Turn] = Field(min_length=1)

    @property
    def question(self) -> str:
        """The last user message."""
        for turn in reversed(self.conversation):
            if turn.role == "user":
                return turn.content
        return self.conversation[-1].content

    @property
    def target(self) -> Target | None:
        """The target of the last turn that has one."""
        for turn in reversed(self.conversation):
            if turn.target is not None:
                return turn.main_target
        return None

    @property
    def targets(self) -> list[Target]:
        """Every accepted target (any-of), the main one first."""
        for turn in reversed(self.conversation):
            main = turn.main_target
            if main is not None:
                return [main, *turn.alternatives]
        return []


# --- outputs --------------------------------------------------------------------------------


class Finding(_Model):
    """A validator's finding on an attempt (syntax / schema / properties / execution ...)."""

    kind: str
    message: str = ""
    score: float | None = None


class ExecutionOutcome(_Model):
    """How executing a query went. Rows travel separately (ResultSet), not in this record."""

    kind: OutcomeKind
    message: str = ""
    elapsed_s: float | None = None
    row_count: int | None = None
    truncated: bool = False
    # a timeout: the query's own CPU seconds when measured (below the limit: the machine's)
    cpu_s: float | None = None


class Attempt(_Model):
    """One produced query / selection / answer: a refinement iteration or an independent sample."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    query: str | None = None
    language: str | None = None
    weaviate_query: Any = None
    indicator_selection: list[DatasetSelection] | None = None
    answer: str | None = None
    findings: list[Finding] = Field(default_factory=list)
    execution: ExecutionOutcome | None = None
    correct: bool | None = None
    latency_s: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost: float | None = None


class Output(_Model):
    """What a system produced for a case: attempts (the last is final), or an error.
    `failure` says what the error was (a missing prediction, a crash, a timeout, an output
    of the wrong type); an error without one is a crash the system reported."""

    attempts: list[Attempt] = Field(default_factory=list)
    error: str | None = None
    failure: OutputFailure | None = None
    latency_s: float | None = None
    cost: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def final(self) -> Attempt | None:
        """The last attempt: what the system finally answered."""
        return self.attempts[-1] if self.attempts else None

    @property
    def first(self) -> Attempt | None:
        """The first attempt (Pass@1)."""
        return self.attempts[0] if self.attempts else None


class Score(_Model):
    """A scorer's verdict. `unscored` (the evaluator's trouble) and `error` (the scorer broke)
    are never averaged; a failure of the system (`Score.failure`) is `ok` with value 0."""

    value: float | None = None
    status: ScoreStatus = "ok"
    passed: bool | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    explanation: str = ""

    @classmethod
    def unscored(cls, why: str, **details: Any) -> Score:
        """A score that could not be given (no judge, unsupported operator...)."""
        return cls(status="unscored", explanation=why, details=details)

    @classmethod
    def failed(cls, why: str, **details: Any) -> Score:
        """The scorer itself failed on this case."""
        return cls(status="error", explanation=why, details=details)

    @classmethod
    def failure(cls, reason: FailureReason, why: str, **details: Any) -> Score:
        """The system's output failed (see `queryeval.cases._rule`): 0 in every mean and
        sub-metric, the case fails, the reason is kept for the reports.

        >>> s = Score.failure("missing", "no prediction for this case")
        >>> s.value, s.passed, s.details["failure"]
        (0.0, False, 'missing')
        """
        return cls(value=0.0, passed=False, explanation=why, details={**details, "failure": reason})

    @property
    def failure_reason(self) -> str | None:
        """The failure reason when this score is the system's failure, else None."""
        reason = self.details.get("failure") if self.details else None
        return reason if isinstance(reason, str) else None
