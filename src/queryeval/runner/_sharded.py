"""Large runs of saved predictions on every core: each forked worker loads, validates and
scores its own slice of the cases, so loading is parallel too.

Used only when the whole run is pure computation on local files: JSONL cases, JSONL
predictions, and scorers marked `shardable`. Inputs are fully validated (duplicates and
unknown case ids across all workers included) before any worker writes a record.
"""

from __future__ import annotations

import gc
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import orjson

from queryeval._gc import bulk_allocation
from queryeval.cases import Case, Output, Score
from queryeval.cases._load import expand
from queryeval.errors import InputError
from queryeval.scorers import Scorer, ScoringContext
from queryeval.stats._columns import RunColumns, SystemColumns
from queryeval.systems import parse_prediction_line

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig
    from queryeval.runner._progress import Progress
    from queryeval.runner._run import Runner

MIN_CASES = 20_000  # below this, forking costs more than it saves
_CHUNK = 2_000  # records a worker aggregates (and reports as progress) at a time
# Workers write records in small batches (one system call per batch, not per record): their
# work is pure local computation, so a kill loses at most ~50 ms of it, which resume redoes.
_WRITE_BATCH = 256
_WRITE_EVERY_S = 0.05
_CASE_ID_FIRST = b'{"case_id":"'
_CASE_ID = re.compile(rb'"case_id"\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(-?\d+))')

Line = tuple[Path, int, bytes]


@dataclass
class _Inputs:
    case_lines: list[Line]
    predictions: dict[str, dict[str, list[Line]]]  # system -> case id -> its lines


def can_shard(suite: SuiteConfig) -> bool:
    """Whether this run can go to forked workers."""
    from queryeval.scorers import scorer_class

    workers = int(suite.settings.get("workers", os.cpu_count() or 1))
    if workers < 2 or not hasattr(os, "fork"):
        return False
    if not all(cfg.predictions for cfg in suite.systems):
        return False
    if not all(getattr(scorer_class(s.name), "shardable", False) for s in suite.scorers):
        return False
    files = expand(suite.cases, suite.base_dir)
    if not files or any(p.suffix.lower() not in (".jsonl", ".ndjson") for p in files):
        return False
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    return lines * len(suite.systems) >= int(suite.settings.get("shard_min_cases", MIN_CASES))


def _read_lines(path: Path) -> list[Line]:
    return [
        (path, i, raw) for i, raw in enumerate(path.read_bytes().splitlines(), 1) if raw.strip()
    ]


def _case_id_of(path: Path, lineno: int, raw: bytes) -> str:
    if raw.startswith(_CASE_ID_FIRST):  # as most tools write it: no search needed
        end = raw.find(b'"', len(_CASE_ID_FIRST))
        if end > 0 and b"\\" not in raw[len(_CASE_ID_FIRST) : end]:
            return raw[len(_CASE_ID_FIRST) : end].decode()
    m = _CASE_ID.search(raw)
    if m is not None and b"\\" not in (m.group(1) or b""):
        return (m.group(1) or m.group(2)).decode()
    return parse_prediction_line(raw, path, lineno)[0]  # odd line: parse it properly


def read_inputs(runner: Runner) -> _Inputs:
    """Raw lines of the case files, and prediction lines grouped by case id (cheap: the id is
    found with a regular expression; workers validate the records)."""
    suite = runner.plan.suite
    case_lines = [line for p in expand(suite.cases, suite.base_dir) for line in _read_lines(p)]
    predictions: dict[str, dict[str, list[Line]]] = {}
    for cfg in suite.systems:
        assert cfg.predictions
        by_id: dict[str, list[Line]] = {}
        for path, lineno, raw in _read_lines(suite.resolve(cfg.predictions)):
            by_id.setdefault(_case_id_of(path, lineno, raw), []).append((path, lineno, raw))
        predictions[cfg.name] = by_id
    return _Inputs(case_lines, predictions)


def _error_tuple(exc: InputError) -> tuple[str, str | None, int | None, str | None]:
    return (exc.message, exc.path, exc.line, exc.where)


def _load_shard(lines: Sequence[Line]) -> list[Case]:
    from pydantic import ValidationError

    from queryeval._validation import input_error

    cases = []
    for path, lineno, raw in lines:
        try:
            cases.append(Case.model_validate_json(raw))
        except ValidationError as exc:
            if any(e["type"] == "json_invalid" for e in exc.errors()):
                raise InputError("invalid JSON", path=path, line=lineno) from None
            raise input_error(exc, path=path, line=lineno) from None
    return cases


def _outputs(lines: list[Line]) -> Output:
    output: Output | None = None
    for path, lineno, raw in lines:
        _, out = parse_prediction_line(raw, path, lineno)
        if output is None:
            output = out
        else:
            output.attempts.extend(out.attempts)
            output.error = out.error or output.error
    return output if output is not None else Output(error="no prediction for this case")


