"""The run log typed to its leaves (issue 30): a real run's summary.json and run.json read
by the typed readers hold only keys their TypedDicts name, each value of the declared type,
and write back byte-identical; an older run's files still read; a file of the wrong shape
is an InputError naming it; no package but `log` spells a run file's name."""

from __future__ import annotations

import ast
import re
import shutil
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

import orjson
import pytest

from queryeval.errors import InputError
from queryeval.log import (
    RESULTS,
    REVIEW,
    RUN,
    RUN_FILES,
    SUMMARY,
    LogWriter,
    RunInfo,
    Summary,
    read_log,
    read_review,
    read_run_info,
    read_summary,
)

ROOT = Path(__file__).resolve().parents[1]
OLDER_RUN = ROOT / "examples" / "regression" / "baseline-run"  # written 2026-11-22


def problems(value: Any, declared: Any, where: str = "") -> list[str]:
    """Where `value` (JSON as read) is not of the `declared` type: a key a TypedDict does
    not name, a required key missing, a leaf of another type."""
    if declared is Any:
        return []
    if is_typeddict(declared):
        if not isinstance(value, dict):
            return [f"{where}: expected an object"]
        hints = get_type_hints(declared)
        found = [f"{where}.{k}: not typed" for k in value if k not in hints]
        found += [f"{where}.{k}: missing" for k in declared.__required_keys__ - set(value)]
        for key, item in value.items():
            if key in hints:
                found += problems(item, hints[key], f"{where}.{key}")
        return found
    origin, args = get_origin(declared), get_args(declared)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return []
        options = [a for a in args if a is not type(None)]
        tried = [problems(value, option, where) for option in options]
        return [] if any(not t for t in tried) else tried[0]
    if origin is Literal:
        return [] if value in args else [f"{where}: {value!r} not one of {args}"]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: expected an object"]
        return [p for k, v in value.items() for p in problems(v, args[1], f"{where}.{k}")]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: expected a list"]
        return [p for i, v in enumerate(value) for p in problems(v, args[0], f"{where}[{i}]")]
    leaf = {float: (int, float), int: (int,), str: (str,), bool: (bool,)}[declared]
    if not isinstance(value, leaf) or (declared is not bool and isinstance(value, bool)):
        return [f"{where}: {value!r} is not {declared.__name__}"]
    return []


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SDMX example run (two systems, sub-metrics, a scorer's own figures, a gate), its
    reports left out."""
    from queryeval.runner import load_suite, run_suite

    suite = load_suite(ROOT / "examples" / "sdmx" / "suite.yaml")
    out = tmp_path_factory.mktemp("typed") / "sdmx"
    run_suite(suite, out, progress=False, write_reports=False)
    return out


def test_a_real_run_reads_typed_to_its_leaves(real_run: Path) -> None:
    summary, info = read_summary(real_run), read_run_info(real_run)
    assert summary is not None and info is not None
    assert summary == orjson.loads((real_run / SUMMARY).read_bytes())
    assert info == orjson.loads((real_run / RUN).read_bytes())
    assert problems(summary, Summary, "summary") == []
    assert problems(info, RunInfo, "run") == []
    assert summary["gates"] and summary["systems"]["baseline"]["scorers"]["term_selection"]
    # what the walk checks can fail: a figure of the wrong type, a key no type names
    system = summary["systems"]["baseline"]
    wrong = {**summary, "systems": {"x": {**system, "pass_rate": "high", "extra": 1}}}
    assert problems(wrong, Summary) == [".systems.x.extra: not typed",
                                        ".systems.x.pass_rate: 'high' is not float"]  # fmt: skip


def test_a_real_run_writes_back_byte_identical(real_run: Path, tmp_path: Path) -> None:
    """The typed records through the one writer: the same bytes as the run wrote."""
    writer = LogWriter(tmp_path)
    for name, data in ((SUMMARY, read_summary(real_run)), (RUN, read_run_info(real_run))):
        writer.write_json(name, data)
        assert (tmp_path / name).read_bytes() == (real_run / name).read_bytes()
    log = read_log(real_run)
    assert log.summary == read_summary(real_run) and log.info == read_run_info(real_run)
    assert len(log.records) == log.summary["n_cases"] * len(log.summary["systems"])


def test_an_older_run_still_reads(tmp_path: Path) -> None:
    """A run written a week before the types (no run.json; its summary without `flagged`,
    `no_verdict_share`, `unscored_share` or `failed_outputs`) reads and is of the types."""
    run = tmp_path / "older"
    shutil.copytree(OLDER_RUN, run)
    log = read_log(run)
    assert log.info is None and log.review is None
    assert log.summary is not None and problems(log.summary, Summary, "summary") == []
    assert "flagged" not in next(iter(log.summary["systems"].values()))
    assert len(log.records) == log.summary["n_cases"] * len(log.summary["systems"])


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        (SUMMARY, '{"suite": "s", "n_cases": 1, "systems": []}', "systems"),
        (SUMMARY, '{"suite": "s", "systems": {}}', "n_cases"),
        (SUMMARY, '{"suite": "s", "n_cases": 1, "systems": {"a": 3}}', "systems.a"),
        (RUN, '{"suite": "s", "scorers": []}', "scorers"),
        (RUN, "[1, 2]", None),
        (REVIEW, '{"records": {}}', "records"),
    ],
)
def test_a_file_of_the_wrong_shape_is_an_input_error(
    tmp_path: Path, name: str, text: str, where: str | None
) -> None:
    (tmp_path / RESULTS).write_text("")
    (tmp_path / name).write_text(text)
    reader = {SUMMARY: read_summary, RUN: read_run_info, REVIEW: read_review}[name]
    with pytest.raises(InputError) as caught:
        reader(tmp_path)
    assert caught.value.path == str(tmp_path / name) and caught.value.where == where
    with pytest.raises(InputError):
        read_log(tmp_path)


# packages still spelling run files until they adopt queryeval.log's names (issue 30)
ADOPTING = ("runner", "viewer")


def test_the_run_files_are_named_by_log_alone() -> None:
    """No code outside `queryeval.log` (docstrings aside) spells a run file's name."""
    names = {*RUN_FILES, ".lock"}
    quoted = re.compile("|".join(f"[\"']{re.escape(n)}" for n in [*names, "overlay-"]))
    found = []
    package = ROOT / "src" / "queryeval"
    for path in sorted(package.rglob("*.py")):
        part = path.relative_to(package).parts[0]
        text = path.read_text(encoding="utf-8")
        if part == "log" or part in ADOPTING or not quoted.search(text):
            continue
        tree = ast.parse(text)
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and id(node) not in docstrings:
                text = node.value
                if isinstance(text, str) and (text in names or text.startswith("overlay-")):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text!r}")
    assert not found, "\n".join(found)
