"""Hostile input files end as exit 2 naming the file (and the line), never a crash, a
traceback or an out-of-memory kill: anchor bombs, deep nesting, recursive aliases, bytes
that are not UTF-8, endless lines, deeply nested JSON. A byte-order mark is read alike in
YAML and JSONL."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from queryeval.cases import load_cases
from queryeval.cli import app
from queryeval.errors import InputError
from queryeval.systems import PredictionsFile

CASE = '{"id": "q1", "conversation": [{"content": "q", "target": {"answer": "a"}}]}\n'
PREDICTION = '{"case_id": "q1", "answer": "a"}\n'
SUITE = (
    "name: hostile\ncases: {cases}\nsystems:\n  - {{name: s, predictions: {predictions}}}\n"
    "scorers: [exact_match]\nreports: [json]\n"
)
LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
)


def bomb_case() -> str:
    return LAUGHS.replace("a: &a", "x: &a", 1) + CASE.replace('"id"', '"i"')


def write_suite(folder: Path, cases: bytes, predictions: bytes = PREDICTION.encode(),
                cases_name: str = "cases.jsonl") -> Path:  # fmt: skip
    (folder / cases_name).write_bytes(cases)
    (folder / "preds.jsonl").write_bytes(predictions)
    suite = folder / "suite.yaml"
    suite.write_text(SUITE.format(cases=cases_name, predictions="preds.jsonl"))
    return suite


def validate(suite: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["validate", str(suite)])
    return result.exit_code, result.output


# --- YAML ------------------------------------------------------------------------------------

YAML_CASES: dict[str, tuple[bytes, str, int | None]] = {
    # name: (the cases file, words of the message, the line it names)
    "anchor bomb": (LAUGHS.encode(), "anchor bomb", 1),
    "deep flow 100,000": (
        b"- id: q1\n  metadata: {a: " + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
        "nesting depth",
        2,
    ),
    "deep block 100,000": (b"- " * 100_000 + b"x\n", "nesting depth", 1),
    "deep 500": (
        b"- id: q1\n  metadata:\n    a: " + b"[" * 500 + b"]" * 500 + b"\n",
        "nested deeper than 200",
        3,
    ),
    "recursive alias": (b"- &c {id: q1, more: [*c]}\n", "its own anchor", 1),
    "not UTF-8": (b"- id: q1\n  name: caf\xe9\n", "not UTF-8", 2),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xd8", "not UTF-8", 1),
    "NUL bytes": (b"- id: q1\x00\x00\n", "invalid YAML", 1),
}


@pytest.mark.parametrize("name", list(YAML_CASES))
def test_hostile_yaml_cases_are_input_errors(tmp_path: Path, name: str) -> None:
    data, words, line = YAML_CASES[name]
    suite = write_suite(tmp_path, data, cases_name="cases.yaml")
    code, output = validate(suite)
    assert code == 2, output
    assert words in output and "Traceback" not in output
    where = f"cases.yaml:{line}:" if line else "cases.yaml"
    assert where in output, output


def test_an_anchor_bomb_in_the_suite_file_is_an_input_error(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, CASE.encode())
    suite.write_text(suite.read_text() + LAUGHS.replace("a: &a", "z: &a") + "description: *i\n")
    code, output = validate(suite)
    assert code == 2 and "suite.yaml:" in output and "anchor bomb" in output, output


def test_an_anchor_bomb_stays_small_in_memory(tmp_path: Path) -> None:
    """Refused before anything walks it expanded: the process stays under 400 MB."""
    path = tmp_path / "bomb.yaml"
    path.write_text(LAUGHS)
    code = (
        "import sys; from pathlib import Path\n"
        "from queryeval._yaml import load_yaml\n"
        "try:\n    load_yaml(Path(sys.argv[1]))\nexcept Exception as e:\n    print(e)\n"
        "print(next(x.split()[1] for x in open('/proc/self/status') if x.startswith('VmHWM')))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, timeout=60, check=True).stdout.splitlines()  # fmt: skip
    assert "anchor bomb" in out[0]
    assert int(out[-1]) < 400_000, out  # KiB: this process's own peak (VmHWM)


def test_aliases_that_repeat_a_little_still_load(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(
        "- &base {id: q1, tags: [a], conversation: [{content: q, target: {answer: a}}]}\n"
        "- {<<: *base, id: q2}\n"
    )
    assert [c.id for c in load_cases(str(path))] == ["q1", "q2"]


def test_a_bom_is_read_alike_in_yaml_and_jsonl(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    (tmp_path / "a.yaml").write_bytes(bom + b"id: q1\nconversation: [{content: q}]\n")
    (tmp_path / "b.jsonl").write_bytes(bom + CASE.replace("q1", "q2").encode())
    (tmp_path / "p.jsonl").write_bytes(bom + PREDICTION.encode())
    assert [c.id for c in load_cases(["a.yaml", "b.jsonl"], tmp_path)] == ["q1", "q2"]
    assert PredictionsFile(tmp_path / "p.jsonl").get("q1").final.answer == "a"  # type: ignore[union-attr]
    suite = write_suite(tmp_path, bom + CASE.encode(), bom + PREDICTION.encode())
    suite.write_bytes(bom + suite.read_bytes())
    assert validate(suite)[0] == 0


# --- JSONL -----------------------------------------------------------------------------------

JSONL_CASES: dict[str, tuple[Callable[[], tuple[bytes, bytes]], str, str]] = {
    # name: (cases and predictions, words of the message, the place it names)
    "cases not UTF-8": (
        lambda: (CASE.encode() + b'{"id": "q\xff"}\n', PREDICTION.encode()),
        "not UTF-8",
        "cases.jsonl:2:",
    ),
    "predictions binary": (
        lambda: (CASE.encode(), PREDICTION.encode() + b"\x00\xff\xfe\x01\n"),
        "not UTF-8",
        "preds.jsonl:2:",
    ),
    "cases nested 100,000": (
        lambda: (
            CASE.replace(
                "}\n", ', "metadata": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}\n"
            ).encode(),
            PREDICTION.encode(),
        ),
        "invalid JSON",
        "cases.jsonl:1:",
    ),
    "predictions nested 100,000": (
        lambda: (
            CASE.encode(),
            ('{"case_id": "q1", "answer": ' + "[" * 100_000 + "]" * 100_000 + "}\n").encode(),
        ),
        "invalid JSON",
        "preds.jsonl:1:",
    ),
    "cases line past the cap": (
        lambda: (CASE.encode() + b'{"id": "' + b"x" * 5000 + b'"}\n', PREDICTION.encode()),
        "longer than 4096 bytes",
        "cases.jsonl:2:",
    ),
    "predictions line past the cap": (
        lambda: (CASE.encode(), b'{"case_id": "q1", "answer": "' + b"x" * 5000 + b'"}'),
        "longer than 4096 bytes",
        "preds.jsonl:1:",
    ),
}


@pytest.mark.parametrize("name", list(JSONL_CASES))
def test_hostile_jsonl_is_an_input_error(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "cap" in name:
        monkeypatch.setenv("QUERYEVAL_MAX_LINE_BYTES", "4096")
    make, words, place = JSONL_CASES[name]
    cases, predictions = make()
    code, output = validate(write_suite(tmp_path, cases, predictions))
    assert code == 2, output
    assert words in output and place in output and "Traceback" not in output, output


def test_the_line_cap_reads_no_further_than_the_cap(tmp_path: Path) -> None:
    """A file of one endless line is refused after reading the cap, not the whole line."""
    from queryeval._inputs import jsonl_lines

    path = tmp_path / "endless.jsonl"
    with path.open("wb") as f:
        f.truncate(64 * 2**20)  # 64 MiB of NUL bytes, sparse: one line
    with pytest.raises(InputError, match="longer than 16777216 bytes") as err:
        list(jsonl_lines(path))
    assert err.value.line == 1


def test_a_bad_line_cap_setting_is_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from queryeval._inputs import max_line_bytes

    monkeypatch.setenv("QUERYEVAL_MAX_LINE_BYTES", "lots")
    with pytest.raises(InputError, match="QUERYEVAL_MAX_LINE_BYTES"):
        max_line_bytes()
