"""One run per directory: a second run into a directory another run is writing to stops
with exit 2 naming the holder; the lock of a run killed with SIGKILL is taken over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from queryeval.cli import app
from queryeval.log import LOCK, run_lock
from test_runner import make_answer_suite


def test_a_second_run_into_a_locked_directory_stops_naming_the_holder(tmp_path: Path) -> None:
    suite = make_answer_suite(tmp_path / "s", 4)
    out = tmp_path / "run"
    with run_lock(out):  # a run in progress (this process)
        result = CliRunner().invoke(app, ["run", str(suite), "--out", str(out), "--overwrite"])
        assert result.exit_code == 2, result.output
        message = result.stderr.strip()
        assert f"error: {out}" in message
        assert f"another run is writing to this directory: process {os.getpid()}" in message
        assert not (out / "results.jsonl").exists()  # refused before anything was written
    result = CliRunner().invoke(app, ["run", str(suite), "--out", str(out)])
    assert result.exit_code == 0, result.stderr  # free again once the holder is done


def test_the_lock_of_a_killed_run_is_taken_over(tmp_path: Path) -> None:
    suite = make_answer_suite(tmp_path / "s", 4)
    out = tmp_path / "run"
    code = (
        "import sys, time; from pathlib import Path\n"
        "from queryeval.log import run_lock\n"
        "with run_lock(Path(sys.argv[1])):\n"
        "    print('locked', flush=True); time.sleep(600)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(out)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
        busy = CliRunner().invoke(app, ["run", str(suite), "--out", str(out)])
        assert busy.exit_code == 2 and f"process {holder.pid}" in busy.stderr
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
    finally:
        if holder.poll() is None:
            holder.kill()
    start = time.monotonic()
    result = CliRunner().invoke(app, ["run", str(suite), "--out", str(out)])
    assert result.exit_code == 0, result.stderr  # the kernel let the dead run's lock go
    assert time.monotonic() - start < 30
    assert str(os.getpid()) in (out / LOCK).read_text()  # the file names the last holder
