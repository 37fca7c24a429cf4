"""Execute generated queries in a sandbox: SQL (DuckDB, SQLite, SQLAlchemy URLs), KQL
(duckdb-kql in process, Kusto endpoints) and Cypher (embedded ArcadeDB over Bolt, Neo4j); and
offline KQL validity with Microsoft's Kusto.Language (a Node helper process).

Importing this package imports no engine library, and none of its own modules: each name
below is imported on first use (`__getattr__`), so a run that needs no database pays for no
engine code.
"""

# ruff: noqa: F401 - the typed names below are for queryeval's own packages (see `__all__`)
from __future__ import annotations

from typing import TYPE_CHECKING

from queryeval._registry import lazy_attributes

if TYPE_CHECKING:
    from queryeval.engines._base import Engine, Execution, Limits
    from queryeval.engines._blame import Blame, blame
    from queryeval.engines._describe import describe_schema
    from queryeval.engines._disposable import (
        Step,
        Workspace,
        copy_support,
        disposable_copy,
        split_statements,
        transaction_control,
    )
    from queryeval.engines._disposable_python import run_python_test
    from queryeval.engines._factory import EngineSpec, build_engine, engine_from_context
    from queryeval.engines._gold_store import GoldStore
    from queryeval.engines._kusto_language import (
        KqlDiagnostic,
        KqlSchema,
        KqlValidator,
        KqlValidatorError,
        KqlValidatorTimeout,
        KqlValidity,
        KustoLanguageChecker,
        KustoLanguageMissing,
        independent_verdict,
        kql_schema_from_context,
        kql_validator_from_context,
        kql_validity_checker,
        kql_validity_in_context,
        shared_validator,
    )
    from queryeval.engines._options import DatabaseOptions, database_problem
    from queryeval.engines._postgres_server import missing_reason as postgres_missing
    from queryeval.engines._registry import BUILTIN_ENGINES as ENGINES
    from queryeval.engines._registry import (
        EngineKind,
        engine_kind_entry,
        engine_kinds,
        engine_language,
        register_engine,
    )
    from queryeval.engines._results import (
        ExecutionMemo,
        execute_query,
        gold_execution,
        gold_order,
        run_prediction,
    )
    from queryeval.engines._twin import empty_twin
    from queryeval.engines._validity import (
        ValidityChecker,
        ValidityVerdict,
        check_validity,
        register_validity_checker,
        validity_checker,
    )
    from queryeval.engines._variants_cypher import (
        GraphScratch,
        acquire_graph_scratch,
        release_graph_scratch,
    )
    from queryeval.engines._variants_duckdb import DuckDBScratch, ScratchCatalog
    from queryeval.engines._variants_kql import KqlScratch
    from queryeval.engines._variants_sqlalchemy import CopiedTable, copy_sample, related_tables
    from queryeval.metrics import ResultSet

