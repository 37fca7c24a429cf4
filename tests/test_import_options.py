"""`queryeval import` without surprises: the presets named, scorer options at import,
`--skip-missing`, a format's own `--help`, Gorilla's data/ folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from benchmark_files import DEV, PREDICTIONS, spider_folder, write
from queryeval.cli import app
from test_importers_gorilla import write_inputs

runner = CliRunner()


def cli(*args: str | Path) -> Any:
    return runner.invoke(app, [str(a) for a in args])


def scorers(out: Path) -> dict[str, dict[str, Any]]:
    data = yaml.safe_load((out / "suite.yaml").read_text())
    return {s.get("id") or s["name"]: s.get("options", {}) for s in data["scorers"]}


def test_the_import_names_the_preset_and_the_leaderboards(tmp_path: Path) -> None:
    folder = spider_folder(tmp_path, variant=False)
    result = cli("import", "spider", folder, "--out", tmp_path / "a")
    assert result.exit_code == 0, result.output
    assert "preset: spider (queryeval's conventions)" in result.output
    assert "leaderboard figures: preset spider_legacy" in result.output
    assert "legacy" not in scorers(tmp_path / "a")["spider_exact_match"]

    result = cli(
        "import", "spider", folder, "--set", "preset=spider_legacy", "--out", tmp_path / "b"
    )
    assert result.exit_code == 0, result.output
    assert "preset: spider_legacy (the leaderboards' figures" in result.output
    assert "leaderboard figures" not in result.output
    # the leaderboards' exact match is the official reader's
    assert scorers(tmp_path / "b")["spider_exact_match"]["legacy"] is True


def test_every_scorer_option_is_settable_at_import(tmp_path: Path) -> None:
    import copy

    from queryeval.config import PRESETS

    before = copy.deepcopy(PRESETS["spider_legacy"])
    folder = spider_folder(tmp_path, variant=False)
    out = tmp_path / "suite"
    result = cli(
        "import", "spider", folder, "--out", out, "--set", "preset=spider_legacy",
        "--set", "keep_distinct=true", "--set", "spider_exact_match.legacy=false",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    options = scorers(out)
    # a bare option: every scorer of the suite that takes it
    assert options["execution_match"] == {"rule": "spider_legacy", "keep_distinct": True}
    assert options["executes"]["keep_distinct"] is options["results_f1"]["keep_distinct"] is True
    assert options["spider_exact_match"]["legacy"] is False
    assert "scorer option: execution_match.keep_distinct = True" in result.output
    assert PRESETS["spider_legacy"] == before  # the preset itself is left as it was

    bad = [
        (("--set", "keep_distinct=maybe"), ".keep_distinct=maybe: Input should be a valid boolean"),
        (("--set", "nope=1"), "not an option of this format (preset, split"),
        (("--set", "bleu.n=2"), "no scorer 'bleu' in this suite"),
        (("--set", "execution_match.nope=1"), "execution_match has no option 'nope'"),
        # a preset's scorer's own option, checked against its type
        (("--set", "spider_exact_match.attempt=third"), "spider_exact_match.attempt=third"),
    ]
    for args, message in bad:
        result = cli("import", "spider", folder, "--out", tmp_path / "x", *args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, result.output
        assert not (tmp_path / "x").exists()


def test_skip_missing_leaves_out_the_questions_of_an_absent_database(tmp_path: Path) -> None:
    folder = spider_folder(tmp_path, variant=False)
    dev = [*DEV[:2], {"db_id": "gone", "question": "?", "query": "SELECT 1"}, *DEV[2:]]
    (folder / "dev.json").write_text(json.dumps(dev))
    (folder / "dev_gold.sql").unlink()
    preds = write(tmp_path / "p.txt", "\n".join([*PREDICTIONS[:2], "SELECT 2", *PREDICTIONS[2:]]))
    out = tmp_path / "suite"
    result = cli("import", "spider", folder, "-p", f"m={preds}", "--out", out)
    assert result.exit_code == 2
    assert "'gone' not found" in result.output and "--skip-missing" in result.output

    result = cli("import", "spider", folder, "-p", f"m={preds}", "--out", out, "--skip-missing")
    assert result.exit_code == 0, result.output
    assert "1 question(s) left out, their database absent (--skip-missing): gone (1)" in (
        result.output
    )
    cases = [json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()]
    assert [c["id"] for c in cases] == ["0000", "0001", "0003", "0004"]
    written = [json.loads(x) for x in (out / "predictions" / "m.jsonl").read_text().splitlines()]
    assert [(p["case_id"], p["query"]) for p in written] == [
        ("0000", PREDICTIONS[0]),
        ("0001", PREDICTIONS[1]),
        ("0003", PREDICTIONS[2]),
        ("0004", PREDICTIONS[3].split("\t")[0]),
    ]
    # a format without per-question databases cannot honour it
    result = cli("import", "gorilla", folder, "--out", tmp_path / "g", "--skip-missing")
    assert result.exit_code == 2 and "no per-question databases" in result.output


def test_a_formats_help_shows_its_sources_and_options() -> None:
    result = cli("import", "gorilla", "--help")
    assert result.exit_code == 0, result.output
    assert "synthetic-weaviate-queries-with-schemas.json" in result.output  # its sources
    assert "weaviate_ast.mode" in result.output  # its scorers' options
    result = cli("import", "spider", "--help")
    assert "preset: spider (queryeval's conventions" in result.output
    assert "execution_match.keep_distinct" in result.output
    assert "--skip-missing" in result.output
    generic = cli("import", "--help")
    assert generic.exit_code == 0 and "--skip-missing" in generic.output
    assert "synthetic-weaviate" not in generic.output


def test_gorillas_data_folder_picks_the_query_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    query_file, _, _ = write_inputs(data)
    # the repository's other data: schema lists, a second query file, other objects
    write(data / "simple-3-collection-schemas.json", json.dumps([{"weaviate_collections": []}]))
    queries = json.loads(query_file.read_text())
    write(data / "new-synthetic-weaviate-queries-with-schemas.json", json.dumps(queries[:2]))
    write(data / "demo-schema.json", json.dumps({"weaviate_collections": []}))
    write(data / "synthetic-weaviate-queries-with-results.json", json.dumps(queries[1:]))
    result = cli("import", "gorilla", data, "--out", tmp_path / "suite")
    assert result.exit_code == 0, result.output
    assert f"query file: {query_file}" in result.output
    assert "4 other .json file(s) ignored" in result.output
    cases = (tmp_path / "suite" / "cases.jsonl").read_text().splitlines()
    assert len(cases) == len(queries)

    query_file.unlink()  # two candidates, none the repository's: name them both
    result = cli("import", "gorilla", data, "--out", tmp_path / "other")
    assert result.exit_code == 2
    assert "2 query files in the folder" in result.output
    assert "new-synthetic-weaviate-queries-with-schemas.json" in result.output
    assert "synthetic-weaviate-queries-with-results.json" in result.output
    assert "simple-3-collection-schemas.json" not in result.output.split("folder:")[1]
