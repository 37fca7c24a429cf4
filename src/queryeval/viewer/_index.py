"""The index of one run: what the viewer, `queryeval compare` and `queryeval history` ask of
a run's records, kept as Parquet files outside the run directory, so that a filter, a page
of cases or a comparison reads a few columns instead of every record.

One row per record of results.jsonl: where the line is (byte offset and length, so one case
is read back alone), system, case id, verdict, status, the first failure reason, latency,
cost, tokens, attempts, the prediction's text, each scorer's value (`v:LABEL`, set when the
score is `ok`) and each numeric sub-metric (`m:LABEL.SUB`). The cases (question, gold, tags)
are one more file, read from the suite's case files that run.json names.

The index follows the file: a run that appended records is indexed from where the index
stopped (one more part); a file replaced or cut is indexed again, into parts of a new
generation (their names hold it), the previous generation's parts left in place until the
next one: a request that listed them before the file was replaced still reads them whole.
Lines that are not records are counted with their line numbers, never raised: the viewer
shows what can be read and says what could not. The log's own reader
(`queryeval.log.iter_records`) stops at the first corrupt line; the index reads the lines
itself because it needs their byte offsets and must go on past a corrupt one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from queryeval.log import LOCK, RESULTS, RUN, LogWriter, RecordColumns, read_json
from queryeval.viewer._build import PART_ROWS, index_lines, ranges, write_cases_file

VERSION = 1
_META = "meta.json"
_CASES_PREFIX = "cases-"
_MAX_BAD = 50  # bad lines listed (all are counted)
# `queryeval run` indexes its run at the end from this size of results.jsonl on (some
# 15,000-30,000 records: 1.5-3 s of CPU to index); a smaller run is indexed by its first
# reader in about a second or less, and the run does not pay for it (a 3,000-case SQL run:
# 0.4-0.7 s of CPU, a sixth of its warm time)
INDEX_AT_END_MIN_BYTES = 32 * 2**20


_DB: Any = None
_DB_LOCK = threading.Lock()


def connect() -> Any:
    """A cursor on the process's one in-memory DuckDB database (bounded memory and threads:
    the viewer's budget; Parquet metadata cached across requests); one per request."""
    global _DB
    with _DB_LOCK:
        if _DB is None:
            import duckdb

            _DB = duckdb.connect(
                config={"memory_limit": "512MB", "threads": 2, "enable_object_cache": True}
            )
        return _DB.cursor()


def default_index_root() -> Path:
    """Where indexes live: `$QUERYEVAL_INDEX_DIR`, else `$XDG_CACHE_HOME/queryeval/index`
    (`~/.cache/queryeval/index`). Never inside a run directory.

    >>> os.environ["QUERYEVAL_INDEX_DIR"] = "/tmp/qe-index"
    >>> str(default_index_root())
    '/tmp/qe-index'
    >>> del os.environ["QUERYEVAL_INDEX_DIR"]
    """
    explicit = os.environ.get("QUERYEVAL_INDEX_DIR")
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "queryeval" / "index"


def record_row(rec: Mapping[str, Any]) -> dict[str, Any]:
    """The index's row of one record (without its place in the file).

    >>> row = record_row({"system": "s", "case_id": "c", "passed": False, "error": None,
    ...     "output": {"attempts": [{"query": "SELECT 1", "tokens_in": 5}]},
    ...     "scores": {"em": {"value": 0.0, "status": "ok", "passed": False,
    ...                       "details": {"failure": "wrong_result", "metrics": {"f1": 0.5}}}}})
    >>> row["status"], row["reason"], row["prediction"], row["v:em"], row["m:em.f1"]
    ('fail', 'wrong result', 'SELECT 1', 0.0, 0.5)
    """
    columns = RecordColumns()
    columns.add(rec)
    return columns.row(0)


_RANGE_BYTES = 2 * 2**20  # results.jsonl is read a range of about this size at a time (its rows
# held at once: 8 MiB ranges raised the peak of a 1M-record index by 8 MiB, 2 MiB do not)


@dataclass
class BadLine:
    """A line of results.jsonl that is not a record, and why."""

    line: int
    why: str


@dataclass
class IndexState:
    """What the index holds (meta.json)."""

    run: str
    inode: int = 0
    size: int = 0  # bytes of results.jsonl indexed (whole lines)
    lines: int = 0
    rows: int = 0
    parts: list[str] = field(default_factory=list)
    bad: list[dict[str, Any]] = field(default_factory=list)
    bad_count: int = 0
    duplicates: int = 0
    systems: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)  # v:... and m:... seen
    cases_sig: str = ""
    cases_problem: str | None = None
    has_cases: bool = False
    generation: str = ""  # in the parts' names: a replaced file's index never reuses one

    def as_dict(self) -> dict[str, Any]:
        """meta.json's content."""
        return {"version": VERSION, **self.__dict__}


