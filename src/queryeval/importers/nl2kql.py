"""NL2KQL (natural language to Kusto): question/KQL pairs in JSONL and the database schema in
JSON, as a suite whose queries run on the embedded duckdb-kql engine over *empty* tables built
from the schema (the benchmark ships no data: a query that runs there is valid against the
schema, and its result columns can be compared).

Sources (any order), the NL2KQL repository's own files as published among them
(``data/evaluation_datasets/Defender_Evaluation.jsonl`` with ``{"context", "baseline",
"Data source"}`` records, ``data/schema/Defender_Schema.json``):

- cases: ``.jsonl`` / ``.csv`` files (or a ``.json`` list), one pair per record. The question
  is the first of ``nlq``, ``question``, ``nl_query``, ``natural_language``, ``prompt``,
  ``context``; the gold KQL the first of ``kql``, ``gold_kql``, ``kql_query``, ``gold``,
  ``query``, ``target``, ``baseline``; optional ``id``, ``database`` (``db``, ``db_id``), a
  difficulty (``difficulty``, ``level``, ``category``, ``complexity``: a tag), and a model's
  answer (``prediction``, ``predicted_kql``, ``generated_kql``, ``pred``: a system). Every
  other column is kept in ``metadata.nl2kql``; a data source (``Data source``) is also a tag
  ``source:<value>``. A file whose records name no database, among several schemas, goes
  with the schema file of the same first word (``Defender_Evaluation.jsonl`` with
  ``Defender_Schema.json``).
- schemas: ``.json`` files in one of these forms (several files, several databases):
  NL2KQL's ``[{"Database", "Tables": [{"Table", "Columns": [{"Name", "Type"}]}]}]``;
  Kusto's ``.show database schema as json`` (``{"Databases": {name: {"Tables": {...
  "OrderedColumns": [{"Name", "CslType"}]}}}}``); ``{"tables": [{"name", "columns": [{"name",
  "type"}] | {column: type}}]}`` or that list alone; ``{table: {column: type}}``; or
  ``{"1": {"name", "columns": [names]}}`` (no types: the columns are created as ``string``,
  and the report says so).
- predictions (``--predictions NAME=FILE``): records naming the case (``case_id``, ``id``),
  or records with the question (and the database, where several) paired with the case that
  asks it.

Written: ``suite.yaml`` (scorers ``executes``, required, and ``execution_match``, shown),
``cases.jsonl``, ``databases/<name>/`` fixture folders (``schema.sql`` + an empty
``<table>.csv`` per table) and ``predictions/*.jsonl``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.importers._pairing import Keyed, Pairing, add_paired_predictions
from queryeval.importers._read import read_json
from queryeval.importers._records import (
    SuiteWithFiles,
    import_with,
    read_rows,
    slug,
    text_field,
    unique,
)
from queryeval.importers._suite import ImportedSuite, ImportRequest

QUESTION_FIELDS = ("nlq", "question", "nl_query", "natural_language", "prompt", "context")
KQL_FIELDS = ("kql", "gold_kql", "kql_query", "gold", "query", "target", "baseline")
PREDICTION_FIELDS = ("prediction", "predicted_kql", "generated_kql", "pred")
ID_FIELDS = ("id", "qid", "instance_id", "index")
DATABASE_FIELDS = ("database", "db", "db_id")
LEVEL_FIELDS = ("difficulty", "level", "category", "complexity")
SOURCE_FIELDS = ("Data source", "data_source", "source")
TABLE_NAMES = ("name", "Name", "table_name", "TableName", "Table")
DEFAULT_NOW = "2024-01-01T00:00:00Z"
GOLD_NOTE = (
    "no predictions in the cases: the system 'gold' answers with the gold queries (a check "
    "that every gold runs on the tables)"
)

# Kusto scalar types (and their .NET names) as DuckDB column types; the inverse of what
# duckdb-kql reports (duckdb_kql.types.DUCKDB_TO_KQL).
KQL_TYPES: dict[str, str] = {
    "bool": "BOOLEAN",
    "boolean": "BOOLEAN",
    "int": "INTEGER",
    "long": "BIGINT",
    "real": "DOUBLE",
    "double": "DOUBLE",
    "decimal": "DECIMAL(38, 18)",
    "string": "VARCHAR",
    "datetime": "TIMESTAMP",
    "date": "TIMESTAMP",
    "timespan": "INTERVAL",
    "time": "INTERVAL",
    "guid": "UUID",
    "uniqueid": "UUID",
    "dynamic": "JSON",
    "system.sbyte": "BOOLEAN",
    "system.boolean": "BOOLEAN",
    "system.int32": "INTEGER",
    "system.int64": "BIGINT",
    "system.double": "DOUBLE",
    "system.single": "DOUBLE",
    "system.data.sqltypes.sqldecimal": "DECIMAL(38, 18)",
    "system.decimal": "DECIMAL(38, 18)",
    "system.string": "VARCHAR",
    "system.datetime": "TIMESTAMP",
    "system.timespan": "INTERVAL",
    "system.guid": "UUID",
    "system.object": "JSON",
}

Tables = dict[str, list[tuple[str, str]]]  # table -> [(column, DuckDB type)]


def import_nl2kql(
    sources: Sequence[str | Path],
    out: str | Path,
    *,
    now: str = DEFAULT_NOW,
    overwrite: bool = False,
) -> ImportedSuite:
    """Write a suite directory at `out` from NL2KQL pairs and schemas (see the module text),
    as `queryeval import nl2kql SRC... --out DIR` does; `now` pins the engine's clock
    (``ago()``) so runs are repeatable. Returns the suite written.

    >>> suite = import_nl2kql(["eval.jsonl", "schema.json"], "nl2kql")  # doctest: +SKIP
    """
    return import_with(build, sources, out, {"now": now}, overwrite)


SUMMARY = "NL2KQL: question/KQL pairs (JSONL, CSV) and a schema JSON (empty duckdb-kql tables)"
OPTIONS = {"now": "the time KQL's now() and ago() read, ISO 8601"}
SCORERS = ("executes", "execution_match")


def build(request: ImportRequest) -> SuiteWithFiles:
    """`queryeval import nl2kql PAIRS SCHEMA... --out DIR [--set now=ISO] [--predictions
    NAME=FILE]`: the suite of `collect` with its fixture folders written under the output
    folder. A predictions file holds records naming the case (`case_id`, `id`), or asking
    its question (on its `database`), and the KQL (`prediction`, `predicted_kql`, `kql`,
    `query`)."""
    request.expect_options(*OPTIONS)
    built = collect(list(request.sources), now=request.options.get("now", DEFAULT_NOW))
    add_paired_predictions(built, request, _keyed(built.cases), _PAIRING, "kql")
    if request.predictions and GOLD_NOTE in built.notes:
        built.notes.remove(GOLD_NOTE)
    built.write_files(request.out)
    if request.name:
        built.name = request.name
    return built


_PAIRING = Pairing(
    question_fields=QUESTION_FIELDS,
    query_fields=(*PREDICTION_FIELDS, "kql", "query"),
    database_fields=DATABASE_FIELDS,
)


def _keyed(cases: Sequence[dict[str, Any]]) -> list[Keyed]:
    return [
        Keyed(c["id"], c["conversation"][0]["content"], c["metadata"]["database"]) for c in cases
    ]


def collect(paths: Sequence[Path], *, now: str = DEFAULT_NOW) -> SuiteWithFiles:
    """The suite made of NL2KQL's files (see the module text), not yet written."""
    case_files, schema_files = _classify(list(paths))
    if not schema_files:
        raise InputError(
            "no schema file among the sources (a .json schema is needed to build the tables)"
        )
    if not case_files:
        raise InputError("no cases file among the sources (.jsonl, .csv or a .json list)")
    notes: list[str] = []
    databases: dict[str, Tables] = {}
    origins: dict[str, Path] = {}
    for path, data in schema_files:
        for name, tables in _schemas(path, data, notes).items():
            if name in databases:
                raise InputError(f"database {name!r} is described twice", path=path)
            origins[name] = path
            for table in tables:
                if not _SAFE_TABLE.match(table):
                    raise InputError(
                        f"table name {table!r} cannot name a fixture file (letters, digits, "
                        "_ . - and spaces)",
                        path=path,
                        where=table,
                    )
            databases[name] = tables
    cases, predictions = _cases(case_files, databases, origins)
    if not predictions:
        predictions["gold"] = [
            {
                "case_id": c["id"],
                "query": c["conversation"][0]["target"]["query"]["text"],
                "language": "kql",
            }
            for c in cases
        ]
        notes.append(GOLD_NOTE)
    files: dict[str, str] = {}
    for name, tables in databases.items():
        files.update(_fixture(f"databases/{slug(name)}", tables))
    return SuiteWithFiles(
        name="nl2kql",
        cases=cases,
        databases={
            name: {
                "engine": "kql",
                "fixture": f"databases/{slug(name)}",
                "options": {"now": now, "timeout_s": 5.0},
            }
            for name in databases
        },
        predictions=predictions,
        suite=_SUITE,
        files=files,
        notes=notes,
        header=_HEADER,
    )


