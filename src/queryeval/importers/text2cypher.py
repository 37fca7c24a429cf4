"""Neo4j Text2Cypher as a suite of Cypher cases, from the files as published: the Hugging
Face datasets ``neo4j/text2cypher-2024v1`` / ``-2025v1`` (``data/train-*.parquet``,
``data/test-*.parquet``) and the neo4j-labs/text2cypher repository's CSVs
(``datasets/synthetic_*_demodbs/text2cypher_<model>.csv`` with its
``text2cypher_schemas.csv``), or files in either row format (``.jsonl``, ``.json``, ``.csv``).

Rows: ``question``, ``cypher`` (the gold query), and where present ``schema`` (the graph
schema as text, given to the system under test), ``data_source``, ``instance_id``,
``database_reference_alias`` (the demo database, ``neo4jlabs_demo_db_movies``) or
``database`` (the repository's ``movies``), ``type`` (the question type), and the
repository's checks of the cypher (``syntax_error``, ``timeout``, ``returns_results``,
``false_schema``, ``no_cypher``). Every column is kept: the columns beyond the question, the
gold and the schema in ``metadata.text2cypher``; tags ``type:<type>``, ``db:<database>``,
``gold:syntax_error`` / ``gold:timeout`` / ``gold:no_results`` / ``gold:false_schema`` /
``gold:no_cypher`` where the file marks the gold so, and (as before) the data source and the
alias. A schemas file (``database, schema`` rows, no question) gives the rows of its
databases their schema text. A row may carry a model's answer (``prediction``,
``predicted_cypher``, ``generated_cypher``): those make a system per file. ``--predictions
NAME=FILE`` adds a model's file: records naming the case (``case_id``, ``instance_id``,
``id``), or, as the repository's files are, rows with the same question and database (a
second model's CSV for the same questions), its answer in ``cypher``.

Written: ``suite.yaml`` with a verdict (preset ``text2cypher_translation``: exact match of
the query text, whitespace runs as one space, BLEU the mean, ROUGE-L, Jaro-Winkler and
Jaccard shown; with ``neo4j_url`` preset ``text2cypher_execution``: execution match, each
database of the rows a Neo4j database on that server, user and password its name as on
Neo4j's demo server), ``cases.jsonl`` and ``predictions/*.jsonl``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.importers._pairing import Keyed, Pairing, add_paired_predictions
from queryeval.importers._records import (
    SuiteWithFiles,
    import_with,
    read_rows,
    slug,
    text_field,
    unique,
)
from queryeval.importers._suite import ImportedSuite, ImportRequest

PREDICTION_FIELDS = ("prediction", "predicted_cypher", "generated_cypher", "pred")
DEMO_PREFIX = "neo4jlabs_demo_db_"
# the columns a case is made of; every other column goes to metadata.text2cypher
_OWN = {"question", "cypher", "schema", "data_source", "instance_id",
        "database_reference_alias", *PREDICTION_FIELDS}  # fmt: skip
# the repository's checks of the gold cypher: (column, value meaning trouble, tag)
_GOLD_FLAGS = (
    ("syntax_error", True, "gold:syntax_error"),
    ("timeout", True, "gold:timeout"),
    ("returns_results", False, "gold:no_results"),
    ("false_schema", True, "gold:false_schema"),
    ("no_cypher", True, "gold:no_cypher"),
)
GOLD_NOTE = "no predictions in the rows: the system 'gold' answers with the gold queries"
TRANSLATION_PRESET = "text2cypher_translation"
EXECUTION_PRESET = "text2cypher_execution"


def import_text2cypher(
    sources: Sequence[str | Path],
    out: str | Path,
    *,
    neo4j_url: str | None = None,
    overwrite: bool = False,
) -> ImportedSuite:
    """Write a suite directory at `out` from Text2Cypher rows (see the module text), as
    `queryeval import text2cypher SRC... --out DIR` does; returns the suite written.

    >>> suite = import_text2cypher(["data/test-00000-of-00001.parquet"], "t2c")  # doctest: +SKIP
    """
    options = {"neo4j_url": neo4j_url} if neo4j_url is not None else {}
    return import_with(build, sources, out, options, overwrite)


SUMMARY = (
    "Neo4j Text2Cypher: neo4j/text2cypher-2024v1/-2025v1 rows (Parquet, JSONL, CSV) and "
    "neo4j-labs/text2cypher's CSVs"
)
OPTIONS = {
    "neo4j_url": "a Neo4j server holding the databases: execution match (preset "
    "text2cypher_execution) instead of the translation preset"
}
SCORERS = ("exact_match", "bleu", "execution_match", "executes")


def build(request: ImportRequest) -> SuiteWithFiles:
    """`queryeval import text2cypher ROWS... --out DIR [--set neo4j_url=URL] [--predictions
    NAME=FILE]`: the suite of `collect`. A predictions file holds records naming the case
    (`case_id`, `instance_id`, `id`), or rows asking a case's question on its database, and
    the Cypher (`prediction`, `predicted_cypher`, `cypher`, `query`)."""
    request.expect_options(*OPTIONS)
    built = collect(list(request.sources), neo4j_url=request.options.get("neo4j_url"))
    add_paired_predictions(built, request, _keyed(built.cases), PAIRING, "cypher")
    if request.predictions and GOLD_NOTE in built.notes:
        built.notes.remove(GOLD_NOTE)
    if request.name:
        built.name = request.name
    return built


def graph_name(database: str) -> str:
    """The demo server's name of a database: an alias without its prefix.

    >>> graph_name("neo4jlabs_demo_db_movies"), graph_name("movies")
    ('movies', 'movies')
    """
    return database.removeprefix(DEMO_PREFIX)


PAIRING = Pairing(
    question_fields=("question",),
    query_fields=(*PREDICTION_FIELDS, "cypher"),
    database_fields=("database", "database_reference_alias"),
    tie_fields=("type",),
    database_name=graph_name,
)


def _keyed(cases: Sequence[dict[str, Any]]) -> list[Keyed]:
    keyed = []
    for c in cases:
        meta = c["metadata"]
        extra = meta.get("text2cypher", {})
        database = extra.get("database") or meta.get("database_reference_alias")
        kind = extra.get("type")
        keyed.append(
            Keyed(
                c["id"],
                c["conversation"][0]["content"],
                database and str(database),
                {"type": str(kind)} if kind not in (None, "") else {},
            )
        )
    return keyed


def collect(paths: Sequence[Path], *, neo4j_url: str | None = None) -> SuiteWithFiles:
    """The suite made of Text2Cypher rows (see the module text), not yet written."""
    if not paths:
        raise InputError("no Text2Cypher rows file among the sources")
    cases: list[dict[str, Any]] = []
    predictions: dict[str, list[dict[str, Any]]] = {}
    databases: dict[str, None] = {}  # the suite's database names, in order of appearance
    schemas: dict[str, str] = {}
    flagged: dict[str, int] = {}
    ids: set[str] = set()
    for path in paths:
        if not path.is_file():
            raise InputError("no such file", path=path)
        for line, row in read_rows(path):
            if _schema_row(row):
                schemas[graph_name(str(row["database"]))] = str(row["schema"])
                continue
            case, predicted, database = _case(row, path, line, ids, neo4j_url is not None)
            cases.append(case)
            for tag in case["tags"]:
                if tag.startswith("gold:"):
                    flagged[tag] = flagged.get(tag, 0) + 1
            if database:
                databases[database] = None
            if predicted is not None:
                predictions.setdefault(slug(path.stem), []).append(
                    {"case_id": case["id"], "query": predicted, "language": "cypher"}
                )
    if not cases:
        raise InputError("no rows in the sources", path=paths[0])
    notes = _attach_schemas(cases, schemas)
    if not predictions:
        predictions["gold"] = [
            {
                "case_id": c["id"],
                "query": c["conversation"][0]["target"]["query"]["text"],
                "language": "cypher",
            }
            for c in cases
        ]
        notes.append(GOLD_NOTE)
    for tag, n in flagged.items():
        notes.append(f"{n} row(s) whose gold the file marks {tag[5:]}: tagged {tag}")
    if databases and neo4j_url is None:
        notes.append(
            f"{len(databases)} database(s) kept as tags; the verdict is exact match of the "
            "query text (give neo4j_url to run the queries: execution match)"
        )
    suite_dbs, suite = _suite(list(databases), neo4j_url)
    if neo4j_url is not None:
        without = sum(1 for c in cases if "database" not in c["conversation"][0]["target"]["query"])
        if without:
            notes.append(f"{without} row(s) name no database: they cannot be executed")
    return SuiteWithFiles(
        name="text2cypher",
        cases=cases,
        databases=suite_dbs,
        predictions=predictions,
        preset=EXECUTION_PRESET if suite_dbs else TRANSLATION_PRESET,
        suite=suite,
        notes=notes,
        header=_HEADER_EXECUTION if suite_dbs else _HEADER,
    )


_HEADER = """Neo4j Text2Cypher, imported by `queryeval import text2cypher`.
Verdict: exact match of the query text (whitespace runs count as one space), as in Neo4j's
translation-based evaluation; BLEU is the mean, ROUGE-L, Jaro-Winkler and Jaccard are shown.
With a Neo4j server (--set neo4j_url=URL) the verdict is execution match."""

_HEADER_EXECUTION = """Neo4j Text2Cypher, imported by `queryeval import text2cypher`.
Verdict: execution match on the Neo4j databases below (Neo4j's execution-based evaluation);
the query-text metrics (exact match, BLEU, ROUGE-L, Jaro-Winkler, Jaccard) are shown."""


def _schema_row(row: Any) -> bool:
    """A row of a schemas file (text2cypher_schemas.csv: database, schema; no question)."""
    return (
        isinstance(row, Mapping)
        and "question" not in row
        and isinstance(row.get("database"), str)
        and isinstance(row.get("schema"), str)
    )


def _attach_schemas(cases: list[dict[str, Any]], schemas: dict[str, str]) -> list[str]:
    """Give each case without a schema its database's schema text; notes on what was left."""
    if not schemas:
        return []
    missing: set[str] = set()
    for case in cases:
        meta = case["metadata"]
        database = meta.get("text2cypher", {}).get("database") or meta.get(
            "database_reference_alias"
        )
        if meta.get("schema") or not database:
            continue
        text = schemas.get(graph_name(str(database)))
        if text is None:
            missing.add(str(database))
        else:
            meta["schema"] = text
    if missing:
        return [f"no schema text for database(s) {', '.join(sorted(missing))}"]
    return []


def _truthy(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    return None


def _gold_tags(row: Mapping[str, Any]) -> list[str]:
    tags = []
    for column, trouble, tag in _GOLD_FLAGS:
        value = row.get(column)
        if value in (None, ""):
            continue
        flag = _truthy(value)
        if column == "false_schema" and flag is None:  # the names the schema lacks
            flag = True
        if flag is trouble:
            tags.append(tag)
    return tags


def _case(
    row: Any, path: Path, line: int, ids: set[str], with_database: bool
) -> tuple[dict[str, Any], str | None, str | None]:
    """(case, the row's own prediction, the suite database it runs on)."""
    if not isinstance(row, Mapping):
        raise InputError("expected a row object", path=path, line=line)
    question = text_field(row, ("question",), path, line)
    cypher = text_field(row, ("cypher",), path, line)
    if question is None or cypher is None:
        missing = "question" if question is None else "cypher"
        raise InputError(
            f"no {missing} (a Text2Cypher row has question, schema, cypher)",
            path=path,
            line=line,
            where=missing,
        )
    schema = text_field(row, ("schema",), path, line)
    source = text_field(row, ("data_source",), path, line)
    alias = text_field(row, ("database_reference_alias",), path, line)
    named = row.get("database")
    plain = str(named).strip() if named not in (None, "") else None
    kind = row.get("type")
    raw_id = row.get("instance_id")
    case_id = unique(str(raw_id) if raw_id not in (None, "") else f"{path.stem}-{line}", ids)
    database = alias or plain
    query: dict[str, Any] = {"language": "cypher", "text": cypher}
    if database and with_database:
        query["database"] = database
    metadata: dict[str, Any] = {"source": f"{path.name}:{line}"}
    if schema is not None:
        metadata["schema"] = schema
    if source is not None:
        metadata["data_source"] = source
    if alias is not None:
        metadata["database_reference_alias"] = alias
    others = {str(k): v for k, v in row.items() if k not in _OWN}
    if others:  # every column is kept: type, database, the file's checks of the gold
        metadata["text2cypher"] = others
    tags = [t for t in (source, alias) if t]
    if kind not in (None, ""):
        tags.append(f"type:{str(kind).strip()}")
    if database:
        tags.append(f"db:{graph_name(database)}")
    tags += _gold_tags(row)
    case = {
        "id": case_id,
        "tags": tags,
        "metadata": metadata,
        "conversation": [{"role": "user", "content": question, "target": {"query": query}}],
    }
    return case, text_field(row, PREDICTION_FIELDS, path, line), database


def _suite(
    databases: list[str], neo4j_url: str | None
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """(databases, further suite keys): the scorers come from the preset."""
    suite: dict[str, Any] = {
        "description": "Neo4j Text2Cypher: questions to Cypher, scored against the gold query.",
    }
    out: dict[str, dict[str, Any]] = {}
    if neo4j_url is not None and databases:
        for database in databases:
            name = graph_name(database)
            out[database] = {
                "engine": "neo4j",
                "url": neo4j_url,
                "options": {"database": name, "user": name, "password": name, "timeout_s": 10.0},
            }
        suite["comparison"] = {"columns": "permutation"}
    return out, suite
