"""Rubrics as data: the shipped ones follow the seeds; suites can override them; bad rubric
files are reported with file and line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from queryeval.config import SuiteConfig
from queryeval.errors import InputError
from queryeval.judges import build_judge, builtin_rubric, builtin_rubric_names, load_rubric

RUBRIC = """\
name: custom
inputs: [question, generated_answer]
system: Grade strictly.
user: |
  {{ question }}
  {{ generated_answer }}
"""


def test_shipped_rubrics() -> None:
    assert {"query_similarity", "answer_correctness"} <= set(builtin_rubric_names())


def test_query_similarity_has_seed_002_criteria_and_inputs() -> None:
    r = builtin_rubric("query_similarity")
    assert list(r.inputs) == ["question", "schema", "gold_query", "generated_query"]
    assert (r.scale.min, r.scale.max) == (0, 1)
    text = r.system.lower()
    for criterion in (
        "table selection",
        "filters",
        "aggregations and transformations",
        "expected result equivalence",
        "query logic and efficiency",
    ):
        assert criterion in text


def test_answer_correctness_has_seed_004_scale() -> None:
    r = builtin_rubric("answer_correctness")
    assert list(r.inputs) == ["question", "expected_answer", "generated_answer"]
    assert r.scale.points == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    for line in (
        "1.0: Completely correct, all key facts present",
        "0.8: Mostly correct, minor details missing",
        "0.6: Partially correct, some key facts present",
        "0.4: Somewhat correct, major gaps",
        "0.2: Mostly incorrect",
        "0.0: Completely incorrect or irrelevant",
    ):
        assert line in r.system


def test_render_fences_every_input_and_is_reproducible() -> None:
    r = builtin_rubric("query_similarity")
    inputs = r.normalise(
        {"question": "errors per level?", "gold_query": "T | count", "generated_query": "T | count"}
    )
    assert inputs["schema"] == "(no schema given)"
    a, b = r.render(inputs), r.render(inputs)
    assert a == b
    nonce = re.search(r'nonce="([0-9a-f]{16})"', a[0]["content"])
    assert nonce is not None
    for name in inputs:
        assert f'<data name="{name}" nonce="{nonce.group(1)}">' in a[1]["content"]
    other = r.render({**inputs, "generated_query": "T | take 1"})
    assert other[0]["content"] != a[0]["content"]  # a different input, a different nonce


def test_required_inputs() -> None:
    r = builtin_rubric("query_similarity")
    with pytest.raises(ValueError, match="gold_query"):
        r.normalise({"question": "q", "generated_query": "x"})


def test_structured_inputs_are_rendered_as_json() -> None:
    r = builtin_rubric("query_similarity")
    inputs = r.normalise(
        {
            "question": "q",
            "gold_query": "a",
            "generated_query": "b",
            "schema": {"Traces": {"level": "string"}},
        }
    )
    assert '"Traces"' in inputs["schema"]


def test_hash_follows_the_content(tmp_path: Path) -> None:
    p = tmp_path / "r.yaml"
    p.write_text(RUBRIC)
    h1 = load_rubric(p).hash
    p.write_text(RUBRIC.replace("strictly", "leniently"))
    assert load_rubric(p).hash != h1
    p.write_text(RUBRIC)
    assert load_rubric(p).hash == h1


def test_undeclared_template_variable_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(RUBRIC + "  {{ expected_answer }}\n")
    with pytest.raises(InputError) as err:
        load_rubric(p)
    assert err.value.path == str(p)
    assert "expected_answer" in err.value.message and err.value.line is not None


def test_template_syntax_error(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(RUBRIC.replace("{{ question }}", "{{ question "))
    with pytest.raises(InputError, match="template error"):
        load_rubric(p)


def test_missing_field(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text("name: x\ninputs: [a]\nsystem: s\n")
    with pytest.raises(InputError, match="missing required field") as err:
        load_rubric(p)
    assert err.value.where == "user"


def suite(tmp_path: Path, judge: dict[str, object]) -> SuiteConfig:
    s = SuiteConfig.model_validate(
        {
            "name": "s",
            "cases": "c.yaml",
            "systems": [{"name": "a", "predictions": "p.jsonl"}],
            "judge": judge,
        }
    )
    s.base_dir = tmp_path
    s.source = tmp_path / "suite.yaml"
    return s


def test_suite_overrides_a_rubric(tmp_path: Path) -> None:
    (tmp_path / "rubrics").mkdir()
    (tmp_path / "rubrics" / "mine.yaml").write_text(
        RUBRIC.replace("name: custom", "name: answer_correctness")
    )
    judge = build_judge(
        suite(tmp_path, {"model": "m", "rubrics": {"answer_correctness": "rubrics/mine.yaml"}}),
        None,
    )
    assert judge is not None
    assert judge.rubric("answer_correctness").system == "Grade strictly."
    assert judge.rubric("query_similarity").name == "query_similarity"  # others stay shipped


def test_missing_rubric_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        build_judge(suite(tmp_path, {"model": "m", "rubrics": {"x": "nope.yaml"}}), None)


def test_bad_judge_config_names_the_field(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        build_judge(suite(tmp_path, {"model": "m", "concurency": 3}), None)
    assert err.value.where == "judge.concurency"
    assert "unknown field" in err.value.message