_HEADER = """NL2KQL, imported by `queryeval import nl2kql`.
The tables are empty (built from the schema): `executes` says whether a query is valid KQL
on this schema; `execution_match` compares result columns (every result has no rows)."""


_SUITE: dict[str, Any] = {
    "description": "NL2KQL: questions to KQL, run by duckdb-kql on empty tables built "
    "from the schema.",
    "comparison": {"columns": "permutation"},
    "scorers": [
        {"name": "executes", "required": True},
        {"name": "execution_match", "weight": 0},
    ],
}


# --- sources ------------------------------------------------------------------------------


def _classify(paths: list[Path]) -> tuple[list[Path], list[tuple[Path, Any]]]:
    cases: list[Path] = []
    schemas: list[tuple[Path, Any]] = []
    for p in paths:
        if not p.is_file():
            raise InputError("no such file", path=p)
        if p.suffix.lower() in (".jsonl", ".ndjson", ".csv"):
            cases.append(p)
        elif p.suffix.lower() == ".json":
            data = read_json(p)
            if (
                isinstance(data, list)
                and data
                and isinstance(data[0], Mapping)
                and any(k in data[0] for k in QUESTION_FIELDS)
            ):
                cases.append(p)
            else:
                schemas.append((p, data))
        else:
            raise InputError("expected .jsonl / .csv cases or a .json schema", path=p)
    return cases, schemas


