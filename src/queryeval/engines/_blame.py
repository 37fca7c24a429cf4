"""Whose fault is an execution that gave no rows: the system's query, or the evaluator's
engine? The one place where an outcome kind becomes a failure or an unscored case.

- `ok`: nobody's.
- `timeout` with less CPU time than the limit (`ExecutionOutcome.cpu_s`, see
  `queryeval.engines._cost`): the evaluator's; the machine was too slow, not the query.
- `syntax`, `schema`, `runtime`, `timeout`, `resource_limit`, `refused`: the query's
  (the system's), unless the engine only emulates the language and is not the authority on
  that kind (duckdb-kql's `syntax`): then the independent validity check decides too.
- `unsupported`, `engine_error`: the engine's, *if* the query is valid by an independent
  check (`check_validity`): then the case is unscored. An invalid query is the system's
  fault (`syntax` / `schema`); when validity cannot be established the case fails with
  reason `engine_could_not_run`, reported apart (the figure may understate the system).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from queryeval.cases import ENGINE_FAULTS
from queryeval.engines._validity import ValidityVerdict, check_validity, validity_checker

if TYPE_CHECKING:
    from queryeval.cases import ExecutionOutcome
    from queryeval.engines._base import Engine


@dataclass(frozen=True)
class Blame:
    """Who is at fault: `none` (it ran), `system` (`reason` is a failure reason) or
    `evaluator` (the case is unscored, `message` says why)."""

    party: Literal["none", "system", "evaluator"]
    reason: str = ""
    message: str = ""
    validity: ValidityVerdict | None = None


NOBODY = Blame("none")


def blame(outcome: ExecutionOutcome, engine: Engine, query: str) -> Blame:
    """Whose fault `outcome` (of `query` on `engine`) is; see the module docstring."""
    kind = outcome.kind
    if kind == "ok":
        return NOBODY
    if kind == "timeout" and outcome.cpu_s is not None and outcome.cpu_s < engine.limits.timeout_s:
        return Blame("evaluator", "overloaded", f"the evaluator's machine was too slow to "
                     f"run the query within its limits: {outcome.message}")  # fmt: skip
    if kind not in ENGINE_FAULTS and kind not in engine.emulated_kinds:
        return Blame("system", kind, outcome.message)
    verdict = _independent(engine, query)
    if verdict.validity == "valid":
        return Blame(
            "evaluator",
            "engine_gap",
            f"the engine could not run a query that {verdict.checker or 'a checker'} finds "
            f"valid ({kind}: {outcome.message})",
            verdict,
        )
    if verdict.validity == "invalid":
        message = f"{verdict.message} ({verdict.checker})" if verdict.checker else verdict.message
        return Blame("system", verdict.kind or "syntax", message or outcome.message, verdict)
    if kind in ENGINE_FAULTS:
        return Blame(
            "system",
            "engine_could_not_run",
            f"{kind}: {outcome.message} (validity not established: {verdict.message})",
            verdict,
        )
    return Blame("system", kind, outcome.message, verdict)


def _independent(engine: Engine, query: str) -> ValidityVerdict:
    if validity_checker(engine.language) is None:  # no checker: never fetch the schema
        return check_validity(engine.language, query)
    try:
        schema = engine.cached_schema()
    except Exception:  # a checker may still work without the schema
        schema = None
    return check_validity(engine.language, query, schema=schema, dialect=engine.dialect)
