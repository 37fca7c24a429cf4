"""Large runs of saved predictions on every core: each forked worker loads, validates and
scores its own slice of the cases, so loading is parallel too.

Used only when the whole run is pure computation on local files: JSONL cases, JSONL
predictions, and scorers marked `shardable`. Workers send their encoded records to the
parent, the only writer of results.jsonl, which writes none before it has checked every
worker's inputs (duplicates and unknown case ids across all workers included).
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import signal
import sys
import time
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from queryeval._gc import bulk_allocation
from queryeval._inputs import BOM, decode_utf8, line_too_long, max_line_bytes
from queryeval.cases import Case, Output, Score, case_files
from queryeval.errors import InputError
from queryeval.scorers import Scorer, ScoringContext, ShardableScorer
from queryeval.stats import RunColumns, SystemColumns
from queryeval.systems import CaseOutputs, parse_prediction_line, read_prediction_line

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig
    from queryeval.runner._progress import Progress
    from queryeval.runner._run import Runner

MIN_CASES = 20_000  # below this, forking costs more than it saves
_CHUNK = 2_000  # records a worker aggregates (and reports as progress) at a time
# Workers send records in small batches (one message per batch, not per record), which the
# parent writes as they come: their work is pure local computation, so a kill loses at most
# ~50 ms of it (and what the pipes held), which resume redoes.
_WRITE_BATCH = 256
_WRITE_EVERY_S = 0.05
_CASE_ID_FIRST = b'{"case_id":"'
_CASE_ID = re.compile(rb'"case_id"\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(-?\d+))')


def _check_line_lengths(raw: list[bytes], path: Path) -> None:
    """InputError naming the first line past `max_line_bytes()` (as `jsonl_lines`)."""
    cap = max_line_bytes()
    if raw and max(map(len, raw)) > cap:
        line = next(i for i, text in enumerate(raw, start=1) if len(text) > cap)
        raise line_too_long(path, line, cap)


@dataclass
class _Lines:
    """The lines of one or more files, blank ones included, so that an index gives the place
    (bytes objects only: no tuple per line)."""

    raw: list[bytes]
    starts: list[int]  # index of each file's first line
    paths: list[Path]

    @classmethod
    def read(cls, paths: Sequence[Path], contents: dict[Path, bytes]) -> _Lines:
        """The files' lines, from `contents` (emptied as it is read) or from disk."""
        lines = cls([], [], [])
        for path in paths:
            data = contents.pop(path, None)
            lines.starts.append(len(lines.raw))
            lines.paths.append(path)
            data = path.read_bytes() if data is None else data
            if not data.isascii():  # as every other reader: UTF-8, the bad byte's line named
                decode_utf8(data, path)
            raw = data.removeprefix(BOM).splitlines()  # a BOM, as elsewhere
            _check_line_lengths(raw, path)
            lines.raw.extend(raw)
        return lines

    def count(self) -> int:
        """How many lines are not blank."""
        return sum(1 for raw in self.raw if raw.strip())

    def place(self, index: int) -> tuple[Path, int]:
        """(file, line number) of a line."""
        k = bisect_right(self.starts, index) - 1
        return self.paths[k], index - self.starts[k] + 1


@dataclass
class _Inputs:
    cases: _Lines
    predictions: dict[str, _Lines]  # system -> its prediction lines


def shard_contents(suite: SuiteConfig) -> dict[Path, bytes] | None:
    """The bytes of the case and prediction files when this run can go to forked workers
    (read once: they are hashed and split from memory), else None."""
    from queryeval.scorers import scorer_class

    workers = suite.settings.workers or os.cpu_count() or 1
    if workers < 2 or not hasattr(os, "fork"):
        return None
    if not all(cfg.predictions for cfg in suite.systems):
        return None
    if not all(issubclass(scorer_class(s.name), ShardableScorer) for s in suite.scorers):
        return None
    files = case_files(suite.cases, suite.base_dir)
    if not files or any(p.suffix.lower() not in (".jsonl", ".ndjson") for p in files):
        return None
    contents = {p: p.read_bytes() for p in files}
    lines = sum(data.count(b"\n") for data in contents.values())
    if lines * len(suite.systems) < (suite.settings.shard_min_cases or MIN_CASES):
        return None
    for cfg in suite.systems:
        assert cfg.predictions
        path = suite.resolve(cfg.predictions)
        if path.is_file():  # a missing file is reported where predictions are checked
            contents.setdefault(path, path.read_bytes())
    return contents