def _schemas(path: Path, data: Any, notes: list[str]) -> dict[str, Tables]:
    """{database: tables} from one schema file (one database named after the file unless the
    file names its databases)."""
    if _nl2kql_form(data):  # NL2KQL's own: [{"Database", "Tables": [{"Table", "Columns"}]}]
        named: dict[str, Tables] = {}
        for i, db in enumerate(data):
            name = _name(db, ("Database", "DatabaseName", "Name", "name")) or path.stem
            if name in named:
                raise InputError(f"database {name!r} is described twice", path=path,
                                 where=f"[{i}].Database")  # fmt: skip
            named[name] = _tables(db["Tables"], path, notes, f"[{i}].Tables")
        return named
    if isinstance(data, Mapping) and isinstance(data.get("Databases"), Mapping):
        out: dict[str, Tables] = {}
        for db_name, db in data["Databases"].items():
            where = f"Databases.{db_name}"
            if not isinstance(db, Mapping) or not isinstance(db.get("Tables"), Mapping):
                raise InputError("expected {Tables: {...}}", path=path, where=where)
            out[str(db.get("Name") or db_name)] = _kusto_tables(db["Tables"], path, where)
        return out
    return {path.stem: _tables(data, path, notes)}


def _nl2kql_form(data: Any) -> bool:
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(d, Mapping) and isinstance(d.get("Tables"), list) for d in data)
    )


