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
        # a translation depends on the query and the catalog's tables and columns only
        # (the clock is the origin's, pinned): made once for every variant alike
        self.translations: dict[tuple[str, str], tuple[str, Any]] = {}

    def catalog(self, name: str) -> ScratchCatalog:
        return KqlScratchCatalog(self, name)


class KqlScratchCatalog(ScratchCatalog):
    """One catalog of a `KqlScratch`: `write` takes SQL (the variant's script), `execute`
    takes KQL."""

    language = "kql"
    scratch: KqlScratch
    _catalog_schema: Any = None  # the catalog's tables and columns, read once it is built
    _catalog_key = ""  # its tables and columns by their bare names: the translations' key

    def refusal(self, query: str) -> str | None:
        return self.scratch.origin.refusal(query)

    def _run(self, query: str) -> RawResult:
        with self._own_lock:
            cursor = self._own
            sql, parameters = self._translate(query, cursor)

            def start() -> object:
                cursor.execute("SET TimeZone = 'UTC'")  # as duckdb-kql's execute does
                return cursor.execute(sql, parameters) if parameters else cursor.execute(sql)

            raw = run_on_cursor(cursor, start, self.limits)
            types = [str(d[1]) for d in cursor.description or []]
        return decode_dynamic(raw, types)

    def _translate(self, query: str, cursor: Any) -> tuple[str, Any]:
        """duckdb-kql's SQL for `query` as the origin prepares it, on this catalog's tables
        (what `duckdb_kql.execute` does before it runs the SQL), cached per scratch."""
        import duckdb_kql
        from duckdb_kql.engine import schema
        from duckdb_kql.errors import KqlSchemaError

        origin: Any = self.scratch.origin
        prepared = origin.prepare(query)
        if self._catalog_schema is None:  # this catalog's tables only, not the other
            # variants' (attached to the same DuckDB): the same tables, the same translation
            current = cursor.execute("SELECT current_database()").fetchone()[0] + "."
            found_schema = schema(cursor)
            bare = {k[len(current) :] for k in found_schema if k.startswith(current)}
            self._catalog_schema = {k: v for k, v in found_schema.items()
                                    if k in bare or k.startswith(current)}  # fmt: skip
            self._catalog_key = repr(sorted((k, v) for k, v in self._catalog_schema.items()
                                            if k in bare))  # fmt: skip
        key = (prepared.text + "\0" + "\0".join(prepared.functions), self._catalog_key)
        found = self.scratch.translations.get(key)
        if found is None:
            named = "\n".join([prepared.text, *prepared.functions])
            catalog = origin.externaldata.catalog(self._catalog_schema, named)
            translated = duckdb_kql.to_sql(prepared.text, schema=catalog,
                                           allow_write=False, query_now=origin.now,
                                           functions=list(prepared.functions))  # fmt: skip
            if translated.unbound:
                hint = "declared query parameter with no value and no default"
                raise KqlSchemaError(", ".join(translated.unbound), hint=hint)
            found = (str(translated), translated.parameters)
            self.scratch.translations[key] = found
        for table in origin.externaldata.named(found[0]):  # `externaldata` rows, unchanged
            table.create(cursor)
        return found

    def classify(self, exc: BaseException) -> tuple[OutcomeKind, str]:
        return self.scratch.origin.classify(exc)

    def outcome_of(self, exc: BaseException, query: str) -> tuple[OutcomeKind, str]:
        return self.scratch.origin.outcome_of(exc, query)