def can_shard(suite: SuiteConfig) -> bool:
    """Whether this run can go to forked workers."""
    return shard_contents(suite) is not None


def _case_id_of(path: Path, lineno: int, raw: bytes) -> str:
    m = _CASE_ID.search(raw)
    if m is not None and b"\\" not in (m.group(1) or b""):
        return (m.group(1) or m.group(2)).decode()
    return parse_prediction_line(raw, path, lineno)[0]  # odd line: parse it properly


def read_inputs(runner: Runner) -> _Inputs:
    """Raw lines of the case files, and prediction lines grouped by case id (cheap: the id is
    read off the line; workers validate the records)."""
    suite = runner.plan.suite
    contents = runner.plan.contents  # emptied as it is read: the lines hold the bytes now
    cases = _Lines.read(case_files(suite.cases, suite.base_dir), contents)
    predictions: dict[str, _Lines] = {}
    for cfg in suite.systems:
        assert cfg.predictions
        path = suite.resolve(cfg.predictions)
        lines = predictions[cfg.name] = _Lines.read([path], contents)
        if not any(raw.strip() for raw in lines.raw):
            raise InputError(
                "the predictions file is empty: expected one JSON record per case",
                path=path,
                line=1,
            )
    return _Inputs(cases, predictions)


def _by_case_id(lines: _Lines) -> dict[str, list[int]]:
    """case id -> indexes of its prediction lines (one file)."""
    path = lines.paths[0]
    by_id: dict[str, list[int]] = {}
    start = len(_CASE_ID_FIRST)
    for index, raw in enumerate(lines.raw):
        if raw.startswith(_CASE_ID_FIRST):  # as most tools write it: no search needed
            end = raw.find(b'"', start)
            found = raw[start:end]
            if end < 0 or b"\\" in found:
                case_id = _case_id_of(path, index + 1, raw)
            else:
                case_id = found.decode()
        elif raw.strip():
            case_id = _case_id_of(path, index + 1, raw)
        else:
            continue
        indexes = by_id.get(case_id)
        if indexes is None:
            by_id[case_id] = [index]
        else:
            indexes.append(index)
    return by_id


def _error_tuple(exc: InputError) -> tuple[str, str | None, int | None, str | None]:
    return (exc.message, exc.path, exc.line, exc.where)


def _load_shard(lines: _Lines, lo: int, hi: int) -> tuple[list[Case], list[int]]:
    """The cases of lines lo..hi, and the index of each one's line."""
    from pydantic import ValidationError

    from queryeval._validation import input_error

    cases = []
    indexes = []
    raw_lines = lines.raw
    for index in range(lo, hi):
        raw = raw_lines[index]
        if not raw.strip():
            continue
        try:
            cases.append(Case.model_validate_json(raw))
        except ValidationError as exc:
            path, lineno = lines.place(index)
            if any(e["type"] == "json_invalid" for e in exc.errors()):
                raise InputError("invalid JSON", path=path, line=lineno) from None
            raise input_error(exc, path=path, line=lineno) from None
        indexes.append(index)
    return cases, indexes


def _outputs(lines: _Lines, indexes: list[int]) -> Output:
    path = lines.paths[0]  # one predictions file per system
    if len(indexes) == 1:  # one record per case: the common case
        return parse_prediction_line(lines.raw[indexes[0]], path, indexes[0] + 1)[1]
    if not indexes:
        return Output(error="no prediction for this case", failure="missing")
    joined = CaseOutputs(path)  # several records: distinct attempt numbers, else an error
    for index in indexes:
        joined.add(index + 1, read_prediction_line(lines.raw[index], path, index + 1))
    (output,) = joined.outputs().values()
    return output


