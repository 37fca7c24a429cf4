"""The scorer protocol: a named, option-recording adapter from (case, output) to a Score."""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from queryeval.cases import Case, CaseInfo, Output, Score
from queryeval.scorers._context import ScoringContext

if TYPE_CHECKING:
    from queryeval.config import ScorerConfig, SuiteConfig
    from queryeval.log import ScorerInfo

T = TypeVar("T")


class NoOptions(BaseModel):
    """Options of a scorer that takes none."""

    model_config = ConfigDict(extra="forbid")


Reads = Literal["output", "attempts", "query", "weaviate", "indicator_selection", "answer"]


class Scorer:
    """Base class. Subclasses set `name`, an `Options` model, and implement `score`.

    `score` may be a coroutine function (then `is_async` is true). `aggregate` adds
    dataset-level figures beyond the mean of the values (e.g. micro averages).

    Scores are made by `score_case`, which applies the scoring rule first (see
    `queryeval.scorers._produced`): `reads` says which part of the output the scorer reads
    (`query`, `weaviate`, `indicator_selection`, `answer`; `attempts` when it grades every
    attempt itself; `output` for a scorer that only needs an output), and a failed output
    never reaches `score`. `not_applicable` names cases the scorer cannot score at all.
    """

    name: ClassVar[str] = ""
    Options: ClassVar[type[BaseModel]] = NoOptions
    default_threshold: ClassVar[float | None] = None
    reads: ClassVar[Reads] = "output"
    # a query this scorer reads is judged by running it on the case's database (else only by
    # what needs no engine: empty, fenced, a write, the independent validity check)
    judged_by_execution: ClassVar[bool] = True
    # runs the prediction on the case's database: every case must name one the suite has
    needs_database: ClassVar[bool] = False
    # `score` is a coroutine (declared by deriving from AsyncScorer; a subclass that defines a
    # coroutine `score` is marked too)
    is_async: ClassVar[bool] = False
    # `score` blocks on I/O or a subprocess (a plain function that waits): on the event loop
    # it runs in a thread
    blocking: ClassVar[bool] = False
    # may score in forked workers (`runner`'s ForkExecutor): each case's score depends only
    # on the case, the output and the context (no state kept on the scorer while scoring,
    # nothing of the context held on it), so every worker's copy scores as the one would
    forks: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if inspect.iscoroutinefunction(cls.__dict__.get("score")):
            cls.is_async = True

    def __init__(self, options: BaseModel, config: ScorerConfig | None = None) -> None:
        cls = type(self)
        if "name" not in cls.__dict__:  # a class imported directly, not through the registry
            from queryeval.scorers._registry import builtin_name

            cls.name = builtin_name(cls) or cls.name
        self.options = options
        self.config = config
        threshold = config.threshold if config is not None else None
        self.threshold = threshold if threshold is not None else self.default_threshold
        # how the scorer's verdict counts in the case's (see runner.case_passed)
        self.required = config is not None and config.required
        self.informational = config is not None and config.weight == 0
        # read once: a missing attribute costs pydantic microseconds per case
        fields = type(options).model_fields
        self._attempt_option = str(options.attempt) if "attempt" in fields else "final"  # type: ignore[attr-defined]
        database = options.database if "database" in fields else None  # type: ignore[attr-defined]
        self._database_option = str(database) if database else None

    @property
    def label(self) -> str:
        """Key of this scorer's scores in results."""
        return self.config.label if self.config is not None else self.name

    @property
    def attempt_choice(self) -> str:
        """Which attempt the scorer reads: `final` (default) or `first` (option `attempt`)."""
        return self._attempt_option

    @property
    def database_option(self) -> str | None:
        """The scorer's `database` option, for cases that name none."""
        return self._database_option

    def sub_metrics(self) -> frozenset[str] | None:
        """The names of the sub-metrics this scorer reports in `details["metrics"]` (gates
        may name them); None when it cannot say (then any name is accepted). A failure
        reports every one of them as 0."""
        return None

    def config_problems(self, suite: SuiteConfig) -> list[tuple[tuple[str | int, ...], str]]:
        """What in this scorer's configuration the suite cannot honour, as (location under
        the scorer's entry, e.g. ("options", "schemas"), what was expected); checked by
        `validate` and before a run. Default: the `database` option names a database of
        the suite."""
        database = self.database_option
        if database is not None and database not in suite.databases:
            known = ", ".join(suite.databases) or "none"
            return [
                (("options", "database"), f"unknown database {database!r}; the suite has: {known}")
            ]
        return []

    def missing_files(
        self, suite: SuiteConfig, **what: str
    ) -> list[tuple[tuple[str | int, ...], str]]:
        """The problems of file options that name no file: `what` maps an option to the
        words for its file (`codelist="codelist file"`); options left unset are fine."""
        problems: list[tuple[tuple[str | int, ...], str]] = []
        for option, words in what.items():
            value = getattr(self.options, option, None)
            if value and not suite.resolve(str(value)).is_file():
                problems.append(
                    ((("options", option)), f"{words} not found: {suite.resolve(str(value))}")
                )
        return problems

    def dataset_problems(self, cases: Sequence[Case]) -> list[tuple[tuple[str | int, ...], str]]:
        """What this scorer's options ask of the cases as a whole that no case has (as
        `config_problems`: a location under the scorer's entry and what was expected),
        checked by `validate` and before a run. Default: nothing."""
        return []

    def check_inputs(self, cases: Sequence[Case], ctx: ScoringContext) -> None:
        """Cheap checks of the cases this scorer will read (InputError naming the case), run
        by `validate` and before a run. Default: nothing."""

    def not_applicable(self, case: Case) -> str | None:
        """Why this scorer cannot score `case` whatever the output (no target of its kind),
        or None. Such a case is unscored before the output is looked at."""
        return None

    def describe(self) -> ScorerInfo:
        """Name and every option, so a stored run can re-create this scorer."""
        return {
            "name": self.name,
            "label": self.label,
            "options": self.options.model_dump(mode="json"),
            "threshold": self.threshold,
        }

    def prepare(self, cases: Sequence[Case], ctx: ScoringContext) -> None:
        """Called once before scoring (e.g. to execute gold queries). Default: nothing."""

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        """Score one output against one case."""
        raise NotImplementedError

    def aggregate(self, cases: Sequence[Case], scores: Sequence[Score]) -> dict[str, Any]:
        """Dataset-level figures beyond mean/CI of the values. Default: none."""
        return {}

    @classmethod
    def report_tables(cls, aggregate: dict[str, Any]) -> list[tuple[str, list[list[Any]]]]:
        """Dataset-level tables for the console: (title, rows with a header row first), built
        from this scorer's `aggregate` output. Default: none."""
        return []

    def report_columns(self, score: Score) -> dict[str, Any]:
        """Extra per-case columns for tabular reports (Excel overview). Default: none."""
        return {}

    def finish(self, score: Score) -> Score:
        """Check the score and apply the pass threshold when the scorer did not decide
        `passed` itself. An `ok` score without a value is a scorer bug, recorded as error."""
        if score.status == "ok":
            if score.value is None:
                return Score.failed(f"scorer {self.name!r} returned status ok without a value")
            if score.passed is None and self.threshold is not None:
                score.passed = self.passes(score.value)
        return score

    def passes(self, value: float) -> bool | None:
        """A value's verdict under the pass threshold (None without a threshold)."""
        return None if self.threshold is None else value >= self.threshold - 1e-12


