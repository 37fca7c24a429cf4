"""The schema a prompt shows, per case: the system's own `schema` (a file or text), else the
database's schema rendered from its engine (`queryeval.engines.describe_schema`), the Weaviate
collections of the suite's `weaviate_ast` scorer, or the SDMX codelists of its
`term_selection` scorer. Each source is read once per run."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.cases import Case
from queryeval.errors import InputError
from queryeval.systems._task import CaseTask

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig, SystemConfig
    from queryeval.scorers import ScoringContext

_TEXT_SUFFIXES = (".txt", ".sql", ".kql", ".cypher", ".cql", ".md", ".ddl")
_DATA_SUFFIXES = (".yaml", ".yml", ".json", ".xml")


def schema_file(suite: SuiteConfig, value: str) -> Path | None:
    """The file a system's `schema` names, or None when it is the schema text itself."""
    if "\n" in value or not value.strip().lower().endswith(_TEXT_SUFFIXES + _DATA_SUFFIXES):
        return None
    return suite.resolve(value.strip())


def render_weaviate(schema: Any) -> str:
    """Collections and their properties with data types, one collection per line.

    >>> render_weaviate({"Hotels": {"name": "text", "stars": "int"}})
    'Hotels: name (text), stars (int)'
    """
    from queryeval.metrics.weaviate import parse_schema

    parsed = parse_schema(schema)
    return "\n".join(
        f"{name}: " + ", ".join(f"{prop} ({kind})" for prop, kind in props.items())
        for name, props in parsed.collections.items()
    )


def render_codelists(lists: dict[str, dict[str, str]]) -> str:
    """One line per codelist: `CL_ID: CODE (name), ...`.

    >>> render_codelists({"CL_AREA": {"FR": "France", "DE": "Germany"}})
    'CL_AREA: FR (France), DE (Germany)'
    """
    return "\n".join(
        f"{cl}: " + ", ".join(f"{code} ({name})" for code, name in codes.items())
        for cl, codes in lists.items()
    )


class SchemaSource:
    """Schema texts for one system's prompts, built on first use and kept for the run."""

    def __init__(self, suite: SuiteConfig, system: SystemConfig) -> None:
        self.suite = suite
        self.system = system
        self._texts: dict[str, str] = {}
        self._lock = threading.Lock()

    def text(self, case: Case, task: CaseTask, ctx: ScoringContext | None) -> str:
        """The schema text for `case` (blocking: engines may start; call from a thread)."""
        own = self.system.schema_source
        if own is not None:
            return self._once(f"own:{own}", lambda: self._own(own, case, task))
        if task.is_query:
            if task.database is None or ctx is None:
                return ""
            database = task.database
            return self._once(f"db:{database}", lambda: self._engine(ctx, database))
        if task.task == "weaviate":
            ref = case.metadata.get("schema")
            key = json.dumps(ref, sort_keys=True, default=str)
            return self._once(f"weaviate:{key}", lambda: self._weaviate(ref))
        if task.task == "sdmx":
            return self._once("sdmx", self._codelists)
        return ""

    def _once(self, key: str, build: Any) -> str:
        with self._lock:  # a schema is built once, however many cases ask at the same time
            if key not in self._texts:
                self._texts[key] = build()
            return self._texts[key]

    def _engine(self, ctx: ScoringContext, database: str) -> str:
        from queryeval.engines import describe_schema

        return describe_schema(ctx.engine(database))

    def _own(self, value: str, case: Case, task: CaseTask) -> str:
        path = schema_file(self.suite, value)
        if path is None:
            return value.strip()
        if not path.is_file():
            raise InputError("schema file not found", path=path, where=f"system {self.system.name}")
        suffix = path.suffix.lower()
        if suffix == ".xml":
            from queryeval.scorers import load_codelists

            return render_codelists(load_codelists(path))
        if suffix in (".yaml", ".yml", ".json") and task.task == "weaviate":
            return self._weaviate_file(path, case.metadata.get("schema"))
        return path.read_text(encoding="utf-8").strip()

    def _scorer_option(self, scorer: str, option: str) -> str | None:
        for config in self.suite.scorers:
            if config.name == scorer and config.options.get(option):
                return str(config.options[option])
        return None

    def _weaviate(self, ref: Any) -> str:
        if isinstance(ref, dict | list):
            return render_weaviate(ref)
        file = self._scorer_option("weaviate_ast", "schemas")
        if file is None:
            return ""
        return self._weaviate_file(self.suite.resolve(file), ref)

    def _weaviate_file(self, path: Path, ref: Any) -> str:
        from queryeval.scorers.weaviate import load_schemas

        schemas = load_schemas(path)
        if ref is None and len(schemas) == 1:
            ref = next(iter(schemas))
        if ref is None:
            return "\n\n".join(render_weaviate(s) for s in schemas.values())
        if str(ref) not in schemas:
            raise InputError(
                f"unknown schema {ref!r} (known: {', '.join(sorted(schemas))})", path=path
            )
        return render_weaviate(schemas[str(ref)])

    def _codelists(self) -> str:
        from queryeval.scorers import load_codelists

        file = self._scorer_option("term_selection", "codelist")
        return render_codelists(load_codelists(self.suite.resolve(file))) if file else ""
