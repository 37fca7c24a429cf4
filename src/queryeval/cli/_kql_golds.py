"""`queryeval validate`: gold KQL queries checked with Kusto.Language against the schema of
their database, before anything runs (a gold that is not valid KQL is the suite's error)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from queryeval.cases import Case
from queryeval.config import SuiteConfig


def kql_gold_problems(suite: SuiteConfig, cases: Sequence[Case],
                      cache_dir: Path) -> tuple[list[str], str | None]:  # fmt: skip
    """(one line per gold KQL query Kusto.Language finds invalid, a note when nothing could
    be checked). Golds on databases of other languages, or with no database, are skipped."""
    from queryeval.engines import (
        KqlValidatorError,
        engine_from_context,
        kql_validity_in_context,
        shared_validator,
    )
    from queryeval.scorers import ScoringContext
    from queryeval.scorers.execution import case_database, target_query

    # embedded KQL only: a Kusto server's schema would be fetched over the network
    kql = {n for n, db in suite.databases.items() if db.engine in ("kql", "duckdb-kql")}
    if not kql:
        return [], None
    missing = shared_validator().missing()
    if missing:
        return [], f"gold KQL queries not checked: {missing}"
    ctx = ScoringContext(suite, cache_dir)
    problems: list[str] = []
    try:
        for case in cases:
            for i, target in enumerate(case.targets):
                query = target_query(target)
                if query is None:
                    continue
                database = query.database or case_database(case, None, ctx)
                if database not in kql:
                    continue
                if engine_from_context(ctx, str(database)).language != "kql":
                    continue
                try:
                    validity = kql_validity_in_context(ctx, query.text, str(database))
                except KqlValidatorError as exc:
                    problems.append(f"case {case.id}: gold {i}: not checked ({exc})")
                    continue
                if not validity.semantic_ok:
                    problems.append(f"case {case.id}: gold {i} is not valid KQL on database "
                                    f"{database!r}: {validity.message()}")  # fmt: skip
    finally:
        ctx.close()
    return problems, None
