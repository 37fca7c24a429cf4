"""`import_gorilla`: Gorilla's query file and results files (written here in their format)
become a suite whose `gorilla_legacy` scorer gives each stored ast_score, and whose
`as_published` figures are the results file's own average and per-schema scores.

The stored scores are worked out by hand from weaviate-gorilla's rules (collection 0.4, then
0.15 each for search, filters, aggregations and group-by; a slot present on one side only is
not counted; search on presence after 2024-11-21, on equal .lower() text before; a failed
prediction is 0), summed in the original's order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from queryeval.errors import InputError
from queryeval.importers import ImportRequest as Request
from queryeval.importers.gorilla import import_gorilla
from queryeval.runner import load_suite, run_suite
from queryeval.scorers.weaviate import WeaviateAstScorer, as_published


def schema(*collections: str) -> dict[str, Any]:
    return {
        "weaviate_collections": [
            {
                "name": name,
                "properties": [
                    {"name": "price", "data_type": ["number"], "description": "d"},
                    {"name": "cuisine", "data_type": ["string"], "description": "d"},
                    {"name": "open", "data_type": ["boolean"], "description": "d"},
                ],
                "envisioned_use_case_overview": "o",
            }
            for name in collections
        ]
    }


SCHEMA_A = schema("Menus", "Restaurants")
SCHEMA_B = schema("Hotels")
NULLS = dict.fromkeys(
    (
        "search_query",
        "integer_property_filter",
        "text_property_filter",
        "boolean_property_filter",
        "integer_property_aggregation",
        "text_property_aggregation",
        "boolean_property_aggregation",
        "groupby_property",
    )
)
PRICE = {"property_name": "price", "operator": "<", "value": 20}
TOP = {"property_name": "cuisine", "metrics": "TOP_OCCURRENCES", "top_occurrences_limit": 3}


def query(question: str, collection: str, **parts: Any) -> dict[str, Any]:
    return {
        "corresponding_natural_language_query": question,
        "target_collection": collection,
        **NULLS,
        **parts,
    }


GOLDS = [
    (SCHEMA_A, query("cheap pizza", "Menus", search_query="pizza", integer_property_filter=PRICE)),
    (SCHEMA_A, query("top cuisines", "Restaurants", text_property_aggregation=TOP)),
    (SCHEMA_A, query("menus by openness", "Menus", groupby_property="open")),
    (SCHEMA_B, query("hotels", "Hotels")),
    (SCHEMA_B, query("hotel pools", "Hotels", search_query="pool")),
]


def s(search: bool = True, filters: tuple[int, int] = (3, 3), groupby: bool = True) -> float:
    """The original's sum for a right collection and aggregations 3/3."""
    score = 0.0 + 0.4
    if search:
        score += 0.15
    if filters[1]:
        score += 0.15 * (float(filters[0]) / filters[1])
    score += 0.15 * (3.0 / 3)
    if groupby:
        score += 0.15
    return score


# (predicted_query or None with an error, stored score after 2024-11-21, before it)
PREDICTIONS: list[tuple[dict[str, Any] | None, float, float]] = [
    # other search text: presence gives the weight, equal text does not
    (
        query("cheap pizza", "Menus", search_query="pizza place", integer_property_filter=PRICE),
        s(),
        s(search=False),
    ),
    # the limit differs (not compared) and an invented boolean filter (not counted)
    (
        query(
            "top cuisines",
            "Restaurants",
            text_property_aggregation={**TOP, "top_occurrences_limit": 0},
            boolean_property_filter={"property_name": "open", "operator": "=", "value": True},
        ),
        s(),
        s(),
    ),
    (None, 0.0, 0.0),  # failed: no tool called
    (query("hotels", "Menus"), 0.0, 0.0),  # wrong collection
    # empty search text against the gold's: nothing, in both versions
    (query("hotel pools", "Hotels", search_query=""), s(search=False), s(search=False)),
]


def write_inputs(tmp: Path) -> tuple[Path, Path, Path]:
    query_file = tmp / "synthetic-weaviate-queries-with-schemas.json"
    query_file.write_text(
        json.dumps([{"query": q, "database_schema": json.dumps(sc)} for sc, q in GOLDS])
    )
    results = tmp / "experimental-results"
    results.mkdir()
    paths = []
    for name, stamp, column in (
        ("late-model", "2024-12-16T10:57:01", 1),
        ("early-model", "2024-11-20T20:11:44", 2),
    ):
        detailed = []
        for i, ((sc, gold), p) in enumerate(zip(GOLDS, PREDICTIONS, strict=True)):
            detailed.append(
                {
                    "query_index": i,
                    "database_schema_index": 0,
                    "natural_language_query": gold["corresponding_natural_language_query"],
                    "ground_truth_query": {"database_schema": sc, **gold},
                    "predicted_query": p[0],
                    "tool_rationale": "",
                    "ast_score": p[column],
                    "error": None if p[0] is not None else "No tool called",
                }
            )
        scores = [p[column] for p in PREDICTIONS]
        data = {
            "timestamp": stamp,
            "model_name": f"vendor/{name}",
            "generate_with_models": True,
            "total_queries": len(scores),
            "successful_predictions": 4,
            "failed_predictions": 1,
            "average_ast_score": sum(scores) / len(scores),
            # the experiment's rule: the last 64 results at the block's end, / 64
            "per_schema_scores": {"0": sum(scores[-64:]) / 64},
            "detailed_results": detailed,
        }
        path = results / f"{name}.json"
        path.write_text(json.dumps(data))
        paths.append(path)
    (results / "readme.md").write_text("not json")  # a folder may hold other files
    return query_file, paths[0], paths[1]


