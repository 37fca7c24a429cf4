"""KQL on scratch DuckDB catalogs: the variants of a KQL database (its tables are DuckDB
tables) queried the way the embedded KQL engine queries its file.

A query is prepared by the **original** engine (`KqlEngine.prepare`: queryeval's rewrites
and the stored functions it needs; the variants share its schema) and run by duckdb-kql on
the catalog's cursor, read-only (`allow_write=False`, the sandbox's parser refusal first),
with the original engine's pinned `now()`, under the same limits; failures are classified
by the original engine. The instance is not configuration-locked (duckdb-kql sets the time
zone on every query, as on the engine's own connection); it has no file system access.
"""

from __future__ import annotations

from typing import Any

from queryeval.cases import OutcomeKind
from queryeval.engines._base import Engine, Limits, RawResult
from queryeval.engines._duckdb import run_on_cursor
from queryeval.engines._kql import decode_dynamic
from queryeval.engines._variants_duckdb import DuckDBScratch, ScratchCatalog


class KqlScratch(DuckDBScratch):
    """Scratch catalogs queried in KQL, as `origin` (a `KqlEngine`) would query them."""

    def __init__(self, origin: Engine, limits: Limits | None = None) -> None:
        super().__init__(limits or origin.limits, lock=False)
        self.origin = origin

    def catalog(self, name: str) -> ScratchCatalog:
        return KqlScratchCatalog(self, name)


class KqlScratchCatalog(ScratchCatalog):
    """One catalog of a `KqlScratch`: `write` takes SQL (the variant's script), `execute`
    takes KQL."""

    language = "kql"
    scratch: KqlScratch

    def refusal(self, query: str) -> str | None:
        return self.scratch.origin.refusal(query)

    def _run(self, query: str) -> RawResult:
        import duckdb_kql

        origin: Any = self.scratch.origin
        prepared = origin.prepare(query)
        functions = list(prepared.functions)
        with self._own_lock:
            cursor = self._own

            def start() -> object:
                return duckdb_kql.execute(cursor, prepared.text, allow_write=False,
                                          query_now=origin.now, functions=functions)  # fmt: skip

            raw = run_on_cursor(cursor, start, self.limits)
            types = [str(d[1]) for d in cursor.description or []]
        return decode_dynamic(raw, types)

    def classify(self, exc: BaseException) -> tuple[OutcomeKind, str]:
        return self.scratch.origin.classify(exc)

    def outcome_of(self, exc: BaseException, query: str) -> tuple[OutcomeKind, str]:
        return self.scratch.origin.outcome_of(exc, query)
