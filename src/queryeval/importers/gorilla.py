"""Weaviate Gorilla (weaviate/weaviate-gorilla): its synthetic query file and its experimental
results, as a suite scored by `weaviate_ast` in default mode beside the original's `legacy`.

Sources (any order; a folder stands for the ``*.json`` files in it):

- the query file ``data/synthetic-weaviate-queries-with-schemas.json``: a list of
  ``{"query": {...Gorilla structure...}, "database_schema": "<JSON of weaviate_collections>"}``;
- results files ``experimental-results/<model>.json``: ``{"model_name", "timestamp",
  "detailed_results": [{"query_index", "ground_truth_query", "predicted_query" | null,
  "ast_score", "error"}], "average_ast_score", "per_schema_scores", ...}``. Each becomes a
  system whose predictions are the stored predicted queries (a failed prediction: the error,
  scored 0 as there). Without the query file, the cases come from the results' ground truths.

Written: ``suite.yaml``, ``cases.jsonl`` (one case per query, ``metadata.schema`` = the
collection schema it was written for, tags ``schema:N`` and by the parts of the query),
``schemas.json``, ``predictions/<model>.jsonl``, and ``published.json`` (each results file's
own figures, and which scorer of the suite reproduces them: the original changed its search
rule on 2024-11-21, so the results written before are reproduced by ``search: exact``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.importers._read import read_json
from queryeval.importers._records import SuiteWithFiles, import_with, slug, unique
from queryeval.importers._suite import ImportedSuite, ImportRequest
from queryeval.metrics.weaviate import WeaviateQueryError, legacy_queries, parse_queries

# weaviate-gorilla commit b993769 ("fix AST score", 2024-11-21 10:57 -05:00) made the search
# text count on presence; results written before it were scored on equal text (.lower()).
SEARCH_RULE_CHANGE = "2024-11-21T10:57"
BLOCK = 64  # the experiment switched schema every 64 queries and reported blocks of 64

_FAMILIES = ("integer", "text", "boolean")


def import_gorilla(
    sources: Sequence[str | Path], out: str | Path, *, overwrite: bool = False
) -> ImportedSuite:
    """Write a suite directory at `out` from Gorilla's query file and/or results files, as
    `queryeval import gorilla SRC... --out DIR` does; returns the suite written.

    >>> suite = import_gorilla(["synthetic-weaviate-queries-with-schemas.json",
    ...                         "experimental-results/"], "gorilla")  # doctest: +SKIP
    """
    return import_with(build, sources, out, {}, overwrite)


SUMMARY = "Weaviate Gorilla: its synthetic query file and experimental-results JSON files"
OPTIONS: dict[str, str] = {}
SCORERS = ("weaviate_ast",)


def build(request: ImportRequest) -> SuiteWithFiles:
    """`queryeval import gorilla SRC... --out DIR [--predictions NAME=RESULTS.json]`: the
    suite of `collect` with its further files (schemas, published figures) written under
    the output folder. A `--predictions` file is a results file, named as given."""
    request.expect_options(*OPTIONS)
    built = collect(list(request.sources), named=list(request.predictions))
    built.write_files(request.out)
    if request.name:
        built.name = request.name
    return built


def collect(paths: Sequence[Path], named: Sequence[tuple[str, Path]] = ()) -> SuiteWithFiles:
    """The suite made of Gorilla's files (see the module text), not yet written; `named`
    results files give systems of those names."""
    query_files, result_files, found_notes = _classify(list(paths))
    for system, path in named:
        data = read_json(path)
        if not isinstance(data, Mapping) or "detailed_results" not in data:
            raise InputError(
                "a predictions file must be a Gorilla results file ({detailed_results: [...]})",
                path=path,
            )
        result_files.append((path, data, system))
    if not query_files and not result_files:
        raise InputError("no Gorilla query file or results file among the sources")
    if query_files:
        path, data = query_files[0]
        cases, schemas = _cases_from_query_file(path, data)
    else:
        path, data, _ = result_files[0]
        cases, schemas = _cases_from_results(path, data)
    _check_golds(cases, path)
    predictions: dict[str, list[dict[str, Any]]] = {}
    published: dict[str, Any] = {}
    taken: set[str] = set()
    exact_needed = False
    for rpath, rdata, given in result_files:
        name = unique(slug(given or rpath.stem), taken)
        predictions[name] = _predictions(rpath, rdata, cases)
        early = str(rdata.get("timestamp", "")) < SEARCH_RULE_CHANGE
        exact_needed = exact_needed or early
        published[name] = {
            "file": rpath.name,
            "model_name": rdata.get("model_name"),
            "timestamp": rdata.get("timestamp"),
            "average_ast_score": rdata.get("average_ast_score"),
            "per_schema_scores": rdata.get("per_schema_scores"),
            "successful_predictions": rdata.get("successful_predictions"),
            "failed_predictions": rdata.get("failed_predictions"),
            "reproduced_by": "gorilla_legacy_exact_search" if early else "gorilla_legacy",
        }
    notes = list(found_notes)
    if not predictions:
        predictions["gold"] = [
            {"case_id": c["id"], "weaviate_query": c["conversation"][0]["target"]["weaviate_query"]}
            for c in cases
        ]
        notes.append("no results file: the system 'gold' answers with the gold queries")
    files = {"schemas.json": _json({"schemas": schemas})}
    if published:
        files["published.json"] = _json(published)
    return SuiteWithFiles(
        name="weaviate-gorilla",
        cases=cases,
        predictions=predictions,
        suite=_suite(exact_needed),
        files=files,
        notes=notes,
        header=_HEADER,
    )


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


_HEADER = """Weaviate Gorilla, imported by `queryeval import gorilla`.
weaviate_ast: the field's convention (a missing or invented filter counts against the query).
gorilla_legacy: weaviate-gorilla's own scorer, quirks included, with its experiment's average
and per-schema figures under aggregate.as_published (compare with published.json)."""


def _suite(exact_needed: bool) -> dict[str, Any]:
    legacy = {"mode": "legacy", "schemas": "schemas.json", "schema_blocks": BLOCK}
    scorers: list[dict[str, Any]] = [
        {"name": "weaviate_ast", "options": {"schemas": "schemas.json"}},
        {"name": "weaviate_ast", "id": "gorilla_legacy", "weight": 0, "options": legacy},
    ]
    if exact_needed:
        scorers.append(
            {
                "name": "weaviate_ast",
                "id": "gorilla_legacy_exact_search",
                "weight": 0,
                "options": {**legacy, "search": "exact"},
            }
        )
    return {
        "description": "Weaviate Gorilla: natural-language questions to Weaviate queries "
        "(collection, search, filters, aggregations, group-by), scored on the query's structure.",
        "scorers": scorers,
    }


# --- reading ----------------------------------------------------------------------------------


QUERY_FILE = "synthetic-weaviate-queries-with-schemas.json"  # the repository's data/ name


def _classify(
    paths: list[Path],
) -> tuple[list[tuple[Path, Any]], list[tuple[Path, Any, str | None]], list[str]]:
    """(query files, results files, notes). A file given by name must be one or the other;
    in a folder, the other ``*.json`` files (schemas, the repository's other data) are
    ignored, and among several query files the repository's ``QUERY_FILE`` is the one."""
    queries: list[tuple[Path, Any]] = []
    results: list[tuple[Path, Any, str | None]] = []
    notes: list[str] = []
    for p in paths:
        if not p.exists():
            raise InputError("no such file or folder", path=p)
        if not p.is_dir():
            data = read_json(p)
            if isinstance(data, list):  # given by name: read as the query file, item by item
                queries.append((p, data))
            elif isinstance(data, Mapping) and "detailed_results" in data:
                results.append((p, data, None))
            else:
                raise InputError(
                    "not a Gorilla file: expected the query file (a list of {query, "
                    "database_schema}) or a results file ({detailed_results: [...]})",
                    path=p,
                )
            continue
        found = sorted(p.glob("*.json"))
        if not found:
            raise InputError("no .json file in the folder", path=p)
        here: list[tuple[Path, Any]] = []
        ignored: list[str] = []
        for f in found:
            try:
                data = read_json(f)
            except InputError:
                ignored.append(f.name)
                continue
            if _is_query_file(data):
                here.append((f, data))
            elif isinstance(data, Mapping) and "detailed_results" in data:
                results.append((f, data, None))
            else:
                ignored.append(f.name)
        if len(here) > 1:
            chosen = [q for q in here if q[0].name == QUERY_FILE]
            if not chosen:
                raise InputError(
                    f"{len(here)} query files in the folder: "
                    f"{', '.join(q[0].name for q in here)}; give the one to import",
                    path=p,
                )
            ignored += [q[0].name for q in here if q[0].name != QUERY_FILE]
            here = chosen
        queries += here
        if ignored:
            notes.append(f"{p}: {len(ignored)} other .json file(s) ignored ({', '.join(ignored)})")
    if len(queries) > 1:
        raise InputError(
            f"more than one query file given: {', '.join(str(q[0]) for q in queries)}",
            path=queries[1][0],
        )
    if queries:
        notes.insert(0, f"query file: {queries[0][0]}")
    return queries, results, notes


def _is_query_file(data: Any) -> bool:
    """A list of Gorilla queries: ``{query: {...}, database_schema: ...}`` items."""
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(x, Mapping) and isinstance(x.get("query"), Mapping) for x in data)
        and "database_schema" in data[0]
    )