def _kusto_tables(tables: Mapping[str, Any], path: Path, where: str) -> Tables:
    out: Tables = {}
    for t_name, table in tables.items():
        w = f"{where}.Tables.{t_name}"
        columns = table.get("OrderedColumns") if isinstance(table, Mapping) else None
        if not isinstance(columns, list):
            raise InputError("expected OrderedColumns: [...]", path=path, where=w)
        out[str(table.get("Name") or t_name)] = [
            _column(c, path, f"{w}.OrderedColumns[{i}]") for i, c in enumerate(columns)
        ]
    return out


def _tables(data: Any, path: Path, notes: list[str], at: str = "") -> Tables:
    if isinstance(data, Mapping) and isinstance(data.get("tables"), list | Mapping):
        data = data["tables"]
    items: list[tuple[str, Any, str]] = []
    if isinstance(data, list):
        for i, t in enumerate(data):
            name = _name(t, TABLE_NAMES)
            if name is None:
                raise InputError("expected a table with a name", path=path, where=f"{at}[{i}]")
            items.append((name, t, f"{at}[{i}]"))
    elif isinstance(data, Mapping):
        for key, t in data.items():
            name = _name(t, TABLE_NAMES) or str(key)
            items.append((name, t, f"{at}.{key}" if at else str(key)))
    else:
        raise InputError("expected a schema: a list of tables or a mapping", path=path)
    out: Tables = {}
    untyped = 0
    for name, t, where in items:
        columns: Any = t
        if isinstance(t, Mapping) and any(k in t for k in ("columns", "Columns", "OrderedColumns")):
            columns = next(t[k] for k in ("columns", "Columns", "OrderedColumns") if k in t)
        cols: list[tuple[str, str]] = []
        if isinstance(columns, Mapping):
            cols = [(str(c), _duck_type(v, path, f"{where}.{c}")) for c, v in columns.items()]
        elif isinstance(columns, list):
            for i, c in enumerate(columns):
                if isinstance(c, str):
                    cols.append((c, "VARCHAR"))
                    untyped += 1
                else:
                    cols.append(_column(c, path, f"{where}.columns[{i}]"))
        else:
            raise InputError("expected the table's columns", path=path, where=where)
        if not cols:
            raise InputError("a table needs at least one column", path=path, where=where)
        if name in out:
            raise InputError(f"table {name!r} is described twice", path=path, where=where)
        out[name] = cols
    if untyped:
        notes.append(f"{path.name}: {untyped} column(s) without a type were created as string")
    return out


def _name(item: Any, keys: tuple[str, ...]) -> str | None:
    if isinstance(item, Mapping):
        for k in keys:
            if isinstance(item.get(k), str) and item[k]:
                return str(item[k])
    return None


def _column(c: Any, path: Path, where: str) -> tuple[str, str]:
    name = _name(c, ("name", "Name", "column_name", "ColumnName"))
    if name is None:
        raise InputError("expected a column with a name", path=path, where=where)
    raw = next((c[k] for k in ("CslType", "type", "Type", "data_type", "DataType") if k in c), None)
    return name, _duck_type(raw, path, f"{where}.type")


def _duck_type(raw: Any, path: Path, where: str) -> str:
    if not isinstance(raw, str) or raw.strip().lower() not in KQL_TYPES:
        known = ", ".join(sorted(k for k in KQL_TYPES if "." not in k))
        raise InputError(
            f"unknown column type {raw!r}; expected a Kusto type ({known})", path=path, where=where
        )
    return KQL_TYPES[raw.strip().lower()]


def _first_word(path: Path) -> str:
    return re.split(r"[_\-. ]+", path.stem.strip().lower(), maxsplit=1)[0]


def _file_database(
    path: Path, databases: dict[str, Tables], origins: dict[str, Path]
) -> str | None:
    """The database of a cases file whose records name none: the only one, else the one
    whose schema file starts with the same word (Defender_Evaluation / Defender_Schema)."""
    if len(databases) == 1:
        return next(iter(databases))
    word = _first_word(path)
    same = [name for name, origin in origins.items() if _first_word(origin) == word]
    return same[0] if len(same) == 1 else None