def _worker(runner: Runner, inputs: _Inputs, lo: int, hi: int, conn: Connection) -> None:
    """Runs in a forked child: validate the slice, wait for the go, score, write, report.
    The cyclic GC stays off (see queryeval._gc): the child exits when its slice is done."""
    gc.disable()
    from queryeval.runner._run import _record, _score_sync

    try:
        cases = _load_shard(inputs.case_lines[lo:hi])
        outputs = {
            system: {c.id: _outputs(by_id.get(c.id, [])) for c in cases}
            for system, by_id in inputs.predictions.items()
        }
    except InputError as exc:
        conn.send(("error", _error_tuple(exc)))
        return
    meta = [
        {
            "id": c.id,
            "name": c.name,
            "tags": c.tags,
            "metadata": c.metadata,
            "labels": c.labels,
            "question": c.question,
        }
        for c in cases
    ]
    # the parent checks the ids before anything is written, and reads the cases' stubs
    # (what summaries read of them) while the workers score
    conn.send(("ids", [c.id for c in cases], orjson.dumps(meta)))
    if conn.recv() != "go":
        return
    ctx = ScoringContext(runner.plan.suite, cache_dir=runner.ctx.cache_dir)
    scorers = runner.plan.scorers
    for scorer in scorers.values():
        scorer.prepare(cases, ctx)
    store = runner.store
    store.open_for_append()
    columns = RunColumns()
    batch: list[bytes] = []
    written = time.monotonic()
    try:
        for system in runner.plan.systems:
            table = columns.system(system.name)
            # scorers aggregate their scores here, a chunk at a time (see Scorer.aggregate_partial)
            chunk_cases: list[Case] = []
            chunk_scores: dict[str, list[Score]] = {label: [] for label in scorers}
            for case in cases:
                if (system.name, case.id) in runner.done:
                    continue
                output = outputs[system.name][case.id]
                scores = {lb: _score_sync(s, case, output, ctx) for lb, s in scorers.items()}
                record = _record(system.name, case, output, scores, scorers)
                batch.append(store.encode(record))
                if len(batch) >= _WRITE_BATCH or time.monotonic() - written > _WRITE_EVERY_S:
                    store.write_lines(b"".join(batch))
                    batch, written = [], time.monotonic()
                table.add(record, scores, keep_views=False)
                chunk_cases.append(case)
                for label, score in scores.items():
                    chunk_scores[label].append(score)
                if len(chunk_cases) == _CHUNK:
                    _aggregate_chunk(table, scorers, chunk_cases, chunk_scores)
                    conn.send(("progress", len(chunk_cases)))
                    chunk_cases = []
            _aggregate_chunk(table, scorers, chunk_cases, chunk_scores)
            conn.send(("progress", len(chunk_cases)))
        store.write_lines(b"".join(batch))
    finally:
        store.close()
        ctx.close()
    conn.send(("done", columns))


def _aggregate_chunk(
    table: SystemColumns,
    scorers: dict[str, Scorer],
    cases: list[Case],
    scores: dict[str, list[Score]],
) -> None:
    if not cases:
        return
    for label, scorer in scorers.items():
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
    n = len(inputs.case_lines)
    workers = max(1, min(int(suite.settings.get("workers", os.cpu_count() or 1)), n))
    bounds = [(n * k // workers, n * (k + 1) // workers) for k in range(workers)]
    ctx = mp.get_context("fork")
    procs, conns = [], []
    for lo, hi in bounds:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(runner, inputs, lo, hi, child), daemon=True)
        proc.start()
        procs.append(proc)
        conns.append(parent)
    try:
        ids: list[str] = []
        metas: list[bytes] = []
        problem: InputError | None = None
        for conn, (lo, _) in zip(conns, bounds, strict=True):  # in shard (= case) order
            msg = conn.recv()
            if msg[0] == "error":
                problem = problem or InputError(
                    msg[1][0], path=msg[1][1], line=msg[1][2], where=msg[1][3]
                )
                continue
            assert lo == len(ids) or problem is not None
            ids.extend(msg[1])
            metas.append(msg[2])
        where = dict(zip(ids, range(len(ids)), strict=True))
        if problem is None and len(where) < len(ids):
            problem = _duplicate_case(inputs, ids)
        if problem is None:
            problem = _unknown_prediction(inputs, where)
        if problem is not None:
            for conn in conns:
                conn.send("stop")
            raise problem
        for conn in conns:
            conn.send("go")
        stubs = [_stub(m) for meta in metas for m in orjson.loads(meta)]
        blocks: list[RunColumns | None] = [None] * len(conns)
        waiting = list(conns)
        while waiting:
            for ready in wait(waiting):
                conn = cast(Connection, ready)
                message = conn.recv()
                if message[0] == "progress":
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
        for proc in procs:
            proc.join(timeout=60)
            if proc.is_alive():  # pragma: no cover - a worker that never answered
                proc.kill()


def _duplicate_case(inputs: _Inputs, ids: list[str]) -> InputError:
    first: dict[str, int] = {}
    for index, case_id in enumerate(ids):
        if case_id in first:
            path, lineno, _ = inputs.case_lines[index]
            where_first = inputs.case_lines[first[case_id]]
            return InputError(
                f"duplicate case id {case_id!r} (first defined in "
                f"{where_first[0]}:{where_first[1]})",
                path=path,
                line=lineno,
            )
        first[case_id] = index
    raise AssertionError("no duplicate")  # pragma: no cover - only called with one


def _unknown_prediction(inputs: _Inputs, known: dict[str, int]) -> InputError | None:
    for by_id in inputs.predictions.values():
        for case_id, lines in by_id.items():
            if case_id not in known:
                path, lineno, _ = lines[0]
                return InputError(
                    f"prediction for unknown case id {case_id!r}",
                    path=path,
                    line=lineno,
                    where="case_id",
                )
    return None


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


def _stub(meta: dict[str, Any]) -> Case:
    return cast(Case, CaseStub(**meta))
