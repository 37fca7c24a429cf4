"""Cases, suites and predictions load; bad input names the file, the line and the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from queryeval.cases import load_cases, load_cases_file
from queryeval.errors import InputError
from queryeval.runner import load_suite
from queryeval.systems import PredictionsFile

SEED_CASE = """\
id: c48d7624-d376-48ca-b2d8-386999befb45
name: could_you_give_me_the_population_numbers_for_mexico
tags:
- imf
- weo
comments: ''
conversation:
- role: user
  content: Could you give me the population numbers for Mexico?
  target:
    indicator_selection:
    - dataset_id: IMF.RES:WEO
      dimensions:
      - dimension_name: INDICATOR
        values:
        - id: LP
          name: Population, Persons for countries / Index for country groups
      - dimension_name: COUNTRY
        values:
        - id: MEX
          name: Mexico
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_seed_case_loads_unchanged(tmp_path: Path) -> None:
    (case,) = load_cases_file(write(tmp_path / "c.yaml", SEED_CASE))
    assert case.id == "c48d7624-d376-48ca-b2d8-386999befb45"
    assert case.question == "Could you give me the population numbers for Mexico?"
    target = case.target
    assert target is not None and target.indicator_selection is not None
    dims = target.indicator_selection[0].get("dimensions") or []
    assert [d["dimension_name"] for d in dims] == ["INDICATOR", "COUNTRY"]
    assert dims[0].get("values") == [
        {"id": "LP", "name": "Population, Persons for countries / Index for country groups"}
    ]


def test_list_files_multi_documents_jsonl_and_globs(tmp_path: Path) -> None:
    write(tmp_path / "a" / "one.yaml", SEED_CASE)
    write(
        tmp_path / "a" / "many.yaml",
        "- id: 1\n  conversation: [{content: q1}]\n- id: 2\n  conversation: [{content: q2}]\n",
    )
    write(
        tmp_path / "a" / "docs.yml",
        "id: d1\nconversation: [{content: x}]\n---\nid: d2\nconversation: [{content: y}]\n",
    )
    write(tmp_path / "b.jsonl", '{"id": "j1", "conversation": [{"content": "z"}]}\n\n')
    cases = load_cases(["a/*.y*ml", "b.jsonl"], tmp_path)
    assert sorted(c.id for c in cases) == sorted(
        ["1", "2", "c48d7624-d376-48ca-b2d8-386999befb45", "d1", "d2", "j1"]
    )


def test_query_and_answer_shorthands_and_any_of_targets(tmp_path: Path) -> None:
    text = (
        "id: q\nconversation:\n- content: how many?\n  target:\n"
        "  - {query: SELECT 1}\n  - {query: {text: SELECT 1.0, language: sql}}\n"
    )
    (case,) = load_cases_file(write(tmp_path / "q.yaml", text))
    assert [t.query.text for t in case.targets if t.query and not isinstance(t.query, str)] == [
        "SELECT 1",
        "SELECT 1.0",
    ]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("id: x\nconversation: [\n", 3, "invalid YAML"),
        ("id: x\nname: n\n", 1, "missing required field"),
        ("id: x\nconversation:\n- content: q\n  colour: red\n", 4, "unknown field"),
        ("id: x\nconversation:\n- content: q\n  role: robot\n", 4, "role"),
        ("id: x\nconversation: []\n", 2, "at least 1"),
        (
            "id: x\nconversation:\n- content: q\n  target:\n    indicator_selection:\n"
            "    - dataset_id: D\n      dimensions:\n      - dimension_nam: X\n",
            8,
            "conversation[0].target.indicator_selection[0].dimensions[0].dimension_name: missing",
        ),
    ],
)
def test_bad_cases_name_file_and_line(tmp_path: Path, text: str, line: int, fragment: str) -> None:
    path = write(tmp_path / "bad.yaml", text)
    with pytest.raises(InputError) as info:
        load_cases_file(path)
    err = info.value
    assert err.path == str(path)
    assert err.line == line
    assert fragment in err.render()


