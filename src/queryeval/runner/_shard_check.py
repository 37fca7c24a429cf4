"""The first pass of a large run: workers check every input line, range by range, and the
driver joins what they found into the shards of the second pass.

Nothing is scored or written in this pass. Each worker validates the cases of a range of a
cases file (whole models, then dropped) or reads the keys (case id, attempt) of a range of a
predictions file, and returns a few compact columns: ids, line numbers, byte offsets, and
what summaries read of a case. The driver then applies, in file order, the checks a plain
run applies while loading: the first bad line, a duplicate case id, a prediction for an
unknown case, a second record for one case and attempt, an empty predictions file. Memory
stays small: ids and offsets, never a case or an output.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from queryeval._inputs import BOM
from queryeval.cases import Case, duplicate_case, parse_case_line
from queryeval.errors import InputError
from queryeval.runner._ranges import FileRange, numbered, placed, range_lines
from queryeval.runner._work import SystemPredictions, Unit, done_ids
from queryeval.systems import empty_predictions, prediction_key, repeated_record, unknown_case

_NO_EXTRA: dict[str, Any] = {}


@dataclass(slots=True)
class CaseStub:
    """What summaries and the scorers' `aggregate` read of a case (id, name, tags, metadata,
    labels: see `ShardableScorer`), without holding whole cases for a large run. Stubs
    without metadata or labels share one empty mapping: they are only read."""

    id: str
    name: str
    tags: list[str]
    metadata: dict[str, Any] = field(default_factory=lambda: _NO_EXTRA)
    labels: dict[str, Any] = field(default_factory=lambda: _NO_EXTRA)


@dataclass
class CaseLines:
    """What a worker found in a range of a cases file: per case its line (counted in the
    range), id, name and tags; metadata and labels where a case has them; the first bad
    line, if any (the cases before it are kept: the driver reports problems in file order)."""

    lines: int
    numbers: array[int] = field(default_factory=lambda: array("i"))
    ids: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    tags: list[list[str]] = field(default_factory=list)
    extra: dict[int, tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=dict)
    error: InputError | None = None


@dataclass
class PredictionLines:
    """What a worker found in a range of a predictions file: per record its line (counted
    in the range), byte offset in the file, case id, and attempt number where given."""

    lines: int
    numbers: array[int] = field(default_factory=lambda: array("i"))
    offsets: array[int] = field(default_factory=lambda: array("q"))
    ids: list[str] = field(default_factory=list)
    attempts: dict[int, int] = field(default_factory=dict)
    error: InputError | None = None


@dataclass(frozen=True)
class CheckRange:
    """The first pass's work on one range (picklable, for any executor)."""

    kind: Literal["cases", "predictions"]

    def __call__(self, r: FileRange) -> CaseLines | PredictionLines:
        data = r.read()
        try:
            lines = range_lines(data, r)
        except InputError as exc:  # not UTF-8, a line too long: nothing of the range
            out = CaseLines(0) if self.kind == "cases" else PredictionLines(0)
            out.error = exc
            return out
        if self.kind == "cases":
            return _check_cases(lines, r)
        skipped = len(BOM) if r.start == 0 and data.startswith(BOM) else 0
        return _check_predictions(lines, r.start + skipped, r.path)


def _check_cases(lines: list[bytes], r: FileRange) -> CaseLines:
    out = CaseLines(len(lines))
    for number, raw in numbered(lines):
        try:
            case = parse_case_line(raw, r.path, number)
        except InputError as exc:
            out.error = exc
            break
        _add_case(out, number, case)
    return out


def _add_case(out: CaseLines, number: int, case: Case) -> None:
    if case.metadata or case.labels:
        out.extra[len(out.ids)] = (case.metadata, case.labels)
    out.numbers.append(number)
    out.ids.append(case.id)
    out.names.append(case.name)
    out.tags.append(case.tags)


def _check_predictions(lines: list[bytes], offset: int, path: Path) -> PredictionLines:
    """The keys of the records in `lines`, which start at byte `offset` of the file."""
    out = PredictionLines(len(lines))
    for number, raw in enumerate(lines, start=1):
        at, offset = offset, offset + len(raw) + 1
        if not raw.strip():
            continue
        try:
            case_id, attempt = prediction_key(raw, path, number)
        except InputError as exc:
            out.error = exc
            break
        if attempt is not None:
            out.attempts[len(out.ids)] = attempt
        out.numbers.append(number)
        out.offsets.append(at)
        out.ids.append(case_id)
    return out