def test_import_then_run_reproduces_every_stored_score(tmp_path: Path) -> None:
    query_file, late, early = write_inputs(tmp_path)
    report = import_gorilla([query_file, tmp_path / "experimental-results"], tmp_path / "suite")
    assert len(report.cases) == 5
    assert list(report.predictions) == ["early-model", "late-model"]
    suite_dir = tmp_path / "suite"
    cases = [json.loads(line) for line in (suite_dir / "cases.jsonl").read_text().splitlines()]
    assert [c["metadata"]["schema"] for c in cases] == ["0", "0", "0", "1", "1"]
    assert cases[0]["tags"] == ["schema:0", "search", "filter:integer"]
    schemas = json.loads((suite_dir / "schemas.json").read_text())["schemas"]
    assert schemas["1"] == SCHEMA_B
    preds = (suite_dir / "predictions" / "late-model.jsonl").read_text().splitlines()
    assert json.loads(preds[2]) == {"case_id": "q002", "error": "No tool called"}
    published = json.loads((suite_dir / "published.json").read_text())
    assert published["early-model"]["reproduced_by"] == "gorilla_legacy_exact_search"
    assert published["late-model"]["reproduced_by"] == "gorilla_legacy"

    suite = load_suite(suite_dir / "suite.yaml")
    suite.settings.cache_dir = str(tmp_path / "cache")
    result = run_suite(suite, tmp_path / "run", progress=False, write_reports=False)
    records = [
        json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().split("\n") if x
    ]
    for name, path in (("late-model", late), ("early-model", early)):
        stored = json.loads(path.read_text())
        label = published[name]["reproduced_by"]
        mine = {r["case_id"]: r["scores"][label]["value"] for r in records if r["system"] == name}
        for r in stored["detailed_results"]:
            assert mine[f"q{r['query_index']:03d}"] == r["ast_score"]
        agg = result.summary["systems"][name]["scorers"][label]["aggregate"]["as_published"]
        assert agg["average_ast_score"] == stored["average_ast_score"]
        assert agg["per_schema_scores"] == stored["per_schema_scores"]
        # the default counts the invented filter and the other search text against the query
        default = result.summary["systems"][name]["scorers"]["weaviate_ast"]
        assert default["mean"] < result.summary["systems"][name]["scorers"][label]["mean"]
        # the console's tables: per component, per schema, the experiment's own figures
        aggregate = result.summary["systems"][name]["scorers"][label]["aggregate"]
        tables = dict(WeaviateAstScorer.report_tables(aggregate))
        assert tables["per schema"][1:] == [
            ["0", aggregate["per_schema"]["0"]["mean"], 3],
            ["1", aggregate["per_schema"]["1"]["mean"], 2],
        ]
        published_rows = tables["as weaviate-gorilla reports it"]
        assert published_rows[1] == ["average", stored["average_ast_score"], 5]
        assert published_rows[2] == ["schema 0", stored["per_schema_scores"]["0"], None]
        assert [row[0] for row in tables["per component"][1:]] == [
            "collection",
            "search",
            "filters",
            "aggregations",
            "groupby",
        ]


def test_results_alone_give_the_cases_and_a_query_file_alone_a_gold_system(
    tmp_path: Path,
) -> None:
    query_file, late, _ = write_inputs(tmp_path)
    import_gorilla([late], tmp_path / "from-results")
    cases = (tmp_path / "from-results" / "cases.jsonl").read_text().splitlines()
    assert len(cases) == 5 and json.loads(cases[3])["metadata"]["schema"] == "1"
    report = import_gorilla([query_file], tmp_path / "from-queries")
    assert list(report.predictions) == ["gold"] and report.notes
    suite = load_suite(tmp_path / "from-queries" / "suite.yaml")
    suite.settings.cache_dir = str(tmp_path / "cache")
    result = run_suite(suite, tmp_path / "run", progress=False, write_reports=False)
    for scorer in result.summary["systems"]["gold"]["scorers"].values():
        assert scorer["mean"] == 1.0


