"""`task_tests`: a task is right when its tests pass on the database the system's statements
left (BIRD-CRITIC / LiveSQLBench style; see docs/tasks.md).

For each case with a `task:` target: a disposable copy of the task's database is made
(`queryeval.engines._disposable`: the user's database is never written), the task's
`setup` runs on it, then the system's statements (several, writes allowed: on the copy
only), then each test, then `cleanup`; the copy is dropped.

- The system's fault is a failure (0): its statements are empty, refused by the copy's
  sandbox (ATTACH, COPY TO PROGRAM, extensions, role changes ...), fail, run past the time
  or memory limit (endless loops, huge inserts).
- A test that does not hold is a failing test: named in `details["failed"]` with its
  message. The value is 1 when every test passes, else 0; `tests_passed` (a sub-metric) is
  the share passing.
- The evaluator's fault is unscored, never the run's end: a setup that fails, a test
  function that errors (outside the official rule), loops, allocates without bound or
  breaks its subprocess; an engine that cannot copy its database; a test function where
  the kernel cannot wall off its file system (`unsupported`, unless
  `python_filesystem: open`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from queryeval.cases import Case, Output, Score
from queryeval.scorers._base import Scorer, ScoringContext

if TYPE_CHECKING:
    from queryeval.cases import Task, TaskTest
    from queryeval.engines import Workspace

_ABSENT = object()  # a case without metadata.conditions: the function gets no such argument
_REASONS = {"syntax", "schema", "runtime", "timeout", "resource_limit", "refused"}


class TaskTestsOptions(BaseModel):
    """Options of `task_tests`."""

    model_config = ConfigDict(extra="forbid")

    database: str | None = Field(default=None, description="database when the task names none")
    attempt: Literal["final", "first"] = "final"
    python_timeout_s: float = Field(default=30.0, gt=0, description="a test function's time")
    python_memory: int | str = Field(default="1GiB", description="a test function's memory")
    python_helpers: Literal["livesqlbench", "bird_critic_postgresql"] = Field(
        default="livesqlbench",
        description="the helpers a test function sees, as which official harness has them "
        "(livesqlbench: also BIRD-CRITIC-SQLite's)",
    )
    legacy: bool = Field(
        default=False,
        description="as the official BIRD-CRITIC SQLite harness runs a prediction: each of "
        "the attempt's `statements` (its pred_sqls items; else the query's statements) with "
        "one execute of the driver (an item holding two statements fails on SQLite), the "
        "test functions given the items as they are and only the harness's names (their "
        "source's top-level imports unseen in test_case, as its exec has them)",
    )
    python_filesystem: Literal["walled", "open"] = Field(
        default="walled",
        description="a test function's file system: walled off by Landlock (where the kernel "
        "has none the test is not run: unscored, unsupported), or open (run unwalled anyway)",
    )
    python_exceptions: Literal["error", "fail"] = Field(
        default="error",
        description="a test function raising anything but an assertion or a database error: "
        "the evaluator's error (unscored), or a failing test (the official harnesses' rule)",
    )


class TaskTestsScorer(Scorer):
    """All of a task's tests pass on the copy the system's statements changed."""

    Options: ClassVar[type[BaseModel]] = TaskTestsOptions
    options: TaskTestsOptions
    default_threshold = 1.0
    reads = "output"  # the statements may write: judged on the copy, not by the sandbox
    # the task names its database (checked by `check_inputs`), not the gold query or
    # metadata the runner's check reads
    needs_database = False
    blocking = True

    def sub_metrics(self) -> frozenset[str]:
        """`tests_passed`: the share of the task's tests that pass."""
        return frozenset({"tests_passed"})

    def not_applicable(self, case: Case) -> str | None:
        """A case with no task."""
        return None if _task(case) is not None else "the case has no task"

    def check_inputs(self, cases: Sequence[Case], ctx: ScoringContext) -> None:
        """Each task names a database of the suite (or the scorer's option does)."""
        from queryeval.errors import InputError

        names = ctx.database_names()
        for case in cases:
            task = _task(case)
            if task is None:
                continue
            database = task.database or self.database_option or (
                names[0] if len(names) == 1 else None
            )  # fmt: skip
            if database is None or database not in names:
                raise InputError(f"case {case.id!r}: the task's database {database!r} is not "
                                 f"one of the suite's ({', '.join(names) or 'none'})",
                                 where="task.database")  # fmt: skip

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        """Run the task on a disposable copy and count its passing tests."""
        from queryeval.engines import copy_support, disposable_copy

        task = _task(case)
        assert task is not None
        attempt = output.first if self.attempt_choice == "first" else output.final
        text = (attempt.query or "") if attempt is not None else ""
        if not text.strip():
            return Score.failure("empty", "no statements were produced")
        names = ctx.database_names()
        database = task.database or self.database_option or names[0]
        engine = ctx.engine(database)
        why = copy_support(engine)
        if why is not None:
            return Score.unscored(why)
        items: list[str] | None = None
        if self.options.legacy:
            from queryeval.engines import split_statements

            given = (attempt.model_extra or {}).get("statements") if attempt else None
            if given is None:
                items = split_statements(text, engine.dialect)
            elif isinstance(given, list) and all(isinstance(g, str) for g in given):
                items = [g for g in given if g.strip()]
            else:
                return Score.failure("invalid_output", "'statements': expected a list of SQL "
                                     f"strings, got {type(given).__name__}")  # fmt: skip
        with disposable_copy(engine) as copy:
            conditions = case.metadata.get("conditions", _ABSENT)
            return self._on_copy(copy, task, text, database, conditions, items)

    def _on_copy(self, copy: Workspace, task: Task, text: str, database: str,
                 case_conditions: Any = _ABSENT,
                 items: list[str] | None = None) -> Score:  # fmt: skip
        """The task on the copy; `items` (legacy): the statements as given, each run
        with one execute."""
        for i, statement in enumerate(task.setup):
            step = copy.run(statement)
            if not step.ok:
                return Score.unscored(f"the task's setup failed (statement {i + 1}): "
                                      f"{step.message}", evaluator_error=True)  # fmt: skip
        for item in [text] if items is None else items:
            step = copy.run(item, system=True, single=items is not None)
            if not step.ok:
                reason = step.kind if step.kind in _REASONS else "runtime"
                return Score.failure(reason, f"the statements failed ({step.kind}): "  # type: ignore[arg-type]
                                     f"{step.message}", execution={"database": database,
                                     "kind": step.kind, "message": step.message})  # fmt: skip
        passed: list[str] = []
        failed: list[dict[str, str]] = []
        sandbox: dict[str, str] = {}  # how the test functions' processes were walled
        for i, test in enumerate(task.tests):
            name = test.name or f"test_{i + 1}"
            verdict, message = self._test(copy, test, text, task, case_conditions, items,
                                          sandbox)  # fmt: skip
            if verdict == "unsupported":  # no wall around a test function: counted apart
                return Score.unscored(f"test {name!r} was not run: {message}",
                                      evaluator_error=True, unsupported=message,
                                      python_sandbox=sandbox)  # fmt: skip
            if verdict == "error":
                return Score.unscored(f"test {name!r} could not be run (the evaluator's): "
                                      f"{message}", evaluator_error=True,
                                      python_sandbox=sandbox)  # fmt: skip
            if verdict == "passed":
                passed.append(name)
            else:
                failed.append({"name": name, "message": message})
        notes = [f"cleanup: {s.message}" for s in map(copy.run, task.cleanup) if not s.ok]
        share = len(passed) / len(task.tests)
        explanation = "every test passes" if not failed else "; ".join(
            f"{f['name']}: {f['message']}" for f in failed
        )  # fmt: skip
        details: dict[str, Any] = {"metrics": {"tests_passed": share}, "passed": passed,
                                   "failed": failed, "database": database}  # fmt: skip
        if notes:
            details["notes"] = notes
        if sandbox:
            details["python_sandbox"] = sandbox
        return Score(value=1.0 if not failed else 0.0, passed=not failed,
                     explanation=explanation, details=details)  # fmt: skip

    def _test(self, copy: Workspace, test: TaskTest, text: str, task: Task,
              conditions: Any = _ABSENT, items: list[str] | None = None,
              sandbox: dict[str, str] | None = None) -> tuple[str, str]:  # fmt: skip
        """("passed" | "failed" | "error" | "unsupported", message) of one test on the
        copy. A test function receives the system's statements one by one (`pred_sqls`;
        `items` as given under `legacy`) and, when the case has one, its
        `metadata.conditions`."""
        if test.python is not None:
            from queryeval.engines import run_python_test, split_statements

            pred_sqls = split_statements(text, copy.engine.dialect) if items is None else items
            return run_python_test(
                test.python, copy.access(), pred_sqls=pred_sqls,
                conditions=None if conditions is _ABSENT else (conditions or {}),
                helpers=self.options.python_helpers,
                sol_sqls=list(task.solution), timeout_s=self.options.python_timeout_s,
                memory=self.options.python_memory,
                exceptions=self.options.python_exceptions,
                filesystem=self.options.python_filesystem, legacy=self.options.legacy,
                sandbox=sandbox,
            )  # fmt: skip
        query = test.condition or test.query
        if not query:
            return "error", "a test needs a query (with rows), a condition or a function"
        step = copy.run(query)
        if not step.ok:
            return "failed", f"the test's query failed ({step.kind}): {step.message}"
        if test.condition is not None:
            value = step.rows[0][0] if step.rows and step.rows[0] else None
            return ("passed", "") if value is True or value == 1 else (
                "failed", f"the condition is {value!r}, not true")  # fmt: skip
        if test.rows is None:  # a query alone: it must return a row
            return ("passed", "") if step.rows else ("failed", "the query returned no row")
        return _compare(step.columns, step.rows, test.rows, query)


def _compare(columns: list[str], rows: list[tuple[Any, ...]], expected: list[list[Any]],
             query: str) -> tuple[str, str]:  # fmt: skip
    """Rows against the expected ones, column by position, in order when the query orders
    them (`queryeval.metrics.compare_results`)."""
    from queryeval.metrics import compare_results

    width = len(expected[0]) if expected else len(columns)
    names = columns if len(columns) == width else [f"c{i}" for i in range(width)]
    result = compare_results((columns, rows), (names, [tuple(r) for r in expected]),
                             columns="by_position", gold_query=query, legacy=False)  # fmt: skip
    if result.exact:
        return "passed", ""
    shown = [list(r) for r in rows[:5]]
    return "failed", (f"expected {expected[:5]!r}, got {shown!r}"
                      f"{' ...' if len(rows) > 5 else ''} ({result.reason})")  # fmt: skip


def _task(case: Case) -> Task | None:
    target = case.target
    return target.task if target is not None else None