def _schema(raw: Any, path: Path, where: str) -> dict[str, Any]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise InputError(
                f"database_schema is not valid JSON ({exc})", path=path, where=where
            ) from None
    if not isinstance(raw, Mapping) or not isinstance(raw.get("weaviate_collections"), list):
        raise InputError("expected {weaviate_collections: [...]}", path=path, where=where)
    return dict(raw)


def _schema_name(schema: dict[str, Any], names: list[dict[str, Any]]) -> str:
    """Schemas numbered in order of first appearance."""
    for i, known in enumerate(names):
        if known == schema:
            return str(i)
    names.append(schema)
    return str(len(names) - 1)


def _case(index: int, query: Mapping[str, Any], schema: str, path: Path, where: str) -> dict:
    question = query.get("corresponding_natural_language_query")
    if not isinstance(question, str) or not question.strip():
        raise InputError(
            "corresponding_natural_language_query must be a non-empty text", path=path, where=where
        )
    gold = {
        k: v
        for k, v in query.items()
        if k not in ("corresponding_natural_language_query", "database_schema")
    }
    return {
        "id": f"q{index:03d}",
        "tags": [f"schema:{schema}", *_tags(gold)],
        "metadata": {"schema": schema, "query_index": index},
        "conversation": [{"role": "user", "content": question, "target": {"weaviate_query": gold}}],
    }