class RunIndex:
    """The index of one run directory, kept under `root`; `refresh()` brings it up to date
    with results.jsonl (cheap when nothing changed).

    >>> import tempfile
    >>> from queryeval.log import LogWriter
    >>> run, root = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
    >>> w = LogWriter(run); w.open_for_append()
    >>> w.append({"system": "s", "case_id": "c1", "output": {}, "scores": {}, "passed": True,
    ...           "error": None, "latency_s": 0.5, "cost": None}); w.close()
    >>> index = RunIndex(run, root); index.refresh().rows
    1
    >>> index.record("s", "c1")["latency_s"]
    0.5
    """

    def __init__(
        self,
        run_dir: Path,
        root: Path | None = None,
        *,
        cases_checked: bool = False,
    ) -> None:
        self.run_dir = Path(run_dir).resolve()
        # the case files were validated by the run just finished: their cases are read from
        # their JSON for the index (a second validation was a third of the index's time)
        self.cases_checked = cases_checked
        digest = hashlib.sha256(str(self.run_dir).encode()).hexdigest()[:16]
        self.folder = (root or default_index_root()) / f"{self.run_dir.name[:40]}-{digest}"
        self._lock = threading.Lock()
        self.state = IndexState(run=str(self.run_dir))
        self.torn_tail = False  # the file ends in a partial line (a kill, or a write now)
        self._offsets: tuple[Any, Any, Any, Any] | None = None

    # --- building ------------------------------------------------------------------------

    def refresh(self) -> IndexState:
        """Index what results.jsonl gained since the last call (or everything, when the file
        was replaced or cut, or the index is missing); returns the state."""
        with self._lock, self._folder_lock():
            results = self.run_dir / RESULTS
            try:
                stat = results.stat()
            except OSError:
                self.state = IndexState(run=str(self.run_dir))
                return self.state
            state = self._load_state()
            if state is None or state.inode != stat.st_ino or state.size > stat.st_size:
                state = self._reset()
                state.inode = stat.st_ino
            if stat.st_size > state.size:
                self._append(results, state, stat.st_size)
            else:
                self.torn_tail = False
            self._cases(state)
            self.state = state
            self._offsets = None
            return state

    @contextlib.contextmanager
    def _folder_lock(self) -> Iterator[None]:
        """The index folder's lock: one process updates an index at a time (a viewer's
        background indexing and a `queryeval compare` of the same run)."""
        import fcntl

        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _load_state(self) -> IndexState | None:
        if self.state.parts or self.state.size:
            # another process may have extended the index since: its meta says how far
            try:
                size = orjson.loads((self.folder / _META).read_bytes()).get("size")
            except (OSError, orjson.JSONDecodeError):
                size = None
            if size == self.state.size:
                return self.state
        try:
            data = orjson.loads((self.folder / _META).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        if data.pop("version", None) != VERSION:
            return None
        try:
            state = IndexState(**data)
        except TypeError:
            return None
        if not all((self.folder / p).exists() for p in state.parts):
            return None
        return state

    def _reset(self) -> IndexState:
        """A new generation: the parts of the one before it stay (a reader that listed them
        before results.jsonl was replaced, in this process or another, reads them whole),
        those of every older one go."""
        keep: set[str] = set()
        with contextlib.suppress(OSError, orjson.JSONDecodeError, AttributeError, TypeError):
            keep = set(orjson.loads((self.folder / _META).read_bytes()).get("parts") or ())
        if self.folder.exists():
            for path in self.folder.iterdir():
                if (path.suffix == ".parquet" and path.name not in keep) or path.name == _META:
                    path.unlink(missing_ok=True)
        return IndexState(run=str(self.run_dir), generation=secrets.token_hex(4))

    def _append(self, results: Path, state: IndexState, size: int) -> None:
        """Index the lines from `state.size` to `size`, a range of them at a time (the
        rows of one range held at once)."""
        import pyarrow as pa

        seen = self._keys(state) if state.rows else set()
        batches: list[Any] = []  # the part's rows so far as Arrow tables
        n = 0
        lineno, offset = state.lines, state.size
        self.torn_tail = False
        spans = ranges(results, state.size, size, _RANGE_BYTES)
        for start, end in spans:
            got = index_lines(results, start, end)
            for line, why in got.bad:
                self._bad(state, lineno + line, why)
            lineno, offset = lineno + got.lines, got.end
            for table in got.tables:
                for key in _keys_of(table):
                    if key in seen:
                        state.duplicates += 1
                    seen.add(key)
                at = table.schema.get_field_index("row")
                while table.num_rows:
                    piece, table = table.slice(0, PART_ROWS - n), table.slice(PART_ROWS - n)
                    first = state.rows + n
                    numbers = pa.array(range(first, first + piece.num_rows), pa.int64())
                    batches.append(piece.set_column(at, "row", numbers))
                    n += piece.num_rows
                    if n >= PART_ROWS:
                        self._write_part(batches, state)
                        batches, n = [], 0
            if got.torn or got.end < end:  # a torn last line, or the file cut meanwhile
                self.torn_tail = got.torn
                break
        if n:
            self._write_part(batches, state)
        state.size = offset
        state.lines = lineno
        self._save(state)

    @staticmethod
    def _bad(state: IndexState, lineno: int, why: str) -> None:
        state.bad_count += 1
        if len(state.bad) < _MAX_BAD:
            state.bad.append({"line": lineno, "why": why})

    def _write_part(self, batches: list[Any], state: IndexState) -> None:
        """One Parquet part of the rows in `batches` (Arrow tables, `_table`): a column that
        a batch lacks is null there."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.concat_tables(batches, promote_options="default")
        self.folder.mkdir(parents=True, exist_ok=True)
        generation = f"{state.generation}-" if state.generation else ""
        name = f"records-{generation}{len(state.parts):04d}.parquet"
        pq.write_table(table, self.folder / name, compression="zstd")
        state.parts.append(name)
        state.rows += table.num_rows
        for system in table.column("system").unique().to_pylist():
            if system not in state.systems:
                state.systems.append(system)
        for col in table.column_names:
            if col.startswith(("v:", "m:")) and col not in state.columns:
                state.columns.append(col)

    def _keys(self, state: IndexState) -> set[str]:
        import pyarrow.parquet as pq

        keys: set[str] = set()
        for part in state.parts:
            keys.update(_keys_of(pq.read_table(self.folder / part, columns=["system", "case_id"])))
        return keys

    def _save(self, state: IndexState) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        LogWriter(self.folder).write_json(_META, state.as_dict())

    # --- cases -----------------------------------------------------------------------------

    def _case_patterns(self) -> tuple[list[str], Path] | None:
        info = read_json(self.run_dir, RUN) or {}
        config = info.get("config") or {}
        patterns = config.get("cases")
        suite_file = info.get("suite_file")
        if not patterns or not suite_file:
            return None
        return ([patterns] if isinstance(patterns, str) else list(patterns)), Path(
            str(suite_file)
        ).parent

    def _cases(self, state: IndexState) -> None:
        """The cases file: built when missing or when the case files changed."""
        from queryeval.cases import case_files
        from queryeval.errors import InputError

        try:
            where = self._case_patterns()
        except InputError as exc:
            where, state.cases_problem = None, f"run.json: {exc.message}"
        if where is None:
            state.has_cases = False
            state.cases_problem = state.cases_problem or (
                "run.json names no case files: questions and golds are not shown"
            )
            return None
        patterns, base = where
        try:
            files = case_files(patterns, base)
            sig = hashlib.sha256(
                orjson.dumps([[str(p), p.stat().st_mtime_ns, p.stat().st_size] for p in files])
            ).hexdigest()
        except (InputError, OSError) as exc:
            state.has_cases = False
            state.cases_problem = (
                f"the case files cannot be read ({exc}): questions and golds are not shown"
            )
            return None
        state.cases_sig = sig
        path = self._cases_file(state)
        if path.exists():  # built already, for this run or another
            state.has_cases, state.cases_problem = True, None
        else:
            problem = write_cases_file(path, patterns, base, self.cases_checked)
            state.has_cases, state.cases_problem = problem is None, problem
        self._save(state)

    def _cases_file(self, state: IndexState) -> Path:
        """The cases' Parquet file: one per content of the case files, shared by the runs of
        a suite (kept beside the runs' index folders)."""
        return self.folder.parent / f"{_CASES_PREFIX}{state.cases_sig[:24]}.parquet"

    # --- reading ---------------------------------------------------------------------------

    @property
    def parts(self) -> list[Path]:
        """The Parquet parts of the records."""
        return [self.folder / p for p in self.state.parts]

    @property
    def cases_path(self) -> Path | None:
        """The cases' Parquet file, when the case files could be read."""
        path = self._cases_file(self.state)
        return path if self.state.has_cases and path.exists() else None

    def place(self, system: str, case_id: str) -> tuple[int, int] | None:
        """(offset, length) of the last record of (system, case) in results.jsonl."""
        if not self.parts:
            self.refresh()  # a fresh object: read the index (built when missing)
        if not self.parts:
            return None
        files = [str(p) for p in self.parts]
        found = (
            connect()
            .execute(
                'SELECT "offset", length FROM read_parquet(?, union_by_name=true) '
                "WHERE system = ? AND case_id = ? ORDER BY row DESC LIMIT 1",
                [files, system, case_id],
            )
            .fetchone()
        )
        return (int(found[0]), int(found[1])) if found else None

    def record(self, system: str, case_id: str) -> dict[str, Any] | None:
        """The stored record of (system, case), read alone from its place in results.jsonl
        (None when there is none). When the file was replaced since the index read it (its
        place holds another line), the index is brought up to date and asked again."""
        for fresh in (False, True):
            if fresh:
                self.refresh()
            where = self.place(system, case_id)
            if where is None:
                return None
            offset, length = where
            try:
                with (self.run_dir / RESULTS).open("rb") as f:
                    f.seek(offset)
                    rec = orjson.loads(f.read(length))
            except (OSError, orjson.JSONDecodeError):
                continue
            if isinstance(rec, dict) and (str(rec.get("system")), str(rec.get("case_id"))) == (
                system,
                case_id,
            ):
                return rec
        return None

    def case(self, case_id: str) -> dict[str, Any] | None:
        """The case's JSON (from the index of the case files), or None."""
        path = self.cases_path
        if path is None:
            return None
        found = (
            connect()
            .execute(
                'SELECT "case" FROM read_parquet(?) WHERE case_id = ? LIMIT 1', [str(path), case_id]
            )
            .fetchone()
        )
        return orjson.loads(found[0]) if found else None


def _keys_of(table: Any) -> list[str]:
    """Each row's (system, case id) as one text, `LEN:SYSTEMCASE_ID` (LEN: the system's
    characters; one string a row, built by Arrow: half the memory of a pair of strings in
    a tuple, for the set of a large run's keys that counts repeated records).

    >>> import pyarrow as pa
    >>> _keys_of(pa.table({"system": ["a", "a:1"], "case_id": ["1:x", "x"]}))
    ['1:a1:x', '3:a:1x']
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    system, case_id = table.column("system"), table.column("case_id")
    length = pc.cast(pc.utf8_length(system), pa.string())
    return pc.binary_join_element_wise(length, ":", system, case_id, "").to_pylist()


def index_run(run_dir: Path, root: Path | None = None, min_bytes: int | None = None) -> str | None:
    """Build or bring up to date the index of a run that just finished (what `queryeval run`
    does at its end, so that the viewer, `compare` and `history` find a large run's index
    ready), when its results.jsonl has at least `min_bytes` (default
    `INDEX_AT_END_MIN_BYTES`: a smaller one is indexed by its first reader). Never raises:
    the index is a cache beside the run, so a failure to write it is returned as one line
    (None when done or not needed), and whoever reads the run builds it then. The run has
    validated its case files: their cases are not validated again (`case_fields`).

    >>> import tempfile
    >>> from queryeval.log import LogWriter
    >>> run, root = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
    >>> w = LogWriter(run); w.open_for_append()
    >>> w.append({"system": "s", "case_id": "c1", "output": {}, "scores": {}, "passed": True,
    ...           "error": None}); w.close()
    >>> index_run(run, root, min_bytes=0) is None, RunIndex(run, root).refresh().rows
    (True, 1)
    >>> index_run(run, Path("/dev/null/index"), 0).startswith("cannot write /dev/null/index/")
    True
    """
    least = INDEX_AT_END_MIN_BYTES if min_bytes is None else min_bytes
    try:
        if (Path(run_dir) / RESULTS).stat().st_size < least:
            return None
        RunIndex(run_dir, root, cases_checked=True).refresh()
    except OSError as exc:
        where = exc.filename if exc.filename is not None else root or "the index folder"
        return f"cannot write {where}: {exc.strerror or exc}"
    except Exception as exc:  # a cache: whatever went wrong, the run stands as written
        first = str(exc).splitlines()[0] if str(exc) else ""
        return f"{type(exc).__name__}: {first}"
    return None


def iter_run_dirs(roots: list[Path]) -> Iterator[Path]:
    """Every run directory (one holding results.jsonl) at or below each root, once, sorted
    per root; hidden folders are skipped."""
    seen: set[Path] = set()
    for root in roots:
        found = []
        if (root / RESULTS).is_file():
            found.append(root)
        if root.is_dir():
            for folder, dirs, names in os.walk(root):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                if RESULTS in names and Path(folder) != root:
                    found.append(Path(folder))
        for path in found:
            resolved = path.resolve()
            if resolved not in seen:
                seen.add(resolved)
                yield path
