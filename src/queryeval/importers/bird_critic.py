"""BIRD-CRITIC 1.0: SQL issues to debug, scored by their test cases (`task_tests`).

Sources:

- the task JSONL as published with its ground-truth fields merged in (the public files
  leave out `sol_sql` and `test_cases`; the BIRD team sends them on request): one object
  a line, `instance_id`, `db_id` (or `selected_database`), `query`, `issue_sql`,
  `preprocess_sql`, `sol_sql`, `clean_up_sql`, `test_cases` (Python sources defining
  `test_case(pred_sqls, sol_sqls, db, conn, conditions)`), `conditions`, `efficiency`;
- the databases: SQLite files `<db>/<db>.sqlite` (BIRD-CRITIC-SQLite, as the official
  harness finds them), or PostgreSQL dumps `<db>_template/<table>.sql` (as the official
  Docker image loads them: `postgre_table_dumps/`).

Each instance becomes a case whose target is a task on its database: `preprocess_sql` its
setup, each test case a Python test (none: the official default, soft EX through
`ex_base`), `clean_up_sql` its cleanup, `sol_sql` its solution; the question shows the
user's issue and their SQL. The suite scores with `task_tests` as the official harness
counts: an instance is solved when the prediction runs and every test passes, a test
function raising anything counts as failed (`python_exceptions: fail`). As the official
harnesses call them, SQLite test functions get `conditions` and the helpers of
`sqlite_test_utils.py`, PostgreSQL ones no `conditions` and those of
`postgresql_test_utils.py` (`python_helpers: bird_critic_postgresql`).

Predictions (`--predictions NAME=FILE`): the official `{instance_id, pred_sqls: [...]}`
lines; the statements are joined with `;` into one prediction's `query` (on its own line
after an item ending in a `--` comment), the items kept
as they are in its `statements`. By default (the field's convention) every statement the
items hold runs; `--set legacy=true` runs them as the official SQLite harness does, each
item with one `execute` (an item holding two statements fails there: Python's sqlite3
refuses it), and hands the items to the test functions as they are (scorer option
`legacy`), its other quirks too: a test source run as the harness's `exec` runs it
(its top-level names unseen in `test_case`, only the harness's helpers), and on
PostgreSQL an instance without test cases solved when the prediction runs (see
docs/tasks.md).

Not reproduced (reported as notes): `efficiency` instances (the official query-plan
comparison, `performance_compare_by_qep`) are left out; the template database's extras
(hstore, citext, schemas test_schema, test_schema_2) are created in each PostgreSQL
fixture as the official image does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.importers._read import read_jsonl
from queryeval.importers._suite import ImportedSuite, ImportRequest

SUMMARY = "BIRD-CRITIC 1.0 tasks (SQLite, PostgreSQL): task JSONL with test cases, databases"
OPTIONS = {
    "dialect": "sqlite or postgresql (default: from the instances' dialect / instance_id)",
    "timeout_s": "time limit of each statement, seconds (30, the official harness's)",
    "legacy": "true: each pred_sqls item run with one execute, as the official harness "
    "(an item holding two statements fails on SQLite); false (default): every statement runs",
}
SCORERS = ("task_tests",)
SKIPS_MISSING = True

# The official default test (soft EX): comments, DISTINCT and ROUND removed from both sides,
# the results compared as sets (as lists when conditions.order), rounded to 2 decimals.
DEFAULT_TEST = """\
def test_case(pred_sqls, sol_sqls, db, conn, conditions=None):
    pred_sqls = remove_round(remove_distinct(remove_comments(pred_sqls)))
    sol_sqls = remove_round(remove_distinct(remove_comments(sol_sqls)))
    result = ex_base(pred_sqls, sol_sqls, db, conn, conditions)
    assert result == 1, f"ex_base returned {result} but expected 1."
"""
# What the official PostgreSQL template database holds beside the dumps
TEMPLATE_SQL = """\
\\set ON_ERROR_STOP off
CREATE SCHEMA IF NOT EXISTS test_schema;
CREATE SCHEMA IF NOT EXISTS test_schema_2;
CREATE EXTENSION IF NOT EXISTS hstore;
CREATE EXTENSION IF NOT EXISTS citext;
"""


def statements(value: Any, where: str, path: Path, line: int) -> list[str]:
    """A field holding SQL: a list of statements, one string, or nothing."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v for v in value if v.strip()]
    raise InputError(f"{where!r}: expected a list of SQL strings", path=path, line=line)