class AsyncScorer(Scorer):
    """A scorer whose `score` is a coroutine (a judge, a remote model): the runner awaits it
    on its event loop, many cases at once."""

    is_async: ClassVar[bool] = True

    async def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:  # type: ignore[override]
        """Score one output against one case."""
        raise NotImplementedError


class ShardableScorer(Scorer):
    """A scorer that may run in the forked workers of large runs: pure, local and cheap,
    its `aggregate` reading only what `CaseInfo` has of the cases (a large sharded run holds
    no more). Workers aggregate their own slices (`aggregate_partial`) and the driver joins
    the parts (`aggregate_merge`), which must give exactly `aggregate` of the whole in any
    order."""

    forks = True

    def aggregate(self, cases: Sequence[CaseInfo], scores: Sequence[Score]) -> dict[str, Any]:
        """Dataset-level figures beyond mean/CI of the values. Default: none."""
        return {}

    def aggregate_partial(self, cases: Sequence[CaseInfo], scores: Sequence[Score]) -> Any:
        """`aggregate`'s work on part of the scores, to be joined by `aggregate_merge`.
        Default: keeps the scores (override both to send less)."""
        return (list(cases), list(scores))

    def aggregate_merge(self, partials: Sequence[Any]) -> dict[str, Any]:
        """`aggregate` of the scores behind the `aggregate_partial` results."""
        cases = [c for part in partials for c in part[0]]
        scores = [s for part in partials for s in part[1]]
        return self.aggregate(cases, scores)