# --- the driver's side -------------------------------------------------------------------


@dataclass
class CheckedInputs:
    """The first pass's outcome: the second pass's units and the cases' stubs in order."""

    shards: list[Unit]
    stubs: list[CaseStub]


def check_inputs(
    case_ranges: Sequence[FileRange],
    prediction_ranges: Mapping[str, Sequence[FileRange]],
    paths: Mapping[str, Path],
    check: Callable[[Sequence[tuple[CheckRange, FileRange]], Callable[[int, Any], None]], None],
    done: set[tuple[str, str]],
) -> CheckedInputs:
    """Run the first pass and apply every input check in file order; InputError on the
    first problem. `check(jobs, arrived)` applies each (CheckRange, range) pair, in any
    executor, all at once, and calls `arrived(index, result)` here as each is done (the
    cases are taken in as they come, while the workers go on). `paths`: each system's
    predictions file; `done`: (system, case id) of stored records."""
    jobs = [(CheckRange("cases"), r) for r in case_ranges]
    for ranges in prediction_ranges.values():
        jobs += [(CheckRange("predictions"), r) for r in ranges]
    results: list[Any] = [None] * len(jobs)
    cases = _CaseStubs(case_ranges)

    def arrived(index: int, result: Any) -> None:
        results[index] = result
        while cases.taken < len(case_ranges) and results[cases.taken] is not None:
            cases.take(results[cases.taken])

    check(jobs, arrived)
    stubs, starts = cases.stubs, cases.starts
    if not stubs:
        path = case_ranges[0].path if case_ranges else None
        raise InputError("no cases matched", path=path, where="cases")
    at = len(case_ranges)
    positions: dict[str, int] | None = None
    per_system: dict[str, SystemPredictions] = {}
    ids = [s.id for s in stubs]
    for system, ranges in prediction_ranges.items():
        lines = results[at : at + len(ranges)]
        at += len(ranges)
        if _follows_cases(lines, ids):
            per_system[system] = _aligned(paths[system], ranges, lines)
            continue
        if positions is None:
            positions = {case_id: i for i, case_id in enumerate(ids)}
        per_system[system] = _grouped(paths[system], ranges, lines, positions)
    shards = _shards(case_ranges, cases.before, starts, per_system, stubs, done)
    return CheckedInputs(shards, stubs)


class _CaseStubs:
    """The cases' stubs, built from the ranges' results taken in file order; the first bad
    line or duplicate id (in file order) is an InputError."""

    def __init__(self, ranges: Sequence[FileRange]) -> None:
        self.ranges = ranges
        self.stubs: list[CaseStub] = []
        self.starts: list[int] = []  # the position of each range's first case, then the end
        self.taken = 0
        self.before: list[int] = []  # lines of its file before each range
        self._numbers: list[array[int]] = []
        self._file_lines = 0
        self._first_at: dict[str, int] = {}
        self._tags: dict[tuple[str, ...], list[str]] = {}

    def take(self, part: CaseLines) -> None:
        """The next range's cases."""
        k = self.taken
        r = self.ranges[k]
        same_file = k > 0 and self.ranges[k - 1].path == r.path
        before = self._file_lines if same_file else 0
        self._file_lines = before + part.lines  # lines of the file up to this range's end
        self.before.append(before)
        self._numbers.append(part.numbers)
        stubs, first_at, shared_tags = self.stubs, self._first_at, self._tags
        start = len(stubs)
        self.starts.append(start)
        for i, case_id in enumerate(part.ids):
            earlier = first_at.setdefault(case_id, start + i)
            if earlier != start + i:
                line = before + part.numbers[i]
                raise duplicate_case(case_id, self._place(earlier), r.path, line)
            tags = part.tags[i]
            tags = shared_tags.setdefault(tuple(tags), tags)
            stub = CaseStub(case_id, part.names[i], tags)
            extra = part.extra.get(i)
            if extra is not None:
                stub.metadata, stub.labels = extra
            stubs.append(stub)
        self.taken += 1
        if part.error is not None:
            raise placed(part.error, before)
        if self.taken == len(self.ranges):
            self.starts.append(len(stubs))

    def _place(self, position: int) -> str:
        """FILE:LINE of the case at `position`."""
        k = bisect_right(self.starts, position) - 1
        number = self._numbers[k][position - self.starts[k]]
        return f"{self.ranges[k].path}:{self.before[k] + number}"


