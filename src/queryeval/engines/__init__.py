"""Execute generated queries in a sandbox: SQL (DuckDB, SQLite, SQLAlchemy URLs), KQL
(duckdb-kql in process, Kusto endpoints) and Cypher (embedded ArcadeDB over Bolt, Neo4j); and
offline KQL validity with Microsoft's Kusto.Language (a Node helper process).

Importing this package imports no engine library; each is loaded when a database needs it.
"""

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

__all__ = [
    "ENGINES",
    "Blame",
    "CopiedTable",
    "DatabaseOptions",
    "DuckDBScratch",
    "Engine",
    "EngineKind",
    "EngineSpec",
    "Execution",
    "ExecutionMemo",
    "GoldStore",
    "GraphScratch",
    "KqlDiagnostic",
    "KqlSchema",
    "KqlScratch",
    "KqlValidator",
    "KqlValidatorError",
    "KqlValidatorTimeout",
    "KqlValidity",
    "KustoLanguageChecker",
    "KustoLanguageMissing",
    "Limits",
    "ResultSet",
    "ScratchCatalog",
    "Step",
    "ValidityChecker",
    "ValidityVerdict",
    "Workspace",
    "acquire_graph_scratch",
    "blame",
    "build_engine",
    "check_validity",
    "copy_sample",
    "copy_support",
    "database_problem",
    "describe_schema",
    "disposable_copy",
    "empty_twin",
    "engine_from_context",
    "engine_kind_entry",
    "engine_kinds",
    "engine_language",
    "execute_query",
    "gold_execution",
    "gold_order",
    "independent_verdict",
    "kql_schema_from_context",
    "kql_validator_from_context",
    "kql_validity_checker",
    "kql_validity_in_context",
    "postgres_missing",
    "register_engine",
    "register_validity_checker",
    "related_tables",
    "release_graph_scratch",
    "run_prediction",
    "run_python_test",
    "shared_validator",
    "split_statements",
    "transaction_control",
    "validity_checker",
]