def task_case(
    item: dict[str, Any],
    path: Path,
    line: int,
    *,
    database: str,
    question: str,
    default_test: bool,
    conditions: bool = True,
    untested_runs: bool = False,
) -> dict[str, Any]:
    """A case of one benchmark instance (shared with the LiveSQLBench importer):
    `default_test` when the instance is scored by the default soft-EX test; `conditions`:
    whether its test functions receive `conditions` (as the official harness calls them);
    `untested_runs`: an instance without test cases is solved when the prediction runs
    (the official BIRD-CRITIC PostgreSQL harness), else scored by the default test."""
    iid = str(item["instance_id"])
    tests = item.get("test_cases") or []
    if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
        raise InputError("'test_cases': expected a list of Python sources", path=path, line=line)
    checks: list[dict[str, Any]] = []
    if not tests and untested_runs and not default_test:
        checks = [{"name": "no test cases: the prediction ran", "condition": "SELECT true"}]
    elif default_test or not tests:
        tests = [DEFAULT_TEST]
    solution = statements(item.get("sol_sql"), "sol_sql", path, line)
    if not solution:
        raise InputError(
            f"{iid}: no 'sol_sql' (the ground-truth fields are sent by the "
            "BIRD team on request; merge them into the file)",
            path=path,
            line=line,
        )
    task = {
        "database": database,
        "setup": statements(item.get("preprocess_sql"), "preprocess_sql", path, line),
        "tests": checks or [{"name": f"test_{i + 1}", "python": t} for i, t in enumerate(tests)],
        "cleanup": statements(item.get("clean_up_sql"), "clean_up_sql", path, line),
        "solution": solution,
    }
    metadata: dict[str, Any] = {"database": database}
    if conditions:
        metadata["conditions"] = item.get("conditions") or {}
    for key in ("category", "high_level", "efficiency", "external_knowledge"):
        if item.get(key) not in (None, "", []):
            metadata[key] = item[key]
    return {
        "id": iid,
        "tags": [f"db:{database}"],
        "metadata": metadata,
        "conversation": [{"content": question, "target": {"task": task}}],
    }


def read_predictions(path: Path, known: set[str]) -> list[dict[str, Any]]:
    """The official `{instance_id, pred_sqls}` lines as predictions: the statements
    joined (`query`) and the items as given (`statements`, which `legacy` runs)."""
    out = []
    for line, item in read_jsonl(path):
        if not isinstance(item, dict) or "instance_id" not in item:
            raise InputError("expected an object with 'instance_id'", path=path, line=line)
        iid = str(item["instance_id"])
        if iid not in known:
            continue
        sqls = statements(item.get("pred_sqls", item.get("sol_sql")), "pred_sqls", path, line)
        out.append({"case_id": iid, "query": joined(sqls), "statements": sqls})
    return out


def joined(sqls: list[str]) -> str:
    """The items as one text: each ends where the official harness ends it (run alone), an
    item whose last line holds a `--` comment before a `;` on its own line (the comment
    would swallow it).

    >>> print(joined(["UPDATE t SET a = 0 -- reset;", "SELECT 1;"]))
    UPDATE t SET a = 0 -- reset
    ;
    SELECT 1
    """
    text = ""
    for item in (s.strip().rstrip(";").rstrip() for s in sqls):
        if text:
            text += "\n;\n" if "--" in text.rsplit("\n", 1)[-1] else ";\n"
        text += item
    return text


def postgres_seed(out: Path, dumps: Path, database: str) -> Path:
    """A .sql seed loading `<database>_template/*.sql` (or `<database>/*.sql`) with psql
    after the official template's extras, errors not stopping it (as the official image)."""
    folder = next(
        (f for f in (dumps / f"{database}_template", dumps / database) if any(f.glob("*.sql"))),
        None,
    )
    if folder is None:
        raise InputError(
            f"no dumps for database {database!r}: expected "
            f"{dumps / (database + '_template')}/<table>.sql",
            path=dumps,
        )
    seed = out / "databases" / f"{database}.sql"
    seed.parent.mkdir(parents=True, exist_ok=True)
    includes = "".join(f"\\i '{p.resolve()}'\n" for p in sorted(folder.glob("*.sql")))
    seed.write_text(TEMPLATE_SQL + includes, encoding="utf-8")
    return seed


def databases_for(
    request: ImportRequest, names: set[str], dialect: str, timeout_s: float
) -> dict[str, dict[str, Any]]:
    """The suite's databases: SQLite files or PostgreSQL fixtures, found under the sources."""
    found: dict[str, dict[str, Any]] = {}
    options = {"timeout_s": timeout_s, "max_rows": 10_000}
    for name in sorted(names):
        for source in request.sources:
            if not source.is_dir():
                continue
            if dialect == "sqlite":
                hits = [source / name / f"{name}.sqlite", source / f"{name}.sqlite"]
                hits += list(source.glob(f"*/{name}/{name}.sqlite"))
                path = next((p for p in hits if p.is_file()), None)
                if path is not None:
                    found[name] = {
                        "engine": "sqlite",
                        "path": str(path.resolve()),
                        "options": options,
                    }
                    break
            else:
                dumps = next(
                    (
                        d
                        for d in (source, source / "postgre_table_dumps")
                        if any((d / f"{name}_template").glob("*.sql"))
                        or any((d / name).glob("*.sql"))
                    ),
                    None,
                )
                if dumps is not None:
                    seed = postgres_seed(request.out, dumps, name)
                    found[name] = {
                        "engine": "postgres",
                        "fixture": str(seed.resolve()),
                        "options": options,
                    }
                    break
        if name not in found and not request.skip_missing:
            where = f"{name}/{name}.sqlite" if dialect == "sqlite" else f"{name}_template/"
            raise InputError(
                f"database {name!r} not found among the sources (expected "
                f"{where}; --skip-missing leaves its instances out)"
            )
    return found


