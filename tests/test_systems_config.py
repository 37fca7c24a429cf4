"""`model:` and `endpoint:` systems are typed and checked by `validate`: what cannot be
honoured is exit code 2 with the file, the line and what was expected; `estimate` counts
their calls without making any."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from fakes.openai_server import FakeOpenAI
from queryeval.cli import app
from queryeval.errors import InputError
from queryeval.runner import load_suite, run_suite
from systems_support import CASES, answering, fenced, model_system, write_suite

MODEL = {"model": "m", "api_key_env": None}


def suite_with(tmp_path: Path, system: dict[str, Any]) -> Path:
    return write_suite(tmp_path, {"name": "gpt", **system})


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize(
    ("system", "message", "key"),
    [
        ({"model": MODEL, "samples": 5}, "temperature 0 gives 5 copies", None),
        (
            {"model": MODEL, "samples": 3, "temperature": 0.7, "refine": {}},
            "cannot be combined",
            None,
        ),
        ({"model": {**MODEL, "temprature": 0.3}}, "unknown field", "temprature"),
        ({"model": {**MODEL, "max_cost_usd": 1}}, "needs a price", None),
        ({"model": MODEL, "samples": 0, "temperature": 1}, "greater than or equal to 1", "samples"),
        (
            {"model": MODEL, "refine": {"max_iterations": 0}},
            "greater than or equal to 1",
            "max_iterations",
        ),
        ({"model": MODEL, "refine": {"feedback": ["style"]}}, "syntax", "- style"),
        (
            {"model": MODEL, "reply": {"read": "pattern", "pattern": "("}},
            "regular expression",
            "pattern: (",
        ),
        ({"predictions": "p.jsonl", "prompt": "p.j2"}, "applies only to a 'model'", None),
        ({"model": MODEL, "params": {"x": [1, 2]}}, "only to a 'callable'", None),
        ({"endpoint": "ftp://x"}, "http:// or https://", "endpoint"),
        ({"model": MODEL, "endpoint": "http://x"}, "exactly one of", None),
        ({"model": MODEL, "task": "sparql"}, "sql", "task"),
    ],
)
def test_bad_system_entries_name_file_and_line(
    tmp_path: Path, system: dict[str, Any], message: str, key: str | None
) -> None:
    path = suite_with(tmp_path, system)
    with pytest.raises(InputError, match=message) as err:
        load_suite(path)
    assert err.value.path == str(path)
    assert err.value.line is not None
    if key is not None:
        assert err.value.line == line_of(path, key)


@pytest.mark.parametrize(
    ("system", "message", "key"),
    [
        ({"model": MODEL, "prompt": "missing.j2"}, "prompt template not found", "prompt:"),
        (
            {"model": MODEL, "refine": {"prompt": "nope.j2"}},
            "feedback template not found",
            "prompt:",
        ),
        ({"model": MODEL, "tools": "tools.yaml"}, "tools file not found", "tools:"),
        ({"model": MODEL, "schema": "schema.sql"}, "schema file not found", "schema:"),
        ({"model": MODEL, "database": "nowhere"}, "unknown database 'nowhere'", "database:"),
        ({"model": MODEL, "examples": {"cases": "ex/*.yaml"}}, "no example cases", "cases: ex/"),
        (
            {"endpoint": {"url": "http://127.0.0.1:1/x", "body": {"q": "{{ question"}}},
            "template error",
            "q:",
        ),
    ],
)
def test_missing_files_and_bad_templates_are_input_errors(
    tmp_path: Path, system: dict[str, Any], message: str, key: str
) -> None:
    path = suite_with(tmp_path, system)
    with pytest.raises(InputError, match=message) as err:
        load_suite(path)
    assert (err.value.path, err.value.line) == (str(path), line_of(path, key))


def test_a_template_error_names_the_template_and_its_line(tmp_path: Path) -> None:
    (tmp_path / "p.j2").write_text("Schema {{ schema }}\n{% for x in examples %}\n{{ x }")
    path = suite_with(tmp_path, {"model": MODEL, "prompt": "p.j2"})
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert f"{tmp_path / 'p.j2'}:3: template error" in result.output


def test_validate_and_run_refuse_a_model_suite_without_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`validate` runs the checks `run` does: a key variable that is not set is exit 2."""
    monkeypatch.delenv("QE_ABSENT_KEY", raising=False)
    path = suite_with(
        tmp_path,
        {"model": {"model": "m", "api_key_env": "QE_ABSENT_KEY"}, "samples": 4, "temperature": 0.9},
    )
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    assert "systems[0].model.api_key_env: environment variable QE_ABSENT_KEY" in result.output
    monkeypatch.setenv("QE_ABSENT_KEY", "set")
    result = CliRunner().invoke(app, ["validate", str(path), "--no-probe"])
    assert result.exit_code == 0, result.output
    assert "ok: 4 cases, 1 system configuration(s)" in result.output
    monkeypatch.delenv("QE_ABSENT_KEY")
    run = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "r")])
    assert run.exit_code == 2 and "QE_ABSENT_KEY" in run.output


def test_estimate_counts_calls_not_cached_and_a_rerun_needs_none(tmp_path: Path) -> None:
    handler = answering({q: fenced(sql) for q, sql in CASES.items()})
    with FakeOpenAI(handler) as server:
        price = {"fake-sql": {"input_per_1k": 0.5, "output_per_1k": 1.5}}
        system = model_system(
            server.base_url,
            samples=2,
            temperature=0.5,
            model={"prices": price, "estimate_output_tokens": 100},
        )
        path = write_suite(tmp_path, system)
        before = CliRunner().invoke(app, ["estimate", str(path)])
        assert server.chat_calls == 0
        run_suite(load_suite(path), tmp_path / "run", progress=False)
        after = CliRunner().invoke(app, ["estimate", str(path)])
        assert server.chat_calls == 8
    assert before.exit_code == 0, before.output
    line = before.output.splitlines()[0]
    assert line.startswith("system gpt (fake-sql): 8 call(s) to make (0 of 8 request(s) cached)")
    tokens = int(line.split("~")[1].split(" prompt")[0].replace(",", ""))
    assert tokens > 8 * 50  # each prompt holds the schema DDL
    cost = float(line.split("est. $")[1].split(" ")[0])
    assert cost == pytest.approx(tokens / 1000 * 0.5 + 800 / 1000 * 1.5, abs=1e-4)
    assert after.output.splitlines()[0].startswith(
        "system gpt (fake-sql): 0 call(s) to make (8 of 8 request(s) cached)"
    )
    assert "judge: none configured" in after.output


def test_estimate_of_a_refinement_loop_and_an_endpoint(tmp_path: Path) -> None:
    path = suite_with(tmp_path, {"model": MODEL, "refine": {"max_iterations": 3}})
    out = CliRunner().invoke(app, ["estimate", str(path)]).output
    assert "4 call(s) to make" in out and "refinement may add up to 8 call(s)" in out
    data = yaml.safe_load(path.read_text())
    data["systems"] = [{"name": "svc", "endpoint": "http://127.0.0.1:9/ask"}]
    path.write_text(yaml.safe_dump(data))
    out = CliRunner().invoke(app, ["estimate", str(path)]).output
    assert "system svc (endpoint): 4 call(s) to make (services are not cached)" in out