def apply_rule(scorer: Scorer, score: Score) -> Score:
    """A failure counts as 0 everywhere: value 0, the case failed, and every sub-metric the
    scorer reports (declared, or present in the score) 0."""
    if score.status != "ok" or score.failure_reason is None:
        return score
    score.value = 0.0
    score.passed = False
    present = score.details.get("metrics")
    names = set(scorer.sub_metrics() or ()) | set(present if isinstance(present, dict) else ())
    score.details["metrics"] = dict.fromkeys(sorted(names), 0.0)
    return score


def _precheck(scorer: Scorer, case: Case, output: Output, ctx: ScoringContext) -> Score | None:
    why = scorer.not_applicable(case)
    if why is not None:
        return Score.unscored(why)
    return check_output(scorer, case, output, ctx)


def _raised(exc: BaseException) -> Score:
    return Score.failed(f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=3))


def score_case(scorer: Scorer, case: Case, output: Output, ctx: ScoringContext) -> Score:
    """The one way a score is made: the rule first (not applicable: unscored; a failed
    output: a failure), then the scorer's `score`, then `finish` and the rule's zeros. A
    scorer that raises gets an `error` score with the message (the run goes on)."""
    try:
        score = _precheck(scorer, case, output, ctx)
        if score is None:
            score = scorer.score(case, output, ctx)
        score = scorer.finish(score)
    except Exception as exc:  # a scorer bug or an engine failure: recorded, the run goes on
        score = _raised(exc)
    return apply_rule(scorer, score)


async def ascore_case(scorer: Scorer, case: Case, output: Output, ctx: ScoringContext) -> Score:
    """`score_case` for the event loop: coroutine scorers are awaited, `blocking` ones run
    in a thread."""
    import asyncio  # here: runs on saved predictions never load it (~20 ms of start-up)

    try:
        score = _precheck(scorer, case, output, ctx)
        if score is None:
            if scorer.is_async:
                score = await scorer.score(case, output, ctx)  # type: ignore[misc]
            elif scorer.blocking:
                score = await asyncio.to_thread(scorer.score, case, output, ctx)
            else:
                score = scorer.score(case, output, ctx)
        score = scorer.finish(score)
    except Exception as exc:
        score = _raised(exc)
    return apply_rule(scorer, score)


def case_passed(scores: Mapping[str, Score], scorers: Mapping[str, Scorer]) -> bool | None:
    """A case fails if a required scorer did not pass or any verdict is a fail; passes if at
    least one verdict is a pass; else has no verdict (all unscored). Scorers with weight 0
    are informational: reported, but they do not decide the case (unless required)."""
    verdict: bool | None = None
    for label, scorer in scorers.items():
        s = scores.get(label)
        passed = None if s is None else s.passed
        if scorer.required and passed is not True:
            return False
        if passed is not None and not scorer.informational:
            if not passed:
                verdict = False
            elif verdict is None:
                verdict = True
    return verdict


from queryeval.scorers._produced import check_output  # noqa: E402  (it imports Scorer's types only)