# name -> (module, its name there; None: the same), imported on first use
_LAZY: dict[str, tuple[str, str | None]] = {
    "Engine": ("queryeval.engines._base", None),
    "Execution": ("queryeval.engines._base", None),
    "Limits": ("queryeval.engines._base", None),
    "Blame": ("queryeval.engines._blame", None),
    "blame": ("queryeval.engines._blame", None),
    "describe_schema": ("queryeval.engines._describe", None),
    "Step": ("queryeval.engines._disposable", None),
    "Workspace": ("queryeval.engines._disposable", None),
    "copy_support": ("queryeval.engines._disposable", None),
    "disposable_copy": ("queryeval.engines._disposable", None),
    "split_statements": ("queryeval.engines._disposable", None),
    "transaction_control": ("queryeval.engines._disposable", None),
    "run_python_test": ("queryeval.engines._disposable_python", None),
    "EngineSpec": ("queryeval.engines._factory", None),
    "build_engine": ("queryeval.engines._factory", None),
    "engine_from_context": ("queryeval.engines._factory", None),
    "GoldStore": ("queryeval.engines._gold_store", None),
    "KqlDiagnostic": ("queryeval.engines._kusto_language", None),
    "KqlSchema": ("queryeval.engines._kusto_language", None),
    "KqlValidator": ("queryeval.engines._kusto_language", None),
    "KqlValidatorError": ("queryeval.engines._kusto_language", None),
    "KqlValidatorTimeout": ("queryeval.engines._kusto_language", None),
    "KqlValidity": ("queryeval.engines._kusto_language", None),
    "KustoLanguageChecker": ("queryeval.engines._kusto_language", None),
    "KustoLanguageMissing": ("queryeval.engines._kusto_language", None),
    "independent_verdict": ("queryeval.engines._kusto_language", None),
    "kql_schema_from_context": ("queryeval.engines._kusto_language", None),
    "kql_validator_from_context": ("queryeval.engines._kusto_language", None),
    "kql_validity_checker": ("queryeval.engines._kusto_language", None),
    "kql_validity_in_context": ("queryeval.engines._kusto_language", None),
    "shared_validator": ("queryeval.engines._kusto_language", None),
    "DatabaseOptions": ("queryeval.engines._options", None),
    "database_problem": ("queryeval.engines._options", None),
    "postgres_missing": ("queryeval.engines._postgres_server", "missing_reason"),
    "ENGINES": ("queryeval.engines._registry", "BUILTIN_ENGINES"),
    "EngineKind": ("queryeval.engines._registry", None),
    "engine_kind_entry": ("queryeval.engines._registry", None),
    "engine_kinds": ("queryeval.engines._registry", None),
    "engine_language": ("queryeval.engines._registry", None),
    "register_engine": ("queryeval.engines._registry", None),
    "ExecutionMemo": ("queryeval.engines._results", None),
    "execute_query": ("queryeval.engines._results", None),
    "gold_execution": ("queryeval.engines._results", None),
    "gold_order": ("queryeval.engines._results", None),
    "run_prediction": ("queryeval.engines._results", None),
    "empty_twin": ("queryeval.engines._twin", None),
    "ValidityChecker": ("queryeval.engines._validity", None),
    "ValidityVerdict": ("queryeval.engines._validity", None),
    "check_validity": ("queryeval.engines._validity", None),
    "register_validity_checker": ("queryeval.engines._validity", None),
    "validity_checker": ("queryeval.engines._validity", None),
    "GraphScratch": ("queryeval.engines._variants_cypher", None),
    "acquire_graph_scratch": ("queryeval.engines._variants_cypher", None),
    "release_graph_scratch": ("queryeval.engines._variants_cypher", None),
    "DuckDBScratch": ("queryeval.engines._variants_duckdb", None),
    "ScratchCatalog": ("queryeval.engines._variants_duckdb", None),
    "KqlScratch": ("queryeval.engines._variants_kql", None),
    "CopiedTable": ("queryeval.engines._variants_sqlalchemy", None),
    "copy_sample": ("queryeval.engines._variants_sqlalchemy", None),
    "related_tables": ("queryeval.engines._variants_sqlalchemy", None),
    "ResultSet": ("queryeval.metrics", None),
}

# What users call. The other names of `_LAZY` are for queryeval's own packages (the private-
# modules contract has them import through here), not a public interface.
__all__ = [
    "ENGINES",
    "Blame",
    "DatabaseOptions",
    "Engine",
    "EngineKind",
    "EngineSpec",
    "Execution",
    "KqlValidator",
    "KqlValidity",
    "KustoLanguageMissing",
    "Limits",
    "ValidityChecker",
    "ValidityVerdict",
    "blame",
    "build_engine",
    "check_validity",
    "describe_schema",
    "engine_kinds",
    "engine_language",
    "execute_query",
    "register_engine",
    "register_validity_checker",
    "validity_checker",
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
