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
from queryeval.cases import Case, Output
from queryeval.cases._load import expand
from queryeval.errors import InputError
from queryeval.runner._store import json_default
from queryeval.scorers import ScoringContext
from queryeval.stats._summary import ScoreView
from queryeval.systems import parse_prediction_line

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig
    from queryeval.runner._progress import Progress
    from queryeval.runner._run import Runner

MIN_CASES = 20_000  # below this, forking costs more than it saves
_CHUNK = 2_000  # records a worker sends at a time
# Workers write records in small batches (one system call per batch, not per record): their
# work is pure local computation, so a kill loses at most ~50 ms of it, which resume redoes.
_WRITE_BATCH = 256
_WRITE_EVERY_S = 0.05
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
    conn.send(("ids", [(c.id, lo + i) for i, c in enumerate(cases)], orjson.dumps(meta)))
    if conn.recv() != "go":
        return
    ctx = ScoringContext(runner.plan.suite, cache_dir=runner.ctx.cache_dir)
    scorers = runner.plan.scorers
    for scorer in scorers.values():
        scorer.prepare(cases, ctx)
    store = runner.store
    store.open_for_append()
    slims: list[bytes] = []
    batch: list[bytes] = []
    written = time.monotonic()
    try:
        for system in runner.plan.systems:
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
                slim = {k: v for k, v in record.items() if k != "output"}
                # the record's score JSON, details cut to what summaries read
                slim["scores"] = {
                    label: {**stored, "details": scorers[label].summary_view(stored["details"])}
                    if "details" in stored
                    else stored
                    for label, stored in record["scores"].items()
                }
                slims.append(
                    orjson.dumps(slim, default=json_default, option=orjson.OPT_SERIALIZE_NUMPY)
                )
                if len(slims) == _CHUNK:  # the parent reads chunks while workers go on
                    conn.send(("chunk", len(slims), b"[" + b",".join(slims) + b"]"))
                    slims = []
        store.write_lines(b"".join(batch))
    finally:
        store.close()
        ctx.close()
    conn.send(("done", len(slims), b"[" + b",".join(slims) + b"]"))


def run_sharded(
    runner: Runner, inputs: _Inputs, bar: Progress
) -> tuple[list[Case], list[dict[str, Any]]]:
    """Run the plan on forked workers over inputs from `read_inputs`; returns (case stubs in
    order, slim records)."""
    with bulk_allocation():
        return _run_sharded(runner, inputs, bar)


def _run_sharded(
    runner: Runner, inputs: _Inputs, bar: Progress
) -> tuple[list[Case], list[dict[str, Any]]]:
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
        where: dict[str, int] = {}
        problem: InputError | None = None
        stubs: list[Case] = []
        for conn in conns:  # in shard order, so the stubs are in case order
            msg = conn.recv()
            if msg[0] == "error":
                problem = problem or InputError(
                    msg[1][0], path=msg[1][1], line=msg[1][2], where=msg[1][3]
                )
                continue
            stubs.extend(_stub(m) for m in orjson.loads(msg[2]))
            for case_id, index in msg[1]:
                if case_id in where and problem is None:
                    path, lineno, _ = inputs.case_lines[index]
                    first = inputs.case_lines[where[case_id]]
                    problem = InputError(
                        f"duplicate case id {case_id!r} (first defined in {first[0]}:{first[1]})",
                        path=path,
                        line=lineno,
                    )
                where.setdefault(case_id, index)
        if problem is None:
            problem = _unknown_prediction(inputs, where)
        if problem is not None:
            for conn in conns:
                conn.send("stop")
            raise problem
        for conn in conns:
            conn.send("go")
        slims: list[dict[str, Any]] = []
        waiting = list(conns)
        while waiting:
            for ready in wait(waiting):
                conn = cast(Connection, ready)
                kind, count, payload = conn.recv()
                bar.advance(count)
                for rec in orjson.loads(payload):
                    rec["scores"] = {k: ScoreView(v) for k, v in rec["scores"].items()}
                    slims.append(rec)
                if kind == "done":
                    waiting.remove(conn)
        return stubs, slims
    finally:
        for proc in procs:
            proc.join(timeout=60)
            if proc.is_alive():  # pragma: no cover - a worker that never answered
                proc.kill()


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
