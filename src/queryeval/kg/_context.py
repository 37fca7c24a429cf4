"""KG validators built once per run from the suite's Cypher engines, verdicts memoised."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from queryeval.kg._validity import KGValidationError, KGValidator, KGValidity

if TYPE_CHECKING:
    from queryeval.resources import RunResources


class _Verdicts:
    """(database, query) -> KGValidity or the KGValidationError it gave; each query is
    validated once per run whichever scorers ask, concurrent askers waiting for one run."""

    def __init__(self) -> None:
        self._done: dict[tuple[str, str], KGValidity | KGValidationError] = {}
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str], run: Any) -> KGValidity:
        with self._lock:
            gate = self._locks.setdefault(key, threading.Lock())
        with gate:
            if key not in self._done:
                try:
                    self._done[key] = run()
                except KGValidationError as exc:
                    self._done[key] = exc
        verdict = self._done[key]
        if isinstance(verdict, KGValidationError):
            raise verdict
        return verdict


def kg_validator_from_context(ctx: RunResources, database: str) -> KGValidator:
    """The KG validator of a Cypher database of the suite, built on first use."""
    from queryeval.engines import engine_from_context

    engine = engine_from_context(ctx, database)
    if engine.language != "cypher":
        raise KGValidationError(
            f"KG validity needs a Cypher database; {database!r} is {engine.language}"
        )

    def build() -> KGValidator:
        # The Cypher engine keeps its neo4j driver private; CyVer needs that very driver.
        driver = getattr(engine, "driver", None) or engine._driver  # type: ignore[attr-defined]
        return KGValidator(
            driver,
            getattr(engine, "database", None),
            engine.schema(),
            timeout_s=3 * engine.limits.timeout_s,
        )

    return ctx.resource(f"kg:{database}", build)  # once, whichever scorers ask


def validate_in_context(ctx: RunResources, database: str, query: str) -> KGValidity:
    """KG validity of `query` on `database`, once per run. A query the sandbox refuses (a
    write) is never sent to the server: KGValidationError says why."""
    from queryeval.engines import engine_from_context

    refusal = engine_from_context(ctx, database).refusal(query)
    if refusal is not None:
        raise KGValidationError(f"not validated: {refusal}")
    verdicts = ctx.resource("kg:verdicts", _Verdicts)
    return verdicts.get(
        (database, query), lambda: kg_validator_from_context(ctx, database).validate(query)
    )
