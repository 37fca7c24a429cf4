"""`run --filter` / `--limit`: a subset of the suite's cases; predictions for the others are
read and checked, then ignored (a prediction for a case the suite lacks is still an error)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from queryeval.cli import app
from test_runner import make_answer_suite


def _run(suite: Path, out: Path, *options: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["run", str(suite), "--out", str(out), *options])
    return result.exit_code, result.stderr


def _ids(out: Path) -> list[str]:
    return [json.loads(line)["case_id"] for line in (out / "results.jsonl").open()]


def test_filter_by_tag_and_id_globs_and_limit(tmp_path: Path) -> None:
    suite = make_answer_suite(tmp_path / "s", 10)
    code, err = _run(suite, tmp_path / "even", "--filter", "even")
    assert code == 0, err
    assert _ids(tmp_path / "even") == ["c-0", "c-2", "c-4", "c-6", "c-8"]
    summary = json.loads((tmp_path / "even" / "summary.json").read_text())
    assert summary["n_cases"] == 5
    info = json.loads((tmp_path / "even" / "run.json").read_text())
    assert info["selection"] == {"filter": ["even"], "limit": None}
    code, err = _run(suite, tmp_path / "two", "--filter", "c-[13579]", "--filter", "c-0",
                     "--limit", "3")  # fmt: skip
    assert code == 0, err
    assert _ids(tmp_path / "two") == ["c-0", "c-1", "c-3"]
    code, err = _run(suite, tmp_path / "all", "--limit", "4")
    assert code == 0, err
    assert _ids(tmp_path / "all") == ["c-0", "c-1", "c-2", "c-3"]
    info = json.loads((tmp_path / "all" / "run.json").read_text())
    assert info["selection"] == {"filter": [], "limit": 4}


def test_a_subset_that_selects_nothing_or_a_bad_limit_is_exit_2(tmp_path: Path) -> None:
    suite = make_answer_suite(tmp_path / "s", 4)
    code, err = _run(suite, tmp_path / "r", "--filter", "nothing-*")
    assert code == 2 and "no case matches --filter nothing-*" in err
    code, err = _run(suite, tmp_path / "r", "--limit", "0")
    assert code == 2 and "--limit 0: expected a positive number" in err
    assert not (tmp_path / "r" / "results.jsonl").exists()


def test_a_prediction_for_a_case_the_suite_lacks_is_still_an_error(tmp_path: Path) -> None:
    suite = make_answer_suite(tmp_path / "s", 4)
    with (tmp_path / "s" / "preds.jsonl").open("a") as f:
        f.write(json.dumps({"case_id": "c-99", "answer": "x"}) + "\n")
    code, err = _run(suite, tmp_path / "r", "--filter", "c-1")
    assert code == 2 and "unknown case id 'c-99'" in err
