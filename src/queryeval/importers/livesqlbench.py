"""LiveSQLBench (Base-Lite and later releases), PostgreSQL: tasks scored by test cases.

Sources: `livesqlbench_data.jsonl` with the ground-truth fields merged in (the official
`integrate_gt_data.py` does it; the public file leaves out `sol_sql`, `test_cases` and
`external_knowledge`): `instance_id`, `selected_database`, `query`, `preprocess_sql`,
`sol_sql`, `clean_up_sql`, `test_cases`, `category` (`Query` or `Management`),
`conditions`; and the PostgreSQL dumps `<db>_template/<table>.sql` as the official Docker
image loads them (`postgre_table_dumps/`).

As the official evaluation: a `Query` task is scored by the default soft-EX test called
with `conditions` (order, decimals, distinct); a `Management` task by its own test cases,
called without it; setup, cleanup and the solution as in `bird_critic`; any exception a
failed test. Predictions: the official `{instance_id, pred_sqls}` lines. `--set
legacy=true`: as the official `evaluation.py` runs them (scorer option `legacy`: each
`pred_sqls` item with one execute, the test source run as its `exec` runs it, only its
helpers seen, `date` not among them), a `Management` task without test cases solved when
the prediction runs (by default it gets the soft-EX test).
"""

from __future__ import annotations

from typing import Any

from queryeval.errors import InputError
from queryeval.importers._read import read_jsonl
from queryeval.importers._suite import ImportedSuite, ImportRequest
from queryeval.importers.bird_critic import (
    databases_for,
    legacy_flag,
    read_predictions,
    suite_scorers,
    task_case,
)

SUMMARY = "LiveSQLBench (PostgreSQL): task JSONL with test cases, table dumps"
OPTIONS = {
    "timeout_s": "time limit of each statement, seconds (30)",
    "legacy": "true: as the official evaluation.py (its exec, its helpers; a Management task "
    "without test cases solved when the prediction runs); false (default)",
}
SCORERS = ("task_tests",)
SKIPS_MISSING = True


def build(request: ImportRequest) -> ImportedSuite:
    """The suite of LiveSQLBench tasks (see the module docstring)."""
    request.expect_options(*OPTIONS)
    files = [s for s in request.sources if s.is_file() and s.suffix == ".jsonl"]
    if not files:
        raise InputError("no livesqlbench_data.jsonl among the sources")
    legacy = legacy_flag(request.option("legacy"))
    cases: list[dict[str, Any]] = []
    for path in files:
        for line, item in read_jsonl(path):
            if not isinstance(item, dict) or not item.get("instance_id"):
                raise InputError("expected an object with 'instance_id'", path=path, line=line)
            database = str(item.get("selected_database") or "")
            if not database:
                raise InputError("expected 'selected_database'", path=path, line=line)
            category = str(item.get("category") or "Query")
            if category not in ("Query", "Management"):
                raise InputError(
                    f"'category' {category!r}: expected Query or Management", path=path, line=line
                )
            query = category == "Query"
            cases.append(
                task_case(
                    item,
                    path,
                    line,
                    database=database,
                    question=str(item.get("query") or ""),
                    default_test=query,
                    conditions=query,
                    untested_runs=legacy,
                )
            )
    if not cases:
        raise InputError("no task to import")
    names = {c["metadata"]["database"] for c in cases}
    databases = databases_for(
        request, names, "postgresql", request.number_option("timeout_s", 30.0)
    )
    absent = names - set(databases)
    cases = [c for c in cases if c["metadata"]["database"] not in absent]
    known = {c["id"] for c in cases}
    notes = [f"tasks of absent databases left out: {', '.join(sorted(absent))}"] if absent else []
    return ImportedSuite(
        name=request.name or "livesqlbench",
        cases=cases,
        databases=databases,
        predictions={n: read_predictions(p, known) for n, p in request.predictions},
        suite=suite_scorers(legacy=legacy),
        notes=notes,
    )