def _slice_outputs(
    case_lines: _Lines, lines: _Lines, cases: list[Case], lo: int, hi: int
) -> tuple[dict[str, Output], int]:
    """The outputs of a slice's cases, and how many prediction lines they took. When the
    predictions file follows the cases file line by line (as a system run over the cases
    writes it), line i holds case i's prediction and no grouping is needed; otherwise every
    prediction line is grouped by case id."""
    aligned = _aligned_outputs(case_lines, lines, cases, lo, hi)
    if aligned is not None:
        return aligned, len(aligned)
    by_id = _by_case_id(lines)
    outputs = {c.id: _outputs(lines, by_id.get(c.id, [])) for c in cases}
    return outputs, sum(len(by_id.get(c.id, ())) for c in cases)


def _aligned_outputs(
    case_lines: _Lines, lines: _Lines, cases: list[Case], lo: int, hi: int
) -> dict[str, Output] | None:
    """The outputs read line for line beside the cases, or None where the files differ."""
    if len(lines.raw) != len(case_lines.raw):
        return None
    path = lines.paths[0]
    outputs: dict[str, Output] = {}
    at = 0
    for index in range(lo, hi):
        raw = lines.raw[index]
        if not case_lines.raw[index].strip():
            if raw.strip():
                return None  # a prediction beside a blank line
            continue
        case = cases[at]
        at += 1
        if not raw.startswith(_CASE_ID_FIRST) or not raw.startswith(
            case.id.encode(), len(_CASE_ID_FIRST)
        ):
            return None  # cheap check first; the parsed id decides
        case_id, output = parse_prediction_line(raw, path, index + 1)
        if case_id != case.id:
            return None
        outputs[case_id] = output
    return outputs


def _die_with_parent(parent_pid: int) -> None:
    """A worker ends when the run's process does (Linux: the kernel sends it SIGKILL), so a
    run killed with SIGKILL leaves no worker scoring on, holding gigabytes."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(1)


_PR_SET_PDEATHSIG = 1


def _worker(
    runner: Runner, inputs: _Inputs, lo: int, hi: int, conn: Connection, parent_pid: int
) -> None:
    """Runs in a forked child: validate the slice, score it, send the records and the
    summary columns to the parent (which reads the records once the ids are checked).
    The cyclic GC stays off (see queryeval._gc): the child exits when its slice is done."""
    _die_with_parent(parent_pid)
    gc.disable()
    try:
        cases, indexes = _load_shard(inputs.cases, lo, hi)
        outputs: dict[str, dict[str, Output]] = {}
        claimed: dict[str, int] = {}  # prediction lines of this slice's cases, per system
        for name, lines in inputs.predictions.items():
            outputs[name], claimed[name] = _slice_outputs(inputs.cases, lines, cases, lo, hi)
    except InputError as exc:
        conn.send(("error", _error_tuple(exc)))
        return
    # the parent checks the ids before anything is written, and makes the cases' stubs (what
    # summaries read of them) from these columns while the workers score
    conn.send(
        (
            "ids",
            [c.id for c in cases],
            indexes,
            claimed,
            _stub_fields(cases),
        )
    )
    columns = _score_slice(runner, cases, outputs, _LineSender(conn), conn)
    conn.send(("done", columns))


class _LineSender:
    """A worker's encoded records, sent to the parent in batches (one message each)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.batch: list[bytes] = []
        self.last = time.monotonic()

    def add(self, line: bytes) -> None:
        """One record's line."""
        self.batch.append(line)
        if len(self.batch) >= _WRITE_BATCH or time.monotonic() - self.last > _WRITE_EVERY_S:
            self.flush()

    def flush(self) -> None:
        """Send what is held (the parent writes it)."""
        if self.batch:
            self.conn.send(("lines", b"".join(self.batch)))
            self.batch = []
        self.last = time.monotonic()