def test_bad_jsonl_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", '{"id": "a", "conversation": [{"content": "q"}]}\n{oops\n')
    with pytest.raises(InputError) as info:
        load_cases_file(path)
    assert info.value.line == 2 and "invalid JSON" in info.value.message


def test_duplicate_case_ids_are_refused(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", "id: same\nconversation: [{content: q}]\n")
    write(
        tmp_path / "b.yaml",
        "- id: other\n  conversation: [{content: q}]\n- id: same\n  conversation: [{content: q}]\n",
    )
    with pytest.raises(InputError, match="duplicate case id 'same'") as info:
        load_cases("*.yaml", tmp_path)
    assert info.value.path == str(tmp_path / "b.yaml") and info.value.line == 3
    assert f"first defined at {tmp_path / 'a.yaml'}:1" in info.value.message


def test_missing_case_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_cases("nowhere.yaml", tmp_path)


SUITE = """\
name: s
cases: cases.yaml
systems:
  - name: base
    predictions: preds.jsonl
scorers:
  - name: term_selection
"""


def _suite_dir(tmp_path: Path, suite: str = SUITE, preds: str = "") -> Path:
    write(tmp_path / "cases.yaml", SEED_CASE)
    write(tmp_path / "preds.jsonl", preds)
    return write(tmp_path / "suite.yaml", suite)


def test_suite_loads_and_resolves_paths(tmp_path: Path) -> None:
    suite = load_suite(_suite_dir(tmp_path))
    assert suite.name == "s" and suite.base_dir == tmp_path.resolve()
    assert suite.resolve("preds.jsonl") == tmp_path.resolve() / "preds.jsonl"


def test_preset_fills_scorers(tmp_path: Path) -> None:
    text = SUITE.split("scorers:")[0] + "preset: sdmx_selection\n"
    suite = load_suite(_suite_dir(tmp_path, text))
    assert [s.name for s in suite.scorers] == ["term_selection"]


@pytest.mark.parametrize(
    ("suite_text", "line", "fragment"),
    [
        (SUITE.replace("term_selection", "bleurt"), 7, "unknown scorer 'bleurt'"),
        (SUITE + "    options: {match_on: name}\n", 8, "match_on"),
        (SUITE.replace("predictions: preds.jsonl", "colour: red"), 5, "unknown field"),
        (SUITE.replace("predictions: preds.jsonl", "concurrency: 2"), 4, "exactly one of"),
        (SUITE + "preset: nope\n", 8, "unknown preset"),
        (SUITE.replace("name: s\n", ""), 1, "name"),
    ],
)
def test_bad_suites_name_line(tmp_path: Path, suite_text: str, line: int, fragment: str) -> None:
    path = _suite_dir(tmp_path, suite_text)
    with pytest.raises(InputError) as info:
        load_suite(path)
    assert info.value.path == str(path)
    assert info.value.line == line
    assert fragment in info.value.render()


def test_params_grid_expands_cartesian_and_explicit() -> None:
    from queryeval.config import SystemConfig

    grid = SystemConfig(name="rag", callable="m:f", params={"k": [1, 3], "mode": ["a", "b"]})
    names = [n for n, _ in grid.configurations()]
    assert names == ["rag[k=1,mode=a]", "rag[k=1,mode=b]", "rag[k=3,mode=a]", "rag[k=3,mode=b]"]
    explicit = SystemConfig(name="rag", callable="m:f", params=[{"k": 5}, {"k": 7, "x": 1}])
    assert [p for _, p in explicit.configurations()] == [{"k": 5}, {"k": 7, "x": 1}]


def test_predictions_shorthands_and_several_attempts(tmp_path: Path) -> None:
    path = write(
        tmp_path / "p.jsonl",
        '{"case_id": "a", "attempt": 2, "query": "SELECT 2"}\n'
        '{"case_id": "a", "attempt": 1, "query": "SELECT 1"}\n'
        '{"case_id": "b", "output": {"attempts": [{"answer": "Paris"}], "cost": 0.1}}\n'
        '{"case_id": "c", "error": "crashed"}\n'
        '{"case_id": 4, "answer": "x"}\n',
    )
    preds = PredictionsFile(path)
    assert [a.query for a in preds.get("a").attempts] == ["SELECT 1", "SELECT 2"]
    assert preds.get("b").final is not None and preds.get("b").final.answer == "Paris"
    assert preds.get("b").cost == 0.1
    assert preds.get("c").error == "crashed"
    assert preds.get("4").final is not None
    assert preds.get("zzz").error == "no prediction for this case"
    assert preds.get("zzz").failure == "missing"


def test_an_output_of_the_wrong_type_is_the_systems_failure(tmp_path: Path) -> None:
    """A readable record whose output has the wrong type is what the system produced: a
    failure of that case (invalid output), not a bad input that stops the run."""
    path = write(
        tmp_path / "p.jsonl",
        '{"case_id": "a", "query": 42}\n{"case_id": "b", "findings": "bad"}\n'
        '{"case_id": "c", "output": ["a", "list"]}\n',
    )
    preds = PredictionsFile(path, known_ids={"a", "b", "c"})
    for case_id, field in (("a", "query"), ("b", "findings"), ("c", "list")):
        output = preds.get(case_id)
        assert output.failure == "invalid_output" and not output.attempts
        assert output.error is not None and field in output.error


def test_a_plain_string_is_the_text_of_the_task(tmp_path: Path) -> None:
    path = write(tmp_path / "p.jsonl", '{"case_id": "a", "output": "SELECT 1"}\n')
    assert PredictionsFile(path, text_fields=("query",)).get("a").attempts[0].query == "SELECT 1"
    assert PredictionsFile(path).get("a").attempts[0].answer == "SELECT 1"


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ('{"case_id": "a", "query": "x"}\n{"case_id": "ghost", "query": "y"}\n', 2, "unknown case"),
        ('{"case_id": "a"}\n{not json\n', 2, "invalid JSON"),
        ('{"query": "x"}\n', 1, "case_id"),
        ('{"case_id": "a", "query": "x"}\n{"case_id": "a", "query": "y"}\n', 2, "line 1"),
        ('{"case_id": "a", "attempt": 1}\n{"case_id": "a", "attempt": 1}\n', 2, "attempt 1"),
        ('{"case_id": "a", "attempt": 1}\n{"case_id": "a"}\n', 2, "second prediction"),
        ('{"case_id": "a", "attempt": "one"}\n', 1, "integer"),
        ("\n\n", 1, "empty"),
    ],
)
def test_bad_predictions_name_line(tmp_path: Path, text: str, line: int, fragment: str) -> None:
    path = write(tmp_path / "p.jsonl", text)
    with pytest.raises(InputError) as info:
        PredictionsFile(path, known_ids={"a"})
    assert info.value.line == line
    assert fragment in info.value.render()


