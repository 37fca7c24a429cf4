"""Ray clusters for the tests: HOME and TMPDIR in a temporary folder (Ray writes its token,
sockets and logs there), fractional CPUs, no dashboard, a small object store; the examples
and this folder importable by the workers (PYTHONPATH, which they inherit)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OBJECT_STORE = 100 * 2**20


@contextlib.contextmanager
def ray_folder() -> Iterator[Path]:
    """A new short folder (Ray's socket paths must stay short), removed after."""
    folder = Path(tempfile.mkdtemp(prefix="qe-ray-", dir="/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def ray_environment(folder: Path) -> Iterator[Path]:
    """HOME and TMPDIR in `folder`, the repository's src, root and tests on PYTHONPATH;
    all restored after (the tests after the Ray ones see the usual HOME)."""
    saved = {k: os.environ.get(k) for k in ("HOME", "TMPDIR", "PYTHONPATH", "RAY_DEDUP_LOGS")}
    paths = [str(ROOT / "src"), str(ROOT), str(ROOT / "tests")]
    if saved["PYTHONPATH"]:
        paths.append(saved["PYTHONPATH"])
    os.environ.update(
        HOME=str(folder), TMPDIR=str(folder), PYTHONPATH=os.pathsep.join(paths), RAY_DEDUP_LOGS="0"
    )
    tempfile.tempdir = None  # re-read TMPDIR
    try:
        yield folder
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        tempfile.tempdir = None


def init_local(ray: Any, cpus: int = 2) -> None:
    """A local cluster for the tests."""
    import logging

    ray.init(
        num_cpus=cpus,
        include_dashboard=False,
        object_store_memory=OBJECT_STORE,
        namespace="queryeval-tests",
        logging_level=logging.WARNING,
        log_to_driver=False,
    )


class Overlap:
    """A fake server's reply function, slowed by `delay_s`, that counts how many requests it
    serves at once (`peak`): what a concurrency limit across a cluster must bound."""

    def __init__(self, reply: Callable[[Any], Any], delay_s: float = 0.05) -> None:
        self.reply = reply
        self.delay_s = delay_s
        self.now = self.peak = 0
        self._lock = threading.Lock()

    def __call__(self, request: Any) -> Any:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(self.delay_s)
        with self._lock:
            self.now -= 1
        return self.reply(request)
