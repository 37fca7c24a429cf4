"""Neo4j Text2Cypher (the Hugging Face dataset ``neo4j/text2cypher-2024v1`` and files in its
row format) as a suite of Cypher cases.

Sources: ``.parquet`` (the dataset's ``data/train-*.parquet`` / ``data/test-*.parquet``),
``.jsonl``, ``.json`` or ``.csv`` files of rows with ``question``, ``schema`` (the graph
schema as text, given to the system under test), ``cypher`` (the gold query), and where
present ``data_source``, ``instance_id`` and ``database_reference_alias`` (the demo database
the query runs on, e.g. ``neo4jlabs_demo_db_stackoverflow``). A row may carry a model's answer
(``prediction``, ``predicted_cypher``, ``generated_cypher``): those make a system per file.

Written: ``suite.yaml``, ``cases.jsonl`` (``metadata.schema`` holds the schema text, tags
the data source and the database alias) and ``predictions/*.jsonl``. Scored by text metrics
against the gold query (BLEU; exact match, ROUGE-L, Jaro-Winkler and Jaccard shown beside
it). With `neo4j_url`, each database alias becomes a Neo4j database of the
suite (on that server, user and password the alias' database name, as on Neo4j's demo
server) and `execution_match` is added for the rows that name one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.importers._records import (
    SuiteWithFiles,
    add_predictions,
    import_with,
    read_rows,
    slug,
    text_field,
    unique,
)
from queryeval.importers._suite import ImportedSuite, ImportRequest

PREDICTION_FIELDS = ("prediction", "predicted_cypher", "generated_cypher", "pred")
DEMO_PREFIX = "neo4jlabs_demo_db_"


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


SUMMARY = "Neo4j Text2Cypher: rows of neo4j/text2cypher-2024v1 (Parquet, JSONL, CSV)"


def build(request: ImportRequest) -> SuiteWithFiles:
    """`queryeval import text2cypher ROWS... --out DIR [--set neo4j_url=URL] [--predictions
    NAME=FILE]`: the suite of `collect`. A predictions file holds records naming the case
    (`case_id`, `instance_id`, `id`) and the Cypher (`prediction`, `predicted_cypher`,
    `cypher`, `query`)."""
    request.expect_options("neo4j_url")
    built = collect(list(request.sources), neo4j_url=request.options.get("neo4j_url"))
    add_predictions(built, request, (*PREDICTION_FIELDS, "cypher", "query"), "cypher")
    if request.name:
        built.name = request.name
    return built


def collect(paths: Sequence[Path], *, neo4j_url: str | None = None) -> SuiteWithFiles:
    """The suite made of Text2Cypher rows (see the module text), not yet written."""
    if not paths:
        raise InputError("no Text2Cypher rows file among the sources")
    cases: list[dict[str, Any]] = []
    predictions: dict[str, list[dict[str, Any]]] = {}
    aliases: dict[str, None] = {}
    ids: set[str] = set()
    for path in paths:
        if not path.is_file():
            raise InputError("no such file", path=path)
        for line, row in read_rows(path):
            case, predicted, alias = _case(row, path, line, ids, neo4j_url is not None)
            cases.append(case)
            if alias:
                aliases[alias] = None
            if predicted is not None:
                predictions.setdefault(slug(path.stem), []).append(
                    {"case_id": case["id"], "query": predicted, "language": "cypher"}
                )
    if not cases:
        raise InputError("no rows in the sources", path=paths[0])
    notes: list[str] = []
    if not predictions:
        predictions["gold"] = [
            {
                "case_id": c["id"],
                "query": c["conversation"][0]["target"]["query"]["text"],
                "language": "cypher",
            }
            for c in cases
        ]
        notes.append("no predictions in the rows: the system 'gold' answers with the gold queries")
    if aliases and neo4j_url is None:
        notes.append(
            f"{len(aliases)} database alias(es) kept as tags; give neo4j_url to run "
            "the queries (execution_match)"
        )
    databases, suite = _suite(list(aliases), neo4j_url)
    return SuiteWithFiles(
        name="text2cypher",
        cases=cases,
        databases=databases,
        predictions=predictions,
        suite=suite,
        notes=notes,
        header=_HEADER,
    )


_HEADER = """Neo4j Text2Cypher, imported by `queryeval import text2cypher`.
Text metrics against the gold Cypher; with a Neo4j server, execution match as well."""


def _case(
    row: Any, path: Path, line: int, ids: set[str], with_database: bool
) -> tuple[dict[str, Any], str | None, str | None]:
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
    raw_id = row.get("instance_id")
    case_id = unique(str(raw_id) if raw_id not in (None, "") else f"{path.stem}-{line}", ids)
    query: dict[str, Any] = {"language": "cypher", "text": cypher}
    if alias and with_database:
        query["database"] = alias
    metadata: dict[str, Any] = {"source": f"{path.name}:{line}"}
    if schema is not None:
        metadata["schema"] = schema
    if source is not None:
        metadata["data_source"] = source
    if alias is not None:
        metadata["database_reference_alias"] = alias
    tags = [t for t in (source, alias) if t]
    case = {
        "id": case_id,
        "tags": tags,
        "metadata": metadata,
        "conversation": [{"role": "user", "content": question, "target": {"query": query}}],
    }
    return case, text_field(row, PREDICTION_FIELDS, path, line), alias


def _suite(
    aliases: list[str], neo4j_url: str | None
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """(databases, further suite keys)."""
    scorers: list[dict[str, Any]] = [
        {"name": "exact_match", "weight": 0},
        {"name": "bleu"},
        {"name": "rouge_l", "weight": 0},
        {"name": "jaro_winkler", "weight": 0},
        {"name": "jaccard", "weight": 0},
    ]
    suite: dict[str, Any] = {
        "description": "Neo4j Text2Cypher: questions to Cypher, scored against the gold query.",
    }
    databases: dict[str, dict[str, Any]] = {}
    if neo4j_url is not None and aliases:
        for alias in aliases:
            name = alias.removeprefix(DEMO_PREFIX)
            databases[alias] = {
                "engine": "neo4j",
                "url": neo4j_url,
                "options": {"database": name, "user": name, "password": name, "timeout_s": 10.0},
            }
        suite["comparison"] = {"columns": "permutation"}
        scorers.insert(0, {"name": "execution_match", "required": True})
    suite["scorers"] = scorers
    return databases, suite