def test_a_predictions_line_of_two_json_values_is_refused_naming_its_line(tmp_path: Path) -> None:
    """`{...}, {...}` is not one record (the shorthand reader once read it as two attempts):
    every reader refuses it as invalid JSON at its line, and the first pass of a large run
    reads the same key as the plain reader for every line it accepts."""
    from queryeval.systems import prediction_key, read_prediction_line

    path = tmp_path / "p.jsonl"
    two = b'{"case_id": "a", "query": "x"}, {"query": "y"}'
    for read in (read_prediction_line, prediction_key):
        with pytest.raises(InputError, match="invalid JSON") as info:
            read(two, path, 3)
        assert info.value.line == 3
    for line in (b'{"case_id": 7, "query": "q"}', b'{"case_id": "b", "attempt": 2, "answer": "a"}'):
        record = read_prediction_line(line, path, 1)
        assert prediction_key(line, path, 1) == (record.case_id, record.attempt)


def test_an_input_error_keeps_its_place_when_pickled() -> None:
    import pickle

    error = InputError("bad", path="cases.jsonl", line=4, where="id")
    again = pickle.loads(pickle.dumps(error))
    assert (again.message, again.path, again.line, again.where) == ("bad", "cases.jsonl", 4, "id")
    assert str(again) == str(error) == "cases.jsonl:4: id: bad"