def suite_scorers(helpers: str = "livesqlbench", *, legacy: bool = False) -> dict[str, Any]:
    """The official verdict: solved when every test passes, any exception a failed test;
    the test functions see `helpers` (the harness's own: see `task_tests`); `legacy`: the
    prediction's items run as the official harness runs them."""
    options: dict[str, Any] = {"python_exceptions": "fail", "python_timeout_s": 60,
                               "python_helpers": helpers}  # fmt: skip
    if legacy:
        options["legacy"] = True
    return {"scorers": [{"name": "task_tests", "required": True, "options": options}]}


def legacy_flag(value: str | None) -> bool:
    """The `legacy` import option: true or false (false when not given)."""
    text = (value or "false").strip().lower()
    if text in {"true", "yes", "1", "on", "false", "no", "0", "off"}:
        return text in {"true", "yes", "1", "on"}
    raise InputError(f"--set legacy={value}: expected true or false", where="--set")


def _dialect(request: ImportRequest, item: dict[str, Any]) -> str:
    given = (request.option("dialect") or str(item.get("dialect") or "")).lower()
    if not given:
        given = (
            "sqlite"
            if str(item.get("instance_id", "")).lower().startswith("sqlite")
            else ("postgresql")
        )
    if given in ("postgres", "postgresql"):
        return "postgresql"
    if given == "sqlite":
        return "sqlite"
    raise InputError(f"dialect {given!r}: only sqlite and postgresql instances run here")


def build(request: ImportRequest) -> ImportedSuite:
    """The suite of BIRD-CRITIC instances (see the module docstring)."""
    request.expect_options(*OPTIONS)
    files = [s for s in request.sources if s.is_file() and s.suffix == ".jsonl"]
    if not files:
        raise InputError("no task .jsonl file among the sources")
    timeout_s = request.number_option("timeout_s", 30.0)
    legacy = legacy_flag(request.option("legacy"))
    cases: list[dict[str, Any]] = []
    dialects: set[str] = set()
    skipped: dict[str, int] = {}
    for path in files:
        for line, item in read_jsonl(path):
            if not isinstance(item, dict) or not item.get("instance_id"):
                raise InputError("expected an object with 'instance_id'", path=path, line=line)
            try:
                dialect = _dialect(request, item)
            except InputError:
                skipped["dialect not run here"] = skipped.get("dialect not run here", 0) + 1
                continue
            if item.get("efficiency"):
                skipped["efficiency (query-plan comparison)"] = (
                    skipped.get("efficiency (query-plan comparison)", 0) + 1
                )
                continue
            dialects.add(dialect)
            database = str(item.get("db_id") or item.get("selected_database") or "")
            if not database:
                raise InputError("expected 'db_id'", path=path, line=line)
            issue = "\n".join(statements(item.get("issue_sql"), "issue_sql", path, line))
            question = str(item.get("query") or "")
            if issue:
                question += f"\n\nThe SQL that has the issue:\n{issue}"
            cases.append(
                task_case(
                    item,
                    path,
                    line,
                    database=database,
                    question=question,
                    default_test=False,
                    conditions=dialect == "sqlite",
                    untested_runs=legacy and dialect == "postgresql",
                )
            )
    if len(dialects) > 1:
        raise InputError(
            "the instances mix SQLite and PostgreSQL: import each dialect apart "
            "(--set dialect=sqlite or dialect=postgresql)"
        )
    if not cases:
        raise InputError("no instance to import")
    dialect = dialects.pop()
    names = {c["metadata"]["database"] for c in cases}
    databases = databases_for(request, names, dialect, timeout_s)
    absent = names - set(databases)
    if absent:
        cases = [c for c in cases if c["metadata"]["database"] not in absent]
    known = {c["id"] for c in cases}
    predictions = {n: read_predictions(p, known) for n, p in request.predictions}
    notes = [f"{n} instance(s) left out: {why}" for why, n in sorted(skipped.items())]
    if absent:
        notes.append(f"instances of absent databases left out: {', '.join(sorted(absent))}")
    return ImportedSuite(
        name=request.name or f"bird-critic-{dialect}",
        cases=cases,
        databases=databases,
        predictions=predictions,
        suite=suite_scorers(
            "livesqlbench" if dialect == "sqlite" else "bird_critic_postgresql", legacy=legacy
        ),
        notes=notes,
    )