def test_as_published_takes_the_last_block_window() -> None:
    from queryeval.cases import Score

    values = [1.0, 0.5, 0.25, 0.0, 1.0]
    out = as_published([Score(value=v) for v in values], 2)
    # blocks [0, 1], [2, 3], then the short block [4]: the last 2 results (3 and 4), / 2
    assert out["per_schema_scores"] == {"0": 0.75, "1": 0.125, "2": 0.5}
    assert out["average_ast_score"] == sum(values) / 5
    failed = as_published([Score(value=1.0), Score.failed("crash")], 2)
    assert failed["per_schema_scores"] == {"0": 0.5}


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda d: d.__setitem__(1, {"query": "x"}), "[1]"),
        (lambda d: d[0].__setitem__("database_schema", "{bad"), "[0].database_schema"),
        (lambda d: d[2]["query"].pop("corresponding_natural_language_query"), "[2].query"),
        (
            lambda d: d[0]["query"].__setitem__(
                "integer_property_filter", {"property_name": "p", "operator": "~", "value": 1}
            ),
            "query 0",
        ),
    ],
)
def test_a_bad_query_file_names_the_file_and_the_place(
    tmp_path: Path, change: Any, where: str
) -> None:
    query_file, _, _ = write_inputs(tmp_path)
    data = json.loads(query_file.read_text())
    change(data)
    query_file.write_text(json.dumps(data))
    with pytest.raises(InputError) as err:
        import_gorilla([query_file], tmp_path / "out")
    assert err.value.path == str(query_file)
    assert err.value.where == where
    assert not (tmp_path / "out").exists()  # nothing half written


def test_bad_results_name_the_file_and_the_place(tmp_path: Path) -> None:
    query_file, late, _ = write_inputs(tmp_path)
    data = json.loads(late.read_text())
    data["detailed_results"][3]["natural_language_query"] = "another question"
    late.write_text(json.dumps(data))
    with pytest.raises(InputError) as err:
        import_gorilla([query_file, late], tmp_path / "out")
    assert (err.value.path, err.value.where) == (
        str(late),
        "detailed_results[3].natural_language_query",
    )
    late.write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON") as err:
        import_gorilla([late], tmp_path / "out")
    assert err.value.line == 1
    other = tmp_path / "other.json"
    other.write_text('{"rows": []}')
    with pytest.raises(InputError, match="not a Gorilla file"):
        import_gorilla([other], tmp_path / "out")


def test_an_existing_suite_is_refused_unless_overwritten(tmp_path: Path) -> None:
    query_file, _, _ = write_inputs(tmp_path)
    import_gorilla([query_file], tmp_path / "out")
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="exists; pass --overwrite"):
        import_gorilla([query_file], tmp_path / "out")
    import_gorilla([query_file], tmp_path / "out", overwrite=True)
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"
    assert (tmp_path / "out" / "suite.yaml").exists()


def test_queryeval_import_command(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from queryeval.cli import app

    query_file, late, _ = write_inputs(tmp_path)
    out = tmp_path / "suite"
    args = ["import", "gorilla", str(query_file), "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--predictions", f"m={late}"])
    assert result.exit_code == 0, result.output
    assert "5 case(s)" in result.output and "system(s): m" in result.output
    header = (out / "suite.yaml").read_text().splitlines()[0]
    assert header.startswith("# Weaviate Gorilla")
    data = json.loads(query_file.read_text())
    data[1]["query"]["text_property_aggregation"] = {"property_name": "c", "metrics": "AVG"}
    query_file.write_text(json.dumps(data))
    result = CliRunner().invoke(app, [*args, "--overwrite"])
    assert result.exit_code == 2
    assert f"{query_file}: query 1: gold query: text_property_aggregation.metrics" in result.output


def test_build_for_queryeval_import(tmp_path: Path) -> None:
    from queryeval.importers import gorilla

    query_file, late, _ = write_inputs(tmp_path)
    out = tmp_path / "suite"
    built = gorilla.build(Request([query_file], out, predictions=[("model-a", late)]))
    assert gorilla.SUMMARY
    assert list(built.predictions) == ["model-a"] and len(built.cases) == 5
    assert built.suite["scorers"][1]["id"] == "gorilla_legacy"
    # the further files are written by build; cases and predictions by the command
    assert json.loads((out / "published.json").read_text())["model-a"]["file"] == late.name
    assert (out / "schemas.json").exists() and not (out / "cases.jsonl").exists()
    with pytest.raises(InputError, match="unknown option"):
        gorilla.build(Request([query_file], out, options={"now": "x"}))
    with pytest.raises(InputError, match="must be a Gorilla results file") as err:
        gorilla.build(Request([query_file], out, predictions=[("x", query_file)]))
    assert err.value.path == str(query_file)