def _lines_before(ranges: Sequence[FileRange], found: Sequence[Any]) -> list[int]:
    """For each range, the lines of its file before it."""
    out: list[int] = []
    path, count = None, 0
    for r, part in zip(ranges, found, strict=True):
        if r.path != path:
            path, count = r.path, 0
        out.append(count)
        count += part.lines
    return out


def _follows_cases(found: Sequence[PredictionLines], ids: list[str]) -> bool:
    """Whether the file holds one record per case, in case order, and nothing else (no bad
    line, no attempt numbers): then no grouping is needed."""
    at = 0
    for part in found:
        if part.error is not None or part.attempts or part.ids != ids[at : at + len(part.ids)]:
            return False
        at += len(part.ids)
    return at == len(ids)


def _aligned(
    path: Path, ranges: Sequence[FileRange], found: Sequence[PredictionLines]
) -> SystemPredictions:
    before = _lines_before(ranges, found)
    offsets: array[int] = array("q")
    lines: array[int] = array("i")
    for part, n in zip(found, before, strict=True):
        offsets.extend(part.offsets)
        lines.extend(number + n for number in part.numbers)
    return SystemPredictions(path, offsets, lines)


def _grouped(
    path: Path,
    ranges: Sequence[FileRange],
    found: Sequence[PredictionLines],
    positions: dict[str, int],
) -> SystemPredictions:
    """Records grouped by case, checked in file order: an unknown case id, a second record
    for a case and attempt, the first bad line, an empty file."""
    n = len(positions)
    offsets = array("q", [-1]) * n
    lines = array("i", [0]) * n
    first_attempt: dict[int, int] = {}  # case position -> its first record's attempt, if any
    repeated: dict[int, list[tuple[int, int, int | None]]] = {}  # (offset, line, attempt)s
    records = 0
    for part, before in zip(found, _lines_before(ranges, found), strict=True):
        for i, case_id in enumerate(part.ids):
            records += 1
            line = before + part.numbers[i]
            pos = positions.get(case_id)
            if pos is None:
                raise unknown_case(path, line, case_id)
            attempt = part.attempts.get(i)
            if offsets[pos] < 0:
                offsets[pos], lines[pos] = part.offsets[i], line
                if attempt is not None:
                    first_attempt[pos] = attempt
                continue
            records_of = repeated.setdefault(
                pos, [(offsets[pos], lines[pos], first_attempt.get(pos))]
            )
            earlier = [(number, tried) for _, number, tried in records_of]
            problem = repeated_record(path, line, case_id, attempt, earlier)
            if problem is not None:
                raise problem
            records_of.append((part.offsets[i], line, attempt))
        if part.error is not None:
            raise placed(part.error, before)
    if not records:
        raise empty_predictions(path)
    more = {pos: [(o, number) for o, number, _ in recs] for pos, recs in repeated.items()}
    return SystemPredictions(path, offsets, lines, more)


def _shards(
    ranges: Sequence[FileRange],
    before: list[int],
    starts: list[int],
    per_system: Mapping[str, SystemPredictions],
    stubs: list[CaseStub],
    done: set[tuple[str, str]],
) -> list[Unit]:
    shards: list[Unit] = []
    for k, r in enumerate(ranges):
        a, b = starts[k], starts[k + 1]
        if a == b:
            continue
        preds = {
            system: SystemPredictions(
                where.path,
                where.offsets[a:b],
                where.lines[a:b],
                {pos - a: recs for pos, recs in where.more.items() if a <= pos < b},
            )
            for system, where in per_system.items()
        }
        shards.append(
            Unit(
                len(shards),
                tuple(per_system),
                r,
                lines_before=before[k],
                offsets=preds,
                done=done_ids(tuple(per_system), stubs[a:b], done),
                count=b - a,
            )
        )
    return shards
