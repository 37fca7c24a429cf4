"""What a case asks a system for: its task (a SQL, KQL or Cypher query, a Weaviate query,
an SDMX selection, an answer), the database it is about, and the fence language of a reply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from queryeval.cases import Case, Query, Target

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig, SystemConfig

# the Attempt field a task's output goes into
OUTPUT_FIELD = {
    "sql": "query",
    "kql": "query",
    "cypher": "query",
    "weaviate": "weaviate_query",
    "sdmx": "indicator_selection",
    "answer": "answer",
}


@dataclass(frozen=True)
class CaseTask:
    """The task of one case for one system, and the database it runs on (None: none)."""

    task: str
    database: str | None

    @property
    def is_query(self) -> bool:
        """A SQL, KQL or Cypher query, checked and executed on a database."""
        return self.task in ("sql", "kql", "cypher")

    @property
    def field(self) -> str:
        """The Attempt field holding the output."""
        return OUTPUT_FIELD[self.task]


def _gold_query(target: Target) -> Query | None:
    query = target.query
    return Query(text=query) if isinstance(query, str) else query


def case_database(case: Case, suite: SuiteConfig | None, system: SystemConfig | None) -> str | None:
    """The database of a case: its gold query's, `metadata.database`, the system's
    `database`, else the suite's only database."""
    for target in case.targets:
        query = _gold_query(target)
        if query is not None and query.database:
            return query.database
    if case.metadata.get("database"):
        return str(case.metadata["database"])
    if system is not None and system.database:
        return system.database
    names = list(suite.databases) if suite is not None else []
    return names[0] if len(names) == 1 else None


def case_task(case: Case, suite: SuiteConfig | None, system: SystemConfig | None) -> CaseTask:
    """The task of `case`: the system's `task`, else what the gold holds (a query takes the
    language of its database's engine, or its own `language`), else the database's language,
    else an answer."""
    database = case_database(case, suite, system)
    if system is not None and system.task is not None:
        return CaseTask(system.task, database)
    engine_language = None
    if suite is not None and database in suite.databases:
        from queryeval.engines import engine_language as language_of  # the kind says it

        engine_language = language_of(suite.databases[database].engine)
    target = case.target
    if target is not None:
        query = _gold_query(target)
        if query is not None:
            language = engine_language or query.language.lower()
            return CaseTask(language if language in OUTPUT_FIELD else "sql", database)
        if target.weaviate_query is not None:
            return CaseTask("weaviate", database)
        if target.indicator_selection is not None:
            return CaseTask("sdmx", database)
        if target.answer is not None:
            return CaseTask("answer", database)
    return CaseTask(engine_language or "answer", database)