def _score_slice(
    runner: Runner,
    cases: list[Case],
    outputs: dict[str, dict[str, Output]],
    writer: _LineSender,
    conn: Connection,
) -> RunColumns:
    """Score a worker's cases for every system; returns the summary columns (with the
    scorers' partial aggregates)."""
    from queryeval.runner._pipeline import score_output

    ctx = ScoringContext(runner.plan.suite, cache_dir=runner.ctx.cache_dir)
    scorers = runner.plan.scorers
    for scorer in scorers.values():
        scorer.prepare(cases, ctx)
    encode = runner.store.encode
    columns = RunColumns()
    try:
        for system in runner.plan.systems:
            table = columns.system(system.name)
            # scorers aggregate their scores here, a chunk at a time (see ShardableScorer)
            chunk_cases: list[Case] = []
            chunk_scores: dict[str, list[Score]] = {label: [] for label in scorers}
            done = {case_id for name, case_id in runner.done if name == system.name}
            system_outputs = outputs[system.name]
            for case in cases:
                if done and case.id in done:
                    continue
                scored = score_output(system.name, case, system_outputs[case.id], scorers, ctx)
                scores = scored.scores
                writer.add(encode(scored.record))
                table.add(scored.record, scores, keep_views=False)
                chunk_cases.append(case)
                for label, score in scores.items():
                    chunk_scores[label].append(score)
                if len(chunk_cases) == _CHUNK:
                    _aggregate_chunk(table, scorers, chunk_cases, chunk_scores)
                    conn.send(("progress", len(chunk_cases)))
                    chunk_cases = []
            _aggregate_chunk(table, scorers, chunk_cases, chunk_scores)
            conn.send(("progress", len(chunk_cases)))
        writer.flush()
    finally:
        ctx.close()
    return columns


def _aggregate_chunk(
    table: SystemColumns,
    scorers: dict[str, Scorer],
    cases: list[Case],
    scores: dict[str, list[Score]],
) -> None:
    if not cases:
        return
    for label, scorer in scorers.items():
        assert isinstance(scorer, ShardableScorer)  # a sharded run has no other scorers
        table.scorers[label].partials.append(scorer.aggregate_partial(cases, scores[label]))
        scores[label].clear()


def run_sharded(runner: Runner, inputs: _Inputs, bar: Progress) -> tuple[list[Case], RunColumns]:
    """Run the plan on forked workers over inputs from `read_inputs`; returns (case stubs in
    order, the summary columns of the new records)."""
    with bulk_allocation():
        return _run_sharded(runner, inputs, bar)


