"""No process-wide side effects from library code: a fresh process imports queryeval, runs
example suites in process through the CLI (two cases each of SQL on DuckDB and SQLite, KQL
and SDMX, and a callable system from the suite's folder), and then finds the environment,
the warnings filters, every logger's level, handlers and filters, `sys.path` and the atexit
handlers as they were before queryeval was imported.

A fresh process, so what queryeval does at import counts too (in the test process every
module is long imported). Loggers, warnings filters and atexit handlers that a third-party
library sets up when it is imported are that library's own and told apart by where they
come from."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import atexit, json, logging, os, sys, warnings, weakref

# what registers atexit handlers from Python code, and where from
registered = []
_register = atexit.register
def _recording(func, *args, **kwargs):
    frame = sys._getframe(1)
    registered.append((getattr(func, "__module__", None) or "", frame.f_code.co_filename))
    return _register(func, *args, **kwargs)
atexit.register = _recording
weakref.finalize(_recording, int)  # weakref's own one handler for every finalizer, up front

# which code added each warnings filter (a library's at its import is the library's own)
added_by = {}
def _recorded(add):
    def wrapper(*args, **kwargs):
        add(*args, **kwargs)
        new = warnings.filters[-1 if kwargs.get("append") else 0]
        added_by[id(new)] = sys._getframe(1).f_code.co_filename
    return wrapper
warnings.filterwarnings = _recorded(warnings.filterwarnings)
warnings.simplefilter = _recorded(warnings.simplefilter)

def loggers():
    found = {"": logging.getLogger()}
    found.update({n: l for n, l in logging.Logger.manager.loggerDict.items()
                  if isinstance(l, logging.Logger)})
    return {n: (l.level, l.propagate, l.disabled, [type(h).__name__ for h in l.handlers],
                [repr(f) for f in l.filters]) for n, l in found.items()}

def state():
    return {
        "environ": dict(os.environ),
        "path": list(sys.path),
        "filters": [[str(getattr(part, "pattern", getattr(part, "__name__", part)))
                     for part in f] + [added_by.get(id(f), "")] for f in warnings.filters],
        "loggers": loggers(),
        "ncallbacks": atexit._ncallbacks(),
        "nregistered": len(registered),
    }

before = state()
from typer.testing import CliRunner
runner = CliRunner()
before_qe = state()  # typer and click are the application's (the CLI), not library code
import queryeval
from queryeval.cli import app
results = []
for args in json.loads(sys.argv[1]):
    r = runner.invoke(app, args)
    results.append([args[:2], r.exit_code, r.output[-2000:]])
after = state()
print(json.dumps({"before": before, "before_qe": before_qe, "after": after,
                  "registered": registered, "results": results}))
"""

CALLABLE_SUITE = """\
name: callable
cases: cases.jsonl
systems:
  - {name: local, callable: "answers:answer"}
scorers: [exact_match]
reports: [json]
"""


def _queryeval(filename: str) -> bool:
    return f"{Path('src', 'queryeval')}" in filename or "/queryeval/" in filename


def _callable_suite(folder: Path, cases: str, answers: str) -> Path:
    """A suite of a callable system (`answers.py` in its folder); its file."""
    folder.mkdir()
    (folder / "suite.yaml").write_text(CALLABLE_SUITE)
    (folder / "cases.jsonl").write_text(cases)
    (folder / "answers.py").write_text(answers)
    return folder / "suite.yaml"


def _observed(runs: list[list[str]], cwd: Path, timeout: int) -> dict[str, Any]:
    """SCRIPT's report of the CLI `runs` in a fresh process (see the module docstring)."""
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(runs)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def test_a_run_leaves_the_process_as_it_found_it(tmp_path: Path) -> None:
    suite = _callable_suite(
        tmp_path / "callable",
        '{"id": "a", "conversation": [{"content": "q1", "target": {"answer": "yes"}}]}\n'
        '{"id": "b", "conversation": [{"content": "q2", "target": {"answer": "no"}}]}\n',
        "def answer(case):\n    return 'yes'\n",
    )
    runs = [
        ["run", str(ROOT / f"examples/{name}/suite.yaml"), "--out", str(tmp_path / name)]
        for name in ("sql", "kql", "sdmx")
    ]
    runs.append(["run", str(suite), "--out", str(tmp_path / "callable-run")])
    for args in runs:
        args += ["--no-progress", "--limit", "2"]
    out = _observed(runs, tmp_path, 300)
    for args, code, output in out["results"]:
        assert code in (0, 1), f"{args}: exit {code}\n{output}"  # 1: a gate failed, by design
    before, after = out["before_qe"], out["after"]

    assert after["environ"] == before["environ"]
    assert after["path"] == before["path"]
    assert after["filters"][len(after["filters"]) - len(before["filters"]) :] == before["filters"]
    added = after["filters"][: len(after["filters"]) - len(before["filters"])]
    assert [f for f in added if not f[-1] or _queryeval(f[-1])] == []
    assert [r for r in out["registered"] if _queryeval(r[1]) or r[0].startswith("queryeval")] == []
    # every handler registered in Python is a library's own, at its import (none queryeval's)
    assert (
        after["ncallbacks"] - before["ncallbacks"] == after["nregistered"] - before["nregistered"]
    )
    for name, was in before["loggers"].items():
        assert after["loggers"][name] == was, f"logger {name!r} changed"
    for name, now in after["loggers"].items():
        if name not in before["loggers"] and (name == "queryeval" or name.startswith("queryeval.")):
            assert now[0] == 0 and now[3] == [] and now[4] == [], f"logger {name!r} set up"
    # a third-party logger queryeval uses keeps the library's own settings
    sqlglot = after["loggers"].get("sqlglot")
    assert sqlglot is None or (sqlglot[0] == 0 and sqlglot[4] == [])


def test_the_test_checks_something(tmp_path: Path) -> None:
    """The check above sees a change: a plugin that changes the environment is found."""
    suite = _callable_suite(
        tmp_path / "plugin",
        '{"id": "a", "conversation": [{"content": "q", "target": {"answer": "y"}}]}\n',
        "import os, warnings\nos.environ['QE_TEST_LEAK'] = '1'\n"
        "warnings.filterwarnings('ignore', 'leak')\ndef answer(case):\n    return 'y'\n",
    )
    runs = [["run", str(suite), "--out", str(tmp_path / "r"), "--no-progress"]]
    out = _observed(runs, tmp_path, 120)
    assert out["results"][0][1] == 0, out["results"][0][2]
    assert out["after"]["environ"]["QE_TEST_LEAK"] == "1"
    assert "QE_TEST_LEAK" not in out["before_qe"]["environ"]
    leak = [f for f in out["after"]["filters"] if f[1] == "leak"]
    assert len(leak) == 1 and leak[0][-1].endswith("answers.py")  # told apart by its file
    shutil.rmtree(suite.parent)