def _tags(query: Mapping[str, Any]) -> list[str]:
    tags = ["search"] if query.get("search_query") else []
    for family in _FAMILIES:
        if query.get(f"{family}_property_filter"):
            tags.append(f"filter:{family}")
        if query.get(f"{family}_property_aggregation"):
            tags.append(f"aggregation:{family}")
    if query.get("groupby_property"):
        tags.append("groupby")
    return tags


def _cases_from_query_file(path: Path, data: list[Any]) -> tuple[list[dict], dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    schemas: list[dict[str, Any]] = []
    for i, item in enumerate(data):
        where = f"[{i}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("query"), Mapping):
            raise InputError(
                "expected {query: {...}, database_schema: ...}", path=path, where=where
            )
        schema = _schema(item.get("database_schema"), path, f"{where}.database_schema")
        cases.append(_case(i, item["query"], _schema_name(schema, schemas), path, f"{where}.query"))
    return cases, {str(i): s for i, s in enumerate(schemas)}


def _results(path: Path, data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    results = data["detailed_results"]
    if not isinstance(results, list):
        raise InputError("detailed_results must be a list", path=path, where="detailed_results")
    for i, r in enumerate(results):
        if not isinstance(r, Mapping) or not isinstance(r.get("query_index"), int):
            raise InputError(
                "expected a result with an integer query_index",
                path=path,
                where=f"detailed_results[{i}]",
            )
    return results


def _cases_from_results(path: Path, data: Mapping[str, Any]) -> tuple[list[dict], dict]:
    cases: list[dict[str, Any]] = []
    schemas: list[dict[str, Any]] = []
    for i, r in enumerate(sorted(_results(path, data), key=lambda r: r["query_index"])):
        where = f"detailed_results[{i}].ground_truth_query"
        gold = r.get("ground_truth_query")
        if not isinstance(gold, Mapping):
            raise InputError("expected the ground-truth query", path=path, where=where)
        if r["query_index"] != i:
            raise InputError(
                f"query_index {r['query_index']} where {i} was expected",
                path=path,
                where=f"detailed_results[{i}]",
            )
        schema = _schema(gold.get("database_schema"), path, f"{where}.database_schema")
        cases.append(_case(i, gold, _schema_name(schema, schemas), path, where))
    return cases, {str(i): s for i, s in enumerate(schemas)}


def _check_golds(cases: list[dict[str, Any]], path: Path) -> None:
    """Every gold must be readable by both modes, else `queryeval run` would stop later."""
    for case in cases:
        gold = case["conversation"][0]["target"]["weaviate_query"]
        try:
            legacy_queries(gold, prediction=False)
            parse_queries(gold)
        except WeaviateQueryError as exc:
            raise InputError(
                f"gold query: {exc}", path=path, where=f"query {case['metadata']['query_index']}"
            ) from None


def _predictions(
    path: Path, data: Mapping[str, Any], cases: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    seen: set[int] = set()
    for i, r in enumerate(_results(path, data)):
        where = f"detailed_results[{i}]"
        index = r["query_index"]
        if not 0 <= index < len(cases):
            raise InputError(
                f"query_index {index} is not a query of the cases (0-{len(cases) - 1})",
                path=path,
                where=where,
            )
        if index in seen:
            raise InputError(f"query_index {index} appears twice", path=path, where=where)
        seen.add(index)
        case = cases[index]
        question = r.get("natural_language_query")
        if question is not None and question != case["conversation"][0]["content"]:
            raise InputError(
                f"the question differs from query {index}'s in the query file",
                path=path,
                where=f"{where}.natural_language_query",
            )
        predicted = r.get("predicted_query")
        if predicted is None:
            error = r.get("error") or "no prediction"
            records.append({"case_id": case["id"], "error": str(error)})
        elif isinstance(predicted, Mapping):
            records.append({"case_id": case["id"], "weaviate_query": dict(predicted)})
        else:
            raise InputError(
                "predicted_query must be an object or null",
                path=path,
                where=f"{where}.predicted_query",
            )
    return records