def _run_sharded(runner: Runner, inputs: _Inputs, bar: Progress) -> tuple[list[Case], RunColumns]:
    import multiprocessing as mp

    suite = runner.plan.suite
    n = len(inputs.cases.raw)
    workers = max(1, min(suite.settings.workers or os.cpu_count() or 1, n))
    bounds = [(n * k // workers, n * (k + 1) // workers) for k in range(workers)]
    ctx = mp.get_context("fork")
    procs, conns = [], []
    for lo, hi in bounds:
        parent, child = ctx.Pipe()
        proc = ctx.Process(
            target=_worker, args=(runner, inputs, lo, hi, child, os.getpid()), daemon=True
        )
        proc.start()
        procs.append(proc)
        conns.append(parent)
    try:
        ids: list[str] = []
        line_of: list[int] = []  # the index of each case's line
        metas: list[_StubFields] = []
        claimed = dict.fromkeys(inputs.predictions, 0)
        problem: InputError | None = None
        for conn in conns:  # in shard (= case) order
            msg = conn.recv()
            if msg[0] == "error":
                problem = problem or InputError(
                    msg[1][0], path=msg[1][1], line=msg[1][2], where=msg[1][3]
                )
                continue
            ids.extend(msg[1])
            line_of.extend(msg[2])
            for system, count in msg[3].items():
                claimed[system] += count
            metas.append(msg[4])
        known = set(ids)
        if problem is None and len(known) < len(ids):
            problem = _duplicate_case(inputs.cases, ids, line_of)
        if problem is None and any(
            claimed[system] != lines.count() for system, lines in inputs.predictions.items()
        ):  # some prediction line belongs to no case: find the first
            problem = _unknown_prediction(inputs, known)
        if problem is not None:
            for proc in procs:  # they have written nothing; what they hold is dropped
                proc.kill()
            raise problem
        stubs = _stubs(ids, metas)
        store = runner.store
        store.open_for_append()
        blocks: list[RunColumns | None] = [None] * len(conns)
        waiting = list(conns)
        while waiting:
            for ready in wait(waiting):
                conn = cast(Connection, ready)
                message = conn.recv()
                if message[0] == "lines":
                    store.write_lines(message[1])
                elif message[0] == "progress":
                    bar.advance(message[1])
                else:  # "done": the worker's columns, joined in shard (= case) order below
                    blocks[conns.index(conn)] = message[1]
                    waiting.remove(conn)
        columns = RunColumns()
        for block in blocks:
            assert block is not None
            columns.extend(block)
        return stubs, columns
    finally:
        runner.store.close()
        for proc in procs:
            proc.join(timeout=60)
            if proc.is_alive():  # pragma: no cover - a worker that never answered
                proc.kill()


def _duplicate_case(lines: _Lines, ids: list[str], line_of: list[int]) -> InputError:
    first: dict[str, int] = {}
    for index, case_id in enumerate(ids):
        if case_id in first:
            path, lineno = lines.place(line_of[index])
            first_path, first_lineno = lines.place(line_of[first[case_id]])
            return InputError(
                f"duplicate case id {case_id!r} (first defined in {first_path}:{first_lineno})",
                path=path,
                line=lineno,
            )
        first[case_id] = index
    raise AssertionError("no duplicate")  # pragma: no cover - only called with one


def _unknown_prediction(inputs: _Inputs, known: set[str]) -> InputError | None:
    for lines in inputs.predictions.values():
        for case_id, indexes in _by_case_id(lines).items():
            if case_id not in known:
                path, lineno = lines.place(indexes[0])
                return InputError(
                    f"prediction for unknown case id {case_id!r}",
                    path=path,
                    line=lineno,
                    where="case_id",
                )
    return None


# what a worker sends of its cases for their stubs: (name, tags, question) per case, and
# metadata and labels only where a case has them ({position: (metadata, labels)})
_Extra = tuple[dict[str, Any], dict[str, Any]]
_StubFields = tuple[list[tuple[str, list[str], str]], dict[int, _Extra]]


def _stub_fields(cases: list[Case]) -> _StubFields:
    rows = [(c.name, c.tags, c.question) for c in cases]
    extra = {i: (c.metadata, c.labels) for i, c in enumerate(cases) if c.metadata or c.labels}
    return rows, extra


def _stubs(ids: list[str], parts: list[_StubFields]) -> list[Case]:
    """The case stubs, in case order, from the workers' stub fields (in shard order)."""
    stubs: list[CaseStub] = []
    for rows, extra in parts:
        start = len(stubs)
        stubs.extend(
            CaseStub(case_id, name, tags, {}, {}, question)
            for case_id, (name, tags, question) in zip(ids[start:], rows, strict=False)
        )
        for i, (metadata, labels) in extra.items():
            stubs[start + i].metadata = metadata
            stubs[start + i].labels = labels
    return cast(list[Case], stubs)


@dataclass(slots=True)
class CaseStub:
    """What summaries read of a case (id, name, tags, metadata, labels, question), without
    the cost of building whole models for every case of a large run."""

    id: str
    name: str
    tags: list[str]
    metadata: dict[str, Any]
    labels: dict[str, Any]
    question: str
