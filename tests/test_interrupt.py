"""Ctrl-C stops a whole run within 2 s, even while a synchronous callable hangs, and leaves
a directory that `--resume` continues to the summary of an uninterrupted run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from test_runner import make_answer_suite

SLOW = "  - {name: test_slow_echo, options: {sleep_s: 0.002}}\n"
CASES = 1000
HUNG = "  - {name: hung, callable: 'runner_plugin:hanging_system', timeout_s: 120}\n"


def _start(suite: Path, out: Path, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "queryeval", "run", str(suite), "--out", str(out),
         "--no-progress", *extra],
        cwd=suite.parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip


def _interrupt(proc: subprocess.Popen[bytes]) -> float:
    """SIGINT (what Ctrl-C sends); the seconds until the process ended."""
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait(30)
    return time.monotonic() - start


def _wait_for_records(results: Path, at_least: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if results.exists() and results.read_bytes().count(b"\n") >= at_least:
            return
        time.sleep(0.01)
    raise AssertionError("the run wrote too little")


def test_ctrl_c_stops_the_run_and_resume_finishes_it(tmp_path: Path) -> None:
    # interrupted after 200 records, the run has at least 800 x 2 ms of sleep still to do
    suite = make_answer_suite(tmp_path / "s", CASES, scorers=SLOW)
    ref = _start(suite, tmp_path / "ref")
    assert ref.wait(120) == 0
    proc = _start(suite, tmp_path / "run")
    _wait_for_records(tmp_path / "run" / "results.jsonl", 200)
    assert _interrupt(proc) < 2.0
    assert proc.returncode != 0
    kept = (tmp_path / "run" / "results.jsonl").read_bytes().count(b"\n")
    assert kept < CASES
    again = _start(suite, tmp_path / "run", "--resume")
    assert again.wait(120) == 0
    ids = [json.loads(x)["case_id"] for x in (tmp_path / "run" / "results.jsonl").open()]
    assert len(ids) == len(set(ids)) == CASES
    summary = (tmp_path / "run" / "summary.json").read_bytes()
    assert summary == (tmp_path / "ref" / "summary.json").read_bytes()


def test_ctrl_c_stops_a_run_waiting_on_a_hung_callable(tmp_path: Path) -> None:
    suite = make_answer_suite(tmp_path / "s", 4, systems=HUNG)
    proc = _start(suite, tmp_path / "run")
    _wait_for_records(tmp_path / "run" / "results.jsonl", 1)  # c-0 answered; c-1 hangs
    time.sleep(0.3)
    assert _interrupt(proc) < 2.0
