"""Ctrl-C stops a whole run at once (no record written after it) and the process ends within
2 s, even while a synchronous callable hangs, and leaves a directory that `--resume`
continues to the summary of an uninterrupted run. On a loaded machine the 2 s become the
time the same command took to start: ending must not cost more than starting did."""

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


class _Run:
    """`queryeval run` in a process of its own, timed from its start."""

    def __init__(self, suite: Path, out: Path, *extra: str) -> None:
        self.results = out / "results.jsonl"
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "queryeval", "run", str(suite), "--out", str(out),
             "--no-progress", *extra],
            cwd=suite.parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        self.startup = 0.0

    def records(self) -> int:
        return self.results.read_bytes().count(b"\n") if self.results.exists() else 0

    def wait_for_records(self, at_least: int) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.records() >= 1 and not self.startup:
                self.startup = time.monotonic() - self.started  # to its first record
            if self.records() >= at_least:
                return
            time.sleep(0.01)
        raise AssertionError("the run wrote too little")

    def interrupt(self) -> tuple[float, int]:
        """SIGINT (what Ctrl-C sends): (the seconds until the process ended, the records
        written after the signal)."""
        before = self.records()
        start = time.monotonic()
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("the run did not end within 30 s of Ctrl-C") from None
        return time.monotonic() - start, self.records() - before

    @property
    def limit(self) -> float:
        return max(2.0, self.startup)


def test_ctrl_c_stops_the_run_and_resume_finishes_it(tmp_path: Path) -> None:
    # interrupted after 200 records, the run has at least 800 x 2 ms of sleep still to do
    suite = make_answer_suite(tmp_path / "s", CASES, scorers=SLOW)
    ref = _Run(suite, tmp_path / "ref")
    assert ref.proc.wait(120) == 0
    run = _Run(suite, tmp_path / "run")
    run.wait_for_records(200)
    seconds, after = run.interrupt()
    assert seconds < run.limit
    assert after <= 1  # the record being scored, at most
    assert run.proc.returncode != 0
    assert run.records() < CASES
    again = _Run(suite, tmp_path / "run", "--resume")
    assert again.proc.wait(120) == 0
    ids = [json.loads(x)["case_id"] for x in (tmp_path / "run" / "results.jsonl").open()]
    assert len(ids) == len(set(ids)) == CASES
    summary = (tmp_path / "run" / "summary.json").read_bytes()
    assert summary == (tmp_path / "ref" / "summary.json").read_bytes()


def test_ctrl_c_stops_a_run_waiting_on_a_hung_callable(tmp_path: Path) -> None:
    suite = make_answer_suite(tmp_path / "s", 4, systems=HUNG)
    run = _Run(suite, tmp_path / "run")
    run.wait_for_records(2)  # c-0 and c-2 answered; c-1 and c-3 hang
    # at once: the signal may come before the event loop waits (a wakeup it must not miss)
    seconds, after = run.interrupt()
    assert seconds < run.limit
    assert after == 0 and run.proc.returncode != 0
