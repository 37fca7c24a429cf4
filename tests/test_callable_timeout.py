"""A synchronous callable's `timeout_s` binds even when the call never returns: the case ends
as a system timeout within 1.5 x the limit, the run goes on, and the process exits without
waiting for the abandoned thread."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from queryeval.config import load_suite
from queryeval.runner import run_suite
from test_runner import make_answer_suite

LIMIT_S = 0.4
SYSTEMS = f"  - {{name: hung, callable: 'runner_plugin:hanging_system', timeout_s: {LIMIT_S}}}\n"


def test_a_sync_callable_that_never_returns_times_out_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    suite = load_suite(make_answer_suite(tmp_path / "s", 4, systems=SYSTEMS))
    plugin = sys.modules["runner_plugin"]
    start = time.perf_counter()
    try:
        run_suite(suite, tmp_path / "run", progress=False)
        elapsed = time.perf_counter() - start
    finally:
        plugin.RELEASE.set()  # type: ignore[attr-defined]
    records = {r["case_id"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl")
                                               .read_text().splitlines())}  # fmt: skip
    assert set(records) == {"c-0", "c-1", "c-2", "c-3"}
    for hung in ("c-1", "c-3"):
        assert "timed out" in records[hung]["error"] and records[hung]["passed"] is False
        assert records[hung]["output"]["latency_s"] < 1.5 * LIMIT_S
    assert records["c-2"]["passed"] is True
    # the two hung calls run side by side or one after the other: never past 1.5 x each
    assert elapsed < 2 * 1.5 * LIMIT_S + 5, elapsed


def test_the_process_exits_without_waiting_for_a_hung_call(tmp_path: Path) -> None:
    suite = make_answer_suite(tmp_path / "s", 2, systems=SYSTEMS)
    start = time.perf_counter()
    src = str(Path(__file__).resolve().parents[1] / "src")  # this checkout's queryeval
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "queryeval", "run", str(suite), "--out", str(tmp_path / "run")],
        env=env,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 30, elapsed  # the call sleeps for an hour
    lines = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    assert any("timed out" in (json.loads(x).get("error") or "") for x in lines)
