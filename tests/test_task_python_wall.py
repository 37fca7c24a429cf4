"""A benchmark's Python test function is walled off (Landlock): it reads no file outside
the interpreter's folders, writes none outside its working folder and the copy's, deletes
no database, spawns no shell; each attempt refused, the originals unchanged. Where the
kernel cannot build the wall the function is not run (unsupported) unless allowed open."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from queryeval.cases import Attempt, Case, Output
from queryeval.config import ScorerConfig
from queryeval.engines import _disposable_python
from queryeval.scorers import build_scorer, score_case
from task_support import ClubContext, checksum, club_engine, needs_wall

_HEAD = "def test_case(pred_sqls, sol_sqls, db, conn, conditions=None):\n"


def _score(engine: Any, body: str, **options: Any) -> Any:
    task = {"database": "club", "tests": [{"name": "t", "python": _HEAD + body}]}
    case = Case.model_validate(
        {"id": "c", "conversation": [{"role": "user", "content": "c", "target": {"task": task}}]}
    )
    scorer = build_scorer(ScorerConfig(name="task_tests", options=options))
    output = Output(attempts=[Attempt(query="UPDATE member SET score = 0 WHERE id = 1")])
    return score_case(scorer, case, output, ClubContext(engine))


@pytest.fixture(scope="module")
def sqlite_engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    built = club_engine("sqlite", tmp_path_factory.mktemp("wall"))
    yield built
    built.close()


@needs_wall
def test_hostile_test_functions_refused(sqlite_engine: Any, tmp_path: Path) -> None:
    """Reading a secret, writing outside, deleting the database, spawning a shell: each
    refused (PermissionError); under the official rule a failing test (0), else the
    evaluator's error (unscored); nothing outside changed. A well-behaved function still
    reads and writes the copy, its working folder and its temporary files."""
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$secret")
    secret.chmod(0o600)
    original = Path(sqlite_engine.path)
    before = checksum(sqlite_engine)
    marks = {n: tmp_path / n for n in ("written", "shell", "system")}
    hostile = {
        "read": f"    print(open({str(secret)!r}).read())\n",
        "list": f"    print(__import__('os').listdir({str(tmp_path)!r}))\n",
        "write": f"    open({str(marks['written'])!r}, 'w').write('x')\n",
        "delete": f"    __import__('os').remove({str(original)!r})\n",
        "shell": f"    __import__('subprocess').run(['/bin/sh', '-c', 'touch {marks['shell']}'])\n",
        "system": f"    assert __import__('os').system('touch {marks['system']}') == 0\n",
    }
    for what, body in hostile.items():
        official = _score(sqlite_engine, body, python_exceptions="fail")
        assert official.value == 0.0, (what, official)
        message = official.details["failed"][0]["message"]
        assert "PermissionError" in message or what == "system", (what, message)
        if what in ("read", "delete"):  # outside the official rule: the evaluator's
            default = _score(sqlite_engine, body)
            assert default.status == "unscored" and default.details["evaluator_error"], what
    assert not any(m.exists() for m in marks.values())
    assert secret.read_text() == "root:$6$secret" and checksum(sqlite_engine) == before
    benign = (
        "    import tempfile\n"
        "    with tempfile.TemporaryFile() as f:\n"
        "        f.write(b'x')\n"
        "    open('here.txt', 'w').write('x')\n"
        "    rows, err, _ = execute_queries(['SELECT score FROM member WHERE id = 1'], db, conn)\n"
        "    assert rows == [(0,)], rows\n"
        "    execute_queries(['DELETE FROM member'], db, conn)\n"
    )
    score = _score(sqlite_engine, benign)
    assert score.value == 1.0 and score.details["python_sandbox"]["filesystem"] == "walled"


def _child_script(change: str, call: str) -> list[str]:
    """A child running `_disposable_python` with `change` made, then `call`."""
    script = (
        "import importlib.util as u\n"
        f"s = u.spec_from_file_location('c', {_disposable_python.__file__!r})\n"
        "m = u.module_from_spec(s); s.loader.exec_module(m)\n"
        f"{change}\n{call}\n"
    )
    return [sys.executable, "-I", "-c", script]


def test_wall_missing_builds_the_wall(monkeypatch: Any) -> None:
    """`wall_missing` builds the wall in a child: a kernel that reports Landlock but
    refuses restrict_self (or no_new_privs: a seccomp filter) has no wall either, and the
    tests needing one are skipped rather than failing with unsupported."""
    refused = _child_script("m._LANDLOCK_RESTRICT = -1", "print(m._wall([]))")  # ENOSYS
    with monkeypatch.context() as patch:
        patch.setattr(_disposable_python, "_wall_command", lambda: refused)
        _disposable_python.wall_missing.cache_clear()
        why = _disposable_python.wall_missing()
    _disposable_python.wall_missing.cache_clear()
    assert why is not None and ("refused to restrict" in why or "no Landlock" in why), why


def _child(job: dict[str, Any]) -> dict[str, Any]:
    """The child's verdict with Landlock made unavailable (an unknown system call)."""
    command = _child_script("m._LANDLOCK_CREATE = -1", "m._child()")
    done = subprocess.run(command, input=json.dumps(job), capture_output=True, text=True,
                          check=True, cwd=job["folder"])  # fmt: skip
    return json.loads(done.stdout.splitlines()[-1])


def test_no_wall_is_unsupported(sqlite_engine: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """Without Landlock a test function is not run (unsupported), or runs unwalled when
    the caller chose `open`; the scorer counts `unsupported` apart (unscored)."""
    job = {"source": _HEAD + "    open('../outside.txt', 'w').write('x')\n",
           "access": {"kind": "sqlite", "path": str(sqlite_engine.path)}, "pred_sqls": [],
           "sol_sqls": [], "kwargs": {}, "cpu_s": 5, "helpers": "livesqlbench",
           "memory": 2**30, "filesystem": "walled", "folder": str(tmp_path / "work")}  # fmt: skip
    (tmp_path / "work").mkdir()
    refused = _child(job)
    assert refused["status"] == "unsupported" and "no Landlock" in refused["message"]
    assert not (tmp_path / "outside.txt").exists()
    opened = _child({**job, "filesystem": "open"})
    assert opened["status"] == "passed" and opened["filesystem"].startswith("open")
    assert (tmp_path / "outside.txt").exists()  # unwalled indeed: why it is not the default

    def unsupported(*args: Any, **kwargs: Any) -> tuple[str, str]:
        return "unsupported", "no file-system wall for a test function: no Landlock"

    monkeypatch.setattr("queryeval.engines.run_python_test", unsupported)
    score = _score(sqlite_engine, "    pass\n")
    assert score.status == "unscored" and "no Landlock" in score.details["unsupported"]


def test_child_environment_as_documented(monkeypatch: Any) -> None:
    """docs/tasks.md names every variable a test function's environment may hold."""
    for name in ("PATH", "LANG", "LC_ALL", "HOME", "LC_CTYPE", "PGPASSWORD", "SECRET"):
        monkeypatch.setenv(name, "x")
    doc = (Path(__file__).parents[1] / "docs" / "tasks.md").read_text(encoding="utf-8")
    sentence = re.search(r"an environment with ((?:`\w+`,?\s*(?:and\s*)?)+)only", doc)
    assert sentence is not None
    assert set(re.findall(r"`(\w+)`", sentence.group(1))) == {
        *_disposable_python._child_env(),
        "TMPDIR",
    }
