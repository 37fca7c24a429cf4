"""A benchmark's Python test function under its wall clock: the time it waits (on a
database server, here asleep) is not its CPU time, so a wall clock run out on a loaded
machine is tried once more on a quiet slot; a slow machine changes no verdict."""

from __future__ import annotations

import gc
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from queryeval.engines import _cost, _disposable_python


def _sleeps_first(marker: Path) -> str:
    """A test function sleeping past its wall clock the first time it runs only."""
    return (
        "def test_case(pred_sqls, sol_sqls, db, conn, conditions=None):\n"
        "    import os, time\n"
        f"    if not os.path.exists({str(marker)!r}):\n"
        f"        open({str(marker)!r}, 'w').close()\n"
        "        time.sleep(60)\n"
    )


def _run(tmp_path: Path, source: str) -> tuple[str, str]:
    access = {"kind": "sqlite", "path": str(tmp_path / "copy.sqlite")}
    return _disposable_python.run_python_test(
        source, access, pred_sqls=[], sol_sqls=[], timeout_s=1, filesystem="open"
    )


@pytest.mark.parametrize("loaded", [True, False])
def test_wall_clock_on_a_loaded_machine(tmp_path: Path, monkeypatch: Any, loaded: bool) -> None:
    """Loaded: run again on a quiet slot, where it passes. Not loaded: the wall clock is
    final, the evaluator's error naming the CPU time the function spent (a sleep: little);
    the child's pipes closed either way."""
    wall = 1.2 if loaded else 0.8  # loaded: the quiet run, asleep no more, ends within it
    monkeypatch.setattr(_disposable_python, "_wall_s", lambda timeout_s: wall)
    monkeypatch.setattr(_cost, "machine_loaded", lambda: loaded)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status, message = _run(tmp_path, _sleeps_first(tmp_path / "first"))
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
    if loaded:
        assert (tmp_path / "first").exists()  # the first run slept
        assert (status, message) == ("passed", "")
        return
    assert status == "error" and f"wall clock, {wall:g}s" in message, message
    spent = re.search(r"([\d.]+)s of its own CPU time", message)
    assert spent is not None and float(spent.group(1)) < 1.0, message
