"""The first pass of a large run: workers check every input line, range by range (nothing
is scored or written); the driver applies, in file order, the checks a plain run applies
while loading, and cuts the units of the second pass. It holds the cases' stubs, ids and
offsets, never a case or an output."""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queryeval.cases import duplicate_case
from queryeval.errors import InputError
from queryeval.runner._ranges import FileRange, parse_cases, placed
from queryeval.runner._work import SystemPredictions, Unit, cut_units
from queryeval.systems import empty_predictions, prediction_key, repeated_record, unknown_case

_NO_EXTRA: dict[str, Any] = {}


@dataclass(slots=True)
class CaseStub:
    """What summaries and the scorers' `aggregate` read of a case (see `ShardableScorer`),
    so a large run holds no whole case; an empty metadata or labels mapping is shared."""

    id: str
    name: str
    tags: list[str]
    metadata: dict[str, Any] = field(default_factory=lambda: _NO_EXTRA)
    labels: dict[str, Any] = field(default_factory=lambda: _NO_EXTRA)


@dataclass
class Found:
    """What a worker found in a range: its line count; per case or record its line (counted
    in the range) and `items` (a case's stub fields, or a record's case id); a record's
    byte offset and attempt number; the first bad line (what precedes it is kept)."""

    lines: int = 0
    numbers: array[int] = field(default_factory=lambda: array("i"))
    items: list[Any] = field(default_factory=list)
    offsets: array[int] = field(default_factory=lambda: array("q"))
    attempts: dict[int, int] = field(default_factory=dict)
    error: InputError | None = None


def check_range(job: tuple[bool, FileRange]) -> Found:
    """The first pass's work on a range: `(True, r)` validates the cases of a cases file's
    range, `(False, r)` reads the keys of the records of a predictions file's."""
    (cases, r), found, tags = job, Found(), dict[tuple[str, ...], list[str]]()
    try:
        offset, lines = r.lines()
        found.lines = len(lines)
        for number, case in parse_cases(lines, r.path) if cases else ():
            found.numbers.append(number)
            shared = tags.setdefault(tuple(case.tags), case.tags)
            fields: tuple[Any, ...] = (case.id, case.name, shared)
            if case.metadata or case.labels:  # else the stub's shared empty mappings
                fields += (case.metadata, case.labels)
            found.items.append(fields)
        for number, raw in enumerate(lines if not cases else (), start=1):
            at, offset = offset, offset + len(raw) + 1
            if raw.strip():
                case_id, attempt = prediction_key(raw, r.path, number)
                if attempt is not None:
                    found.attempts[len(found.items)] = attempt
                found.numbers.append(number)
                found.offsets.append(at)
                found.items.append(case_id)
    except InputError as exc:
        found.error = exc
    return found


def check_inputs(
    case_ranges: Sequence[FileRange],
    prediction_ranges: Mapping[str, Sequence[FileRange]],
    paths: Mapping[str, Path],
    map_: Callable[[list[Any], Callable[[Any], Found], Callable[[Found], None]], None],
    done: set[tuple[str, str]],
) -> tuple[list[Unit], list[CaseStub]]:
    """Run the first pass and apply every input check in file order (InputError on the
    first problem): the second pass's units, and the cases' stubs in order.
    `map_(jobs, check_range, arrived)` (an executor's `map`) checks the ranges anywhere and
    calls `arrived` here in job order: the cases are taken in as they come. `paths`: each
    system's predictions file; `done`: stored (system, id)."""
    jobs = [(True, r) for r in case_ranges]
    jobs += [(False, r) for ranges in prediction_ranges.values() for r in ranges]
    cases, found = _Cases(case_ranges), list[Found]()
    map_(
        jobs,
        check_range,
        lambda got: cases.take(got) if cases.taken < len(case_ranges) else found.append(got),
    )
    if not cases.stubs:
        path = case_ranges[0].path if case_ranges else None
        raise InputError("no cases matched", path=path, where="cases")
    per_system = {}
    for system, ranges in prediction_ranges.items():
        per_system[system] = _grouped(paths[system], found[: len(ranges)], cases.positions)
        del found[: len(ranges)]
    parts, starts = [], cases.starts
    for k, (r, a, b) in enumerate(zip(case_ranges, starts, starts[1:], strict=False)):
        outputs = {name: where.part(a, b) for name, where in per_system.items()}
        parts.append((tuple(per_system), r, cases.stubs[a:b], outputs, cases.before[k]))
    return cut_units(parts, done), cases.stubs


class _Cases:
    """The cases' stubs, taken from the ranges' results in file order; the first bad line
    or duplicate id is an InputError."""

    def __init__(self, ranges: Sequence[FileRange]) -> None:
        self.ranges = ranges
        self.stubs: list[CaseStub] = []
        self.positions: dict[str, int] = {}  # case id -> position
        self.starts: list[int] = []  # each range's first position, then the end
        self.before: list[int] = []  # lines of its file before each range
        self.taken = self._lines = 0
        self._numbers: list[array[int]] = []

    def take(self, part: Found) -> None:
        """The next range's cases."""
        k, r = self.taken, self.ranges[self.taken]
        same_file = k > 0 and self.ranges[k - 1].path == r.path
        before = self.before[-1] + self._lines if same_file else 0
        self._lines = part.lines
        self.before.append(before)
        self._numbers.append(part.numbers)
        stubs, positions = self.stubs, self.positions
        start = len(stubs)
        self.starts.append(start)
        for i, fields in enumerate(part.items):
            earlier = positions.setdefault(fields[0], start + i)
            if earlier != start + i:
                line = before + part.numbers[i]
                raise duplicate_case(fields[0], self._place(earlier), r.path, line)
            stubs.append(CaseStub(*fields))
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


def _grouped(path: Path, found: Sequence[Found], positions: dict[str, int]) -> SystemPredictions:
    """A predictions file's records by case, checked in file order: an unknown case id, a
    second record for a case and attempt, the first bad line, an empty file."""
    n = len(positions)
    offsets, lines = array("q", [-1]) * n, array("i", [0]) * n
    records: dict[int, list[tuple[int, int, int | None]]] = {}  # (offset, line, attempt)s
    before = count = 0
    for part in found:
        for i, case_id in enumerate(part.items):
            line, attempt = before + part.numbers[i], part.attempts.get(i)
            pos = positions.get(case_id)
            if pos is None:
                raise unknown_case(path, line, case_id)
            if offsets[pos] < 0:
                offsets[pos], lines[pos] = part.offsets[i], line
                if attempt is not None:
                    records[pos] = [(offsets[pos], line, attempt)]
                continue
            earlier = records.setdefault(pos, [(offsets[pos], lines[pos], None)])
            problem = repeated_record(path, line, case_id, attempt, [e[1:] for e in earlier])
            if problem is not None:
                raise problem
            earlier.append((part.offsets[i], line, attempt))
        count += len(part.items)
        if part.error is not None:
            raise placed(part.error, before)
        before += part.lines
    if not count:
        raise empty_predictions(path)
    more = {pos: [(o, number) for o, number, _ in recs] for pos, recs in records.items()}
    return SystemPredictions(path, offsets, lines, {p: m for p, m in more.items() if len(m) > 1})
