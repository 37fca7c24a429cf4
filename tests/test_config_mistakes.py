"""Configuration mistakes stop `validate` and `run` before anything is scored: exit code 2
and one line naming the file, the line and what was expected (never exit 0 with a
configuration that cannot be honoured)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from queryeval.cli import app
from queryeval.runner import load_suite, plan_run

ROOT = Path(__file__).resolve().parent.parent
SALES = ROOT / "examples" / "sql" / "fixtures" / "sales"
LOGS = ROOT / "examples" / "kql" / "fixtures" / "logs"

SUITE = f"""name: mistakes
cases: cases.yaml
databases:
  sales: {{engine: duckdb, fixture: {SALES}, options: {{timeout_s: 2.0}}}}
comparison: {{columns: permutation}}
systems:
  - {{name: baseline, predictions: predictions.jsonl}}
scorers:
  - {{name: executes, weight: 0}}
  - {{name: execution_match, required: true}}
gates: ["execution_match >= 0.3"]
reports: [json]
"""
CASES = """- id: q1
  conversation:
    - content: How many customers are there?
      target: {query: "SELECT count(*) FROM customers"}
- id: q2
  metadata: {note: second}
  conversation:
    - content: How many orders are there?
      target: {query: "SELECT count(*) FROM orders"}
"""
PREDICTIONS = (
    '{"case_id": "q1", "query": "SELECT count(*) FROM customers"}\n'
    '{"case_id": "q2", "query": "SELECT 1"}\n'
)


@dataclass(frozen=True)
class Mistake:
    """A change to the good suite, the file and text whose line the error must name, and
    words of the message (what was expected)."""

    name: str
    change: Callable[[Path], None]
    file: str
    marker: str
    expected: str


def edit(file: str, old: str, new: str) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        path = folder / file
        text = path.read_text()
        assert old in text, (old, text)
        path.write_text(text.replace(old, new, 1))

    return change


def suite(old: str, new: str) -> Callable[[Path], None]:
    return edit("suite.yaml", old, new)


def add(line: str) -> Callable[[Path], None]:
    return edit("suite.yaml", "reports: [json]\n", f"reports: [json]\n{line}\n")


def write(file: str, text: str) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        (folder / file).write_text(text)

    return change


def both(*changes: Callable[[Path], None]) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        for c in changes:
            c(folder)

    return change


COMPARISON = "comparison: {columns: permutation}"
COLUMNS = "'by_name', 'by_position', 'permutation' or 'gold_subset'"
GATE = '"execution_match >= 0.3"'
NOTE = "{note: second}"
SALES_DB = f"sales: {{engine: duckdb, fixture: {SALES}, options: {{timeout_s: 2.0}}}}"
MATCH = "{name: execution_match, required: true}"
TWO_DBS = SALES_DB + f"\n  other: {{engine: sqlite, fixture: {SALES}}}"

MISTAKES = [
    # the comparison policy: every option typed, enums list their choices
    Mistake("comparison columns", suite(COMPARISON, "comparison: {columns: nope}"),
            "suite.yaml", "comparison:", COLUMNS),
    Mistake("comparison rows", suite(COMPARISON, "comparison: {rows: sometimes}"),
            "suite.yaml", "comparison:", "'auto', 'ordered', 'multiset' or 'set'"),
    Mistake("comparison rel_tol text", suite(COMPARISON, "comparison: {rel_tol: small}"),
            "suite.yaml", "comparison:", "valid number"),
    Mistake("comparison negative tolerance", suite(COMPARISON, "comparison: {abs_tol: -1e-9}"),
            "suite.yaml", "comparison:", "greater than or equal to 0"),
    Mistake("comparison unknown key", suite(COMPARISON, "comparison: {rel_tl: 1e-9}"),
            "suite.yaml", "comparison:", "unknown comparison option; expected one of abs_tol"),
    # databases: a known engine, a place that exists, options meant for it
    Mistake("database file missing", suite(SALES_DB, "sales: {engine: duckdb, path: nope.duckdb}"),
            "suite.yaml", "sales:", "database file or folder not found"),
    Mistake("fixture seed missing", suite(SALES_DB, "sales: {engine: duckdb, fixture: nope}"),
            "suite.yaml", "sales:", "fixture seed not found"),
    Mistake("unknown engine", suite(SALES_DB, "sales: {engine: oracle, path: x.db}"),
            "suite.yaml", "sales:", "unknown engine 'oracle'; expected one of duckdb"),
    Mistake("no place", suite(SALES_DB, "sales: {engine: duckdb}"),
            "suite.yaml", "sales:", "needs path or fixture or url"),
    Mistake("timeout zero", suite("timeout_s: 2.0", "timeout_s: 0"),
            "suite.yaml", "sales:", "greater than 0"),
    Mistake("max_rows text", suite("timeout_s: 2.0", "max_rows: many"),
            "suite.yaml", "sales:", "valid integer"),
    Mistake("option of another engine", suite("timeout_s: 2.0", "heap: 2g"),
            "suite.yaml", "sales:", "not an option of engine 'duckdb'"),
    Mistake("misspelt option", suite("timeout_s: 2.0", "timout_s: 2.0"),
            "suite.yaml", "sales:", "unknown option; expected some of"),
    Mistake("kql now not an instant",
            suite(SALES_DB, f"sales: {{engine: kql, fixture: {LOGS}, options: {{now: yday}}}}"),
            "suite.yaml", "sales:", "valid datetime"),
    Mistake("unknown database key", suite("engine: duckdb,", "engine: duckdb, paht: x,"),
            "suite.yaml", "sales:", "unknown field"),
    # gates: readable, naming a metric the scorers report, bounds of shares in [0, 1]
    Mistake("misspelt gate metric", suite(GATE, '"execution_match.exct >= 0.9"'),
            "suite.yaml", "gates:", "unknown metric 'execution_match.exct'"),
    Mistake("misspelt scorer in gate", suite(GATE, '"exec_match >= 0.3"'),
            "suite.yaml", "gates:", "unknown metric 'exec_match' in gate"),
    Mistake("gate bound out of range", suite(GATE, '"pass_rate >= 7"'),
            "suite.yaml", "gates:", "expected a bound in [0, 1]"),
    Mistake("gate syntax", suite(GATE, '"execution_match >> 0.3"'),
            "suite.yaml", "gates:", "expected 'METRIC OP NUMBER'"),
    Mistake("relative gate without a baseline",
            suite(GATE, '"execution_match >= baseline - 0.02"'),
            "suite.yaml", "gates:", "expected 'baseline:' in the suite or --baseline"),
    # thresholds and weights
    Mistake("scorer threshold 7", suite(MATCH, "{name: execution_match, threshold: 7}"),
            "suite.yaml", "execution_match, threshold", "less than or equal to 1"),
    Mistake("suite threshold", add("threshold: -0.5"),
            "suite.yaml", "threshold:", "greater than or equal to 0"),
    Mistake("negative weight", suite(MATCH, "{name: execution_match, weight: -1}"),
            "suite.yaml", "execution_match, weight", "greater than or equal to 0"),
    # scorers
    Mistake("unknown scorer", suite(MATCH, "{name: exection_match}"),
            "suite.yaml", "exection_match", "unknown scorer 'exection_match'; expected one of"),
    Mistake("scorer option choice", suite(MATCH, "{name: results_f1, options: {attempt: last}}"),
            "suite.yaml", "attempt: last", "'final' or 'first'"),
    Mistake("scorer unknown option", suite(MATCH, "{name: results_f1, options: {atempt: first}}"),
            "suite.yaml", "atempt", "unknown field"),
    Mistake("scorer database unknown",
            suite(MATCH, "{name: execution_match, options: {database: nope}}"),
            "suite.yaml", "database: nope", "unknown database 'nope'; the suite has: sales"),
    Mistake("scorer comparison option",
            suite(MATCH, "{name: execution_match, options: {comparison: {columns: nope}}}"),
            "suite.yaml", "columns: nope", COLUMNS),
    Mistake("codelist file missing",
            suite(MATCH, f"{MATCH}\n  - {{name: term_selection, options: {{codelist: no.xml}}}}"),
            "suite.yaml", "codelist", "codelist file not found"),
    Mistake("composite component unknown",
            suite(MATCH, "{name: composite, options: {components: [{name: nope}]}}"),
            "suite.yaml", "composite", "unknown scorer 'nope'"),
    # other sections
    Mistake("unknown report kind", suite("reports: [json]", "reports: [json, pdf]"),
            "suite.yaml", "reports:", "unknown report kind 'pdf'; expected one of"),
    Mistake("html report option",
            suite("reports: [json]", "reports: [{kind: html, options: {top: 5}}]"),
            "suite.yaml", "reports:", "unknown option; expected some of title"),
    Mistake("duckdb setting", suite("timeout_s: 2.0", "settings: {memory_limt: 1GB}"),
            "suite.yaml", "sales:", "DuckDB refuses these settings"),
    Mistake("judge misspelt key", add("judge: {modle: gpt-4o-mini}"),
            "suite.yaml", "judge:", "judge.modle: unknown option; expected some of model"),
    Mistake("embeddings backend", add("embeddings: {backend: nope}"),
            "suite.yaml", "embeddings:", "'local' or 'openai'"),
    Mistake("settings share", add("settings: {max_unscored_share: 2}"),
            "suite.yaml", "settings:", "less than or equal to 1"),
    Mistake("settings unknown key", add("settings: {workerz: 2}"),
            "suite.yaml", "settings:", "unknown field"),
    Mistake("baseline run missing", add("baseline: {run: no-such-run}"),
            "suite.yaml", "baseline:", "baseline run not found"),
    Mistake("concurrency zero",
            suite("predictions.jsonl}", "predictions.jsonl, concurrency: 0}"),
            "suite.yaml", "concurrency", "greater than or equal to 1"),
    Mistake("unknown preset", add("preset: sql_magic"),
            "suite.yaml", "preset:", "unknown preset 'sql_magic'; expected one of"),
    # predictions
    Mistake("empty predictions file", write("predictions.jsonl", "\n"),
            "predictions.jsonl", "", "the predictions file is empty: expected one JSON record"),
    Mistake("two predictions for one case",
            write("predictions.jsonl", PREDICTIONS + '{"case_id": "q1", "query": "SELECT 2"}\n'),
            "predictions.jsonl", 'SELECT 2"', "second prediction for case 'q1' (the first is"),
    Mistake("predictions file missing",
            suite("predictions: predictions.jsonl", "predictions: gone.jsonl"),
            "suite.yaml", "gone.jsonl", "predictions file not found"),
    Mistake("prediction for an unknown case",
            write("predictions.jsonl", PREDICTIONS + '{"case_id": "q9", "query": "SELECT 2"}\n'),
            "predictions.jsonl", "q9", "prediction for unknown case id 'q9'"),
    Mistake("misspelt query key in a prediction",
            write("predictions.jsonl", PREDICTIONS.replace('"q2", "query"', '"q2", "qurey"')),
            "predictions.jsonl", "qurey", "unknown key 'qurey' in a prediction record; did you "
            "mean 'query'?"),
    Mistake("a prediction with a query and an sql field",
            write("predictions.jsonl", PREDICTIONS.replace('"SELECT 1"', '"SELECT 1", "sql": "x"')),
            "predictions.jsonl", '"sql": "x"', "a record with 'query' and 'sql': expected one"),
    Mistake("a prediction that is not JSON",
            write("predictions.jsonl", PREDICTIONS.replace('"SELECT 1"}', "SELECT 1}")),
            "predictions.jsonl", "SELECT 1}", "invalid JSON at column 28: unexpected character"),
    # cases
    Mistake("case names an unknown database", edit("cases.yaml", NOTE, "{database: nope}"),
            "cases.yaml", "- id: q2", "unknown database 'nope'; the suite has: sales"),
    Mistake("case comparison policy",
            edit("cases.yaml", "{note: second}", "{comparison: {rows: sometimes}}"),
            "cases.yaml", "- id: q2", "'auto', 'ordered', 'multiset' or 'set'"),
    Mistake("gold names an unknown database",
            edit("cases.yaml", '{query: "SELECT count(*) FROM orders"}',
                 '{query: {text: "SELECT 1", database: nope}}'),
            "cases.yaml", "- id: q2", "unknown database 'nope'"),
    Mistake("no database for a case among several", suite(SALES_DB, TWO_DBS),
            "cases.yaml", "- id: q1", "no database is named for this case"),
    Mistake("agentic breakdown key no case has",
            suite("  - {name: execution_match, required: true}\n",
                  "  - {name: execution_match, required: true}\n"
                  "  - {name: agentic, weight: 0, options: {breakdown: [tagz]}}\n"),
            "suite.yaml", "tagz", "breakdown key(s) 'tagz' group no case"),
]  # fmt: skip


def make_suite(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "suite.yaml").write_text(SUITE)
    (folder / "cases.yaml").write_text(CASES)
    (folder / "predictions.jsonl").write_text(PREDICTIONS)
    return folder / "suite.yaml"


def expected_place(folder: Path, mistake: Mistake) -> str:
    """`file:line` the error must start with (line 1 when the marker is empty)."""
    path = folder / mistake.file
    if not mistake.marker:
        return f"{path}:1"
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if mistake.marker in line:
            return f"{path}:{n}"
    raise AssertionError(f"marker {mistake.marker!r} not in {path}")


def test_the_good_suite_is_valid(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["validate", str(make_suite(tmp_path / "s"))])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("ok: 2 cases")


def test_there_are_at_least_25_mistakes() -> None:
    assert len(MISTAKES) >= 25
    assert len({m.name for m in MISTAKES}) == len(MISTAKES)


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: m.name)
def test_a_mistake_stops_validate_and_run_with_its_place(tmp_path: Path, mistake: Mistake) -> None:
    folder = tmp_path / "s"
    path = make_suite(folder)
    mistake.change(folder)
    place = expected_place(folder, mistake)
    out = tmp_path / "r"
    for command in (["validate", str(path), "--no-golds"], ["run", str(path), "--out", str(out)]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, (command[0], result.stdout, result.stderr)
        message = result.stderr.strip()
        assert message.startswith(f"error: {place}:"), (place, message)
        assert mistake.expected in message, message
        assert len(message.splitlines()) == 1
    assert not out.exists()  # refused before anything ran


def test_a_float_in_e_notation_is_a_number(tmp_path: Path) -> None:
    """YAML 1.1 reads `1e-9` as a string; the suite loader reads YAML 1.2's floats, and the
    typed policy would take the text too."""
    path = make_suite(tmp_path / "s")
    path.write_text(path.read_text().replace(COMPARISON, "comparison: {rel_tol: 1e-9}"))
    suite = load_suite(path)
    assert suite.comparison == {"rel_tol": 1e-9}
    plan = plan_run(suite)
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.stderr
    records = [json.loads(line) for line in (tmp_path / "r" / "results.jsonl").open()]
    assert all(r["scores"]["execution_match"]["status"] == "ok" for r in records)
    assert len(records) == len(plan.cases) == 2


def test_a_broken_case_is_named_by_its_place_and_id(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    path = make_suite(folder)
    edit("cases.yaml", "{note: second}", "{database: nope}")(folder)
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert re.search(r"cases\.yaml:5: case q2: metadata\.database: unknown database", result.stderr)


def test_kg_validation_on_a_ray_cluster_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """KG validity is checked with the Cypher engine's own driver, which cannot leave the
    run's process: a Ray run asking for it stops with exit 2 at the option (no cluster is
    started); `kg_validity: recorded` or `off` is accepted."""
    import shutil

    from queryeval.errors import InputError
    from queryeval.runner import load_suite
    from queryeval.runner._run import plan_run

    folder = tmp_path / "cypher"
    shutil.copytree(Path(__file__).resolve().parents[1] / "examples" / "cypher", folder)
    suite_path = folder / "suite_agentic.yaml"
    text = suite_path.read_text() + "settings: {executor: ray}\n"
    suite_path.write_text(text)
    with pytest.raises(InputError) as info:
        plan_run(load_suite(suite_path))
    assert info.value.where is not None and info.value.where.endswith("options.kg_validity")
    assert "Ray cluster" in info.value.message and info.value.line is not None
    off = text.replace(
        "{ks: [1, 2, 3], breakdown: [tag]}", "{ks: [1, 2, 3], breakdown: [tag], kg_validity: 'off'}"
    )
    off = off.replace(
        "{name: llmetric_q, weight: 0}",
        "{name: llmetric_q, weight: 0, options: {kg_validity: 'off'}}",
    )
    off = off.replace(
        "{name: kg_valid, weight: 0}",
        "{name: kg_valid, weight: 0, options: {kg_validity: recorded}}",
    )
    suite_path.write_text(off)
    plan_run(load_suite(suite_path))  # accepted
