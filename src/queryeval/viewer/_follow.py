"""The index of a run built while it runs (`index_during`): a thread of `queryeval run`
indexes results.jsonl in whole Parquet parts as the workers append it, while the driver
waits for them, so that the index costs the end of a large run only its last part.

It starts indexing only once the file has grown since the thread first saw it (the
workers forked before any record of theirs was written: no fork happens with the thread
at work), cuts at exactly `PART_ROWS` lines past what the index holds (so the parts are
those an index of the whole file makes: the same rows, numbers and columns), and leaves
the rest, and every problem, to `finish` (`index_run`, as at the end of a run before).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from queryeval.log import RESULTS

if TYPE_CHECKING:
    from queryeval.viewer._index import RunIndex

# `queryeval run` indexes its run from this size of results.jsonl on (some 15,000-30,000
# records: 1.5-3 s of CPU to index); a smaller run is indexed by its first reader in about
# a second or less, and the run does not pay for it (a 3,000-case SQL run: 0.4-0.7 s of
# CPU, a sixth of its warm time)
INDEX_AT_END_MIN_BYTES = 32 * 2**20
POLL_S = 0.25  # how often the thread looks at the file (a stat while nothing changed)
_READ_BYTES = 8 * 2**20  # the new bytes are read this much at a time, to count their lines


class RunningIndex:
    """The thread indexing one run directory while it runs; `finish` stops it and brings
    the index up to date (what `index_run` returns).

    >>> import tempfile
    >>> from queryeval.log import LogWriter
    >>> run, root = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
    >>> with index_during(run, root) as index:
    ...     w = LogWriter(run); w.open_for_append()
    ...     w.append({"system": "s", "case_id": "c1", "scores": {}}); w.close()
    >>> from queryeval.viewer import RunIndex
    >>> index.finish(run, min_bytes=0) is None, RunIndex(run, root).refresh().rows
    (True, 1)
    """

    def __init__(self, run_dir: Path, root: Path | None = None) -> None:
        self.run_dir, self.root = Path(run_dir), root
        self.parts = 0  # parts the thread wrote
        self.looks = 0  # times it looked at the file
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="queryeval-index", daemon=True)

    def start(self) -> RunningIndex:
        """Start the thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread (after the part it is writing, if any)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def finish(self, run_dir: Path, min_bytes: int | None = None) -> str | None:
        """Stop the thread, then index what is left of `run_dir` (`index_run`: None when
        done or not needed, else the problem in one line)."""
        self.stop()
        least = INDEX_AT_END_MIN_BYTES if min_bytes is None else min_bytes
        try:  # a small run's index is left to its first reader, without importing it
            if (Path(run_dir) / RESULTS).stat().st_size < least:
                return None
        except OSError:
            pass  # index_run says what is wrong
        from queryeval.viewer._index import index_run

        return index_run(run_dir, self.root, min_bytes)

    def _follow(self) -> None:
        """Index whole parts as the lines come (a cache: any failure ends the thread and
        leaves the work to `finish`)."""
        with contextlib.suppress(Exception):
            results = self.run_dir / RESULTS
            index: RunIndex | None = None
            seen: tuple[int, int] | None = None  # (inode, size) when the thread first saw it
            base = pos = count = 0  # the index's end, bytes scanned, lines in [base, pos)
            while not self._stop.wait(POLL_S):
                self.looks += 1
                try:
                    stat = results.stat()
                except OSError:
                    seen = None
                    continue
                if seen is None or seen[0] != stat.st_ino or stat.st_size < seen[1]:
                    seen, index = (stat.st_ino, stat.st_size), None  # new, replaced or cut
                    continue
                if stat.st_size == seen[1] or stat.st_size < INDEX_AT_END_MIN_BYTES:
                    continue  # nothing appended yet by this run, or a run left to its reader
                if index is None:
                    from queryeval.viewer._index import RunIndex  # here: a run that grows

                    index = RunIndex(
                        self.run_dir, self.root, cases_checked=True, count_repeats=False
                    )
                    state = index._load_state()
                    fresh = state is None or state.inode != stat.st_ino
                    base = pos = 0 if fresh or state is None else state.size
                    count = 0
                cut, count, pos = _cut(results, base, pos, count, stat.st_size)
                if cut is None:
                    continue
                state = index.refresh(upto=cut)
                self.parts = len(state.parts)
                if state.size != cut:  # another process indexed it otherwise: count again
                    base = pos = state.size
                    count = 0
                else:
                    base = cut


def _cut(path: Path, base: int, pos: int, count: int, size: int) -> tuple[int | None, int, int]:
    """Count the lines of `path` in [pos, size) (`count` of them in [base, pos) already);
    (the end of the last whole number of `PART_ROWS` lines after `base`, or None; the
    lines counted past that end; where the count stopped)."""
    from queryeval.viewer import _index

    rows = _index.PART_ROWS
    with path.open("rb") as f:
        f.seek(pos)
        while pos < size:
            chunk = f.read(min(_READ_BYTES, size - pos))
            if not chunk:
                break
            n = chunk.count(b"\n")
            if count + n >= rows:  # the end of the (rows - count)-th line of the chunk
                at, need = -1, rows - count
                for _ in range(need):
                    at = chunk.index(b"\n", at + 1)
                cut = pos + at + 1
                return cut, 0, cut  # counting goes on from the cut
            count += n
            pos += len(chunk)
    return None, count, pos


@contextlib.contextmanager
def index_during(run_dir: Path, root: Path | None = None) -> Iterator[RunningIndex]:
    """Index `run_dir` while the block runs (what `queryeval run` does around the run);
    the thread is stopped when the block ends, and `finish` indexes the rest."""
    running = RunningIndex(run_dir, root).start()
    try:
        yield running
    finally:
        running.stop()