_USED = {*QUESTION_FIELDS, *KQL_FIELDS, *PREDICTION_FIELDS, *ID_FIELDS, *DATABASE_FIELDS,
         *LEVEL_FIELDS}  # fmt: skip


def _cases(
    files: list[Path], databases: dict[str, Tables], origins: dict[str, Path]
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    cases: list[dict[str, Any]] = []
    predictions: dict[str, list[dict[str, Any]]] = {}
    ids: set[str] = set()
    for path in files:
        system = slug(path.stem)
        only = _file_database(path, databases, origins)
        for line, rec in read_rows(path):
            if not isinstance(rec, Mapping):
                raise InputError("expected an object", path=path, line=line)
            question = text_field(rec, QUESTION_FIELDS, path, line)
            kql = text_field(rec, KQL_FIELDS, path, line)
            if question is None or kql is None:
                missing = "question" if question is None else "KQL"
                fields = QUESTION_FIELDS if question is None else KQL_FIELDS
                raise InputError(
                    f"no {missing} (expected one of {', '.join(fields)})", path=path, line=line
                )
            database = text_field(rec, DATABASE_FIELDS, path, line) or only
            if database is None:
                raise InputError(
                    "the record names no database and the schemas describe "
                    f"several ({', '.join(databases)}); name it in a 'database' field, or "
                    "name the cases file after its schema file (Defender_Evaluation.jsonl "
                    "with Defender_Schema.json)",
                    path=path,
                    line=line,
                )
            if database not in databases:
                raise InputError(
                    f"unknown database {database!r} (the schemas describe {', '.join(databases)})",
                    path=path,
                    line=line,
                )
            raw_id = next((rec[k] for k in ID_FIELDS if rec.get(k) not in (None, "")), None)
            case_id = unique(str(raw_id) if raw_id is not None else f"{path.stem}-{line}", ids)
            level = text_field(rec, LEVEL_FIELDS, path, line)
            tags = [level.strip().lower()] if level else []
            source = next(
                (str(rec[k]) for k in SOURCE_FIELDS if rec.get(k) not in (None, "")), None
            )
            if source is not None:
                tags.append(f"source:{source.strip()}")
            if len(databases) > 1:
                tags.append(f"db:{database}")
            metadata: dict[str, Any] = {"database": database, "source": f"{path.name}:{line}"}
            others = {str(k): v for k, v in rec.items() if k not in _USED}
            if others:  # every column is kept (the data source, anything a file adds)
                metadata["nl2kql"] = others
            cases.append(
                {
                    "id": case_id,
                    "tags": tags,
                    "metadata": metadata,
                    "conversation": [
                        {
                            "role": "user",
                            "content": question,
                            "target": {
                                "query": {"language": "kql", "text": kql, "database": database}
                            },
                        }
                    ],
                }
            )
            predicted = text_field(rec, PREDICTION_FIELDS, path, line)
            if predicted is not None:
                predictions.setdefault(system, []).append(
                    {"case_id": case_id, "query": predicted, "language": "kql"}
                )
    return cases, predictions


def _fixture(folder: str, tables: Tables) -> dict[str, str]:
    """The fixture folder's files: schema.sql and a header-only CSV per table."""
    ddl = ["-- Empty tables built from the NL2KQL schema by `queryeval import nl2kql`."]
    files: dict[str, str] = {}
    for table, columns in tables.items():
        cols = ", ".join(f"{_quote(c)} {t}" for c, t in columns)
        ddl.append(f"CREATE TABLE {_quote(table)} ({cols});")
        files[f"{folder}/{table}.csv"] = ",".join(_csv_cell(c) for c, _ in columns) + "\n"
    files[f"{folder}/schema.sql"] = "\n".join(ddl) + "\n"
    return files


_SAFE_TABLE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_. -]*$")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _csv_cell(name: str) -> str:
    return '"' + name.replace('"', '""') + '"' if any(ch in name for ch in ',"\n') else name
