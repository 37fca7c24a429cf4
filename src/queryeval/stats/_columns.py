"""What summaries read of a run's records, kept as columns: one row per record.

Records arrive from the run as it goes, from results.jsonl on resume, or as blocks from the
forked workers of a large run. Each is reduced to a row of typed arrays (a few bytes a
record instead of a dict of dicts), blocks are joined by plain concatenation, and
`finish` puts the rows in case order, so every source gives the same summary.

Collecting needs no numpy (a process that only checks a suite, or collects a run's rows,
does not import it); `finish` and the tables it makes use it.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar, cast

if TYPE_CHECKING:
    import numpy as np

    from queryeval.cases import Case, CaseInfo, Score
    from queryeval.scorers import Scorer

OK, UNSCORED, ERROR, ABSENT = 0, 1, 2, -1
_STATUS = {"ok": OK, "unscored": UNSCORED, "error": ERROR}
_NAN = float("nan")
T = TypeVar("T")


_REASON_CHARS = 120


def record_latency(record: Mapping[str, Any]) -> float | None:
    """A record's latency: its `latency_s`, else the sum of its attempts' latencies (saved
    predictions record them per attempt), else None. An output still held as serialised
    JSON (a record of the run in progress) gives only its `latency_s`.

    >>> record_latency({"latency_s": None, "output": {"attempts": [{"latency_s": 0.5},
    ...     {"latency_s": 0.25}, {"query": "x"}]}})
    0.75
    """
    latency = record.get("latency_s")
    if isinstance(latency, int | float) and not isinstance(latency, bool):
        return float(latency)
    output = record.get("output")
    attempts = output.get("attempts") if isinstance(output, Mapping) else None
    times = [
        a["latency_s"]
        for a in attempts or ()
        if isinstance(a, Mapping)
        and isinstance(a.get("latency_s"), int | float)
        and not isinstance(a.get("latency_s"), bool)
    ]
    return float(sum(times)) if times else None


def _reason_key(status: str, explanation: str | None) -> str:
    """The line a not-scored reason is counted under: the first line, past 120 characters
    cut at a word boundary with an ellipsis (a report never shows half a word).

    >>> _reason_key("unscored", "gold query failed: " + "no such table " * 20)[-16:]
    'o such table no…'
    """
    line = (explanation or status).split("\n")[0]
    if len(line) <= _REASON_CHARS:
        return line
    cut = line[: _REASON_CHARS - 1]
    space = cut.rfind(" ", _REASON_CHARS // 2)
    if space > 0 and not line[_REASON_CHARS - 1].isspace():
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


class ScoreView:
    """A stored score read back for summaries: the attributes of a Score without
    re-validating every record (a summary reads them; it never changes them)."""

    __slots__ = ("details", "explanation", "passed", "status", "value")

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.value = data.get("value")
        self.status = data.get("status", "ok")
        self.passed = data.get("passed")
        self.details = data.get("details") or {}
        self.explanation = data.get("explanation", "")

    @property
    def failure_reason(self) -> str | None:
        """The failure reason when the score is the system's failure (see Score)."""
        reason = self.details.get("failure")
        return reason if isinstance(reason, str) else None


@dataclass
class ScorerColumns:
    """One scorer's scores: value (NaN when none), status and verdict codes, the numeric
    sub-metrics of `ok` scores (NaN where a score has none), reasons of the others."""

    values: array[float] = field(default_factory=lambda: array("d"))
    status: array[int] = field(default_factory=lambda: array("b"))
    passed: array[int] = field(default_factory=lambda: array("b"))
    metrics: dict[str, array[float]] = field(default_factory=dict)
    reasons: dict[int, str] = field(default_factory=dict)  # row -> reason (not ok)
    failures: dict[int, str] = field(default_factory=dict)  # row -> failure reason (ok, 0)
    # rows' scores, for the scorer's own `aggregate`; or partial aggregates where the rows'
    # scores were aggregated where they were made (the sharded workers)
    views: dict[int, Score] = field(default_factory=dict)
    partials: list[Any] = field(default_factory=list)

    def add(self, score: Score | None, row: int, keep_view: bool) -> None:
        """Append the row's score (None: the record has no score of this scorer)."""
        if score is None:
            self.values.append(_NAN)
            self.status.append(ABSENT)
            self.passed.append(-1)
            return
        value = score.value
        status = _STATUS.get(score.status, ERROR)
        ok = status == OK and value is not None and value == value  # NaN is no value
        self.values.append(value if ok else _NAN)  # type: ignore[arg-type]
        self.status.append(status)
        passed = score.passed
        self.passed.append(-1 if passed is None else passed)
        if keep_view:
            self.views[row] = score
        if not ok:
            if status != OK:
                self.reasons[row] = _reason_key(score.status, score.explanation)
            return
        details = score.details
        if not details:
            return
        failure = details.get("failure")
        if failure:
            self.failures[row] = str(failure)
        metrics = details.get("metrics")
        if not metrics:
            return
        columns = self.metrics
        for name, v in metrics.items():
            kind = type(v)
            if (kind is float and v == v) or kind is int:  # not bool, None or NaN
                column = columns.get(name)
                if column is None:
                    column = columns[name] = array("d")
                if len(column) != row:  # rows before this one had no value of it
                    column.extend([_NAN] * (row - len(column)))
                column.append(v)

    def error_count(self) -> tuple[int, int]:
        """(rows whose scorer broke (`error`), rows that have a score of this scorer)."""
        status = self.status
        return status.count(ERROR), len(status) - status.count(ABSENT)

    def extend(self, other: ScorerColumns, offset: int) -> None:
        """Append another block's rows (it starts at row `offset` here)."""
        for name, column in other.metrics.items():
            mine = self.metrics.get(name)
            if mine is None:
                mine = self.metrics[name] = array("d")
            mine.extend([_NAN] * (offset - len(mine)))
            mine.extend(column)
        self.values.extend(other.values)
        self.status.extend(other.status)
        self.passed.extend(other.passed)
        self.reasons.update({offset + r: v for r, v in other.reasons.items()})
        self.failures.update({offset + r: v for r, v in other.failures.items()})
        self.views.update({offset + r: v for r, v in other.views.items()})
        self.partials.extend(other.partials)


@dataclass
class SystemColumns:
    """One system's records: case id, verdict, system error, latency, cost, scores."""

    case_ids: list[str] = field(default_factory=list)
    passed: array[int] = field(default_factory=lambda: array("b"))
    error: array[int] = field(default_factory=lambda: array("b"))
    latency: array[float] = field(default_factory=lambda: array("d"))
    cost: array[float] = field(default_factory=lambda: array("d"))
    scorers: dict[str, ScorerColumns] = field(default_factory=dict)

    def add(
        self,
        record: Mapping[str, Any],
        scores: Mapping[str, Any] | None = None,
        keep_views: bool = True,
    ) -> None:
        """Append a record (its `scores`, or those given: Score models, views or stored
        mappings). `keep_views`: keep the scores for the scorers' own `aggregate`."""
        row = len(self.case_ids)
        self.case_ids.append(record["case_id"])
        passed = record.get("passed")
        self.passed.append(-1 if passed is None else passed)
        self.error.append(1 if record.get("error") else 0)
        latency, cost = record_latency(record), record.get("cost")
        self.latency.append(_NAN if latency is None else latency)
        self.cost.append(_NAN if cost is None else cost)
        scores = record["scores"] if scores is None else scores
        columns = self.scorers
        for label, score in scores.items():
            column = columns.get(label)
            if column is None:
                column = self._column(label, row)
            # a stored score is read through a view with a Score's attributes
            view = score if type(score) is not dict else cast("Score", ScoreView(score))
            column.add(view, row, keep_views)
        if len(columns) != len(scores):  # scorers this record has no score of
            for column in columns.values():
                if len(column.status) == row:
                    column.add(None, row, False)

    def _column(self, label: str, row: int) -> ScorerColumns:
        column = self.scorers.get(label)
        if column is None:  # a scorer first seen now: earlier rows have no score of it
            column = self.scorers[label] = ScorerColumns()
            for r in range(row):
                column.add(None, r, False)
        return column

    def __len__(self) -> int:
        return len(self.case_ids)

    def extend(self, other: SystemColumns) -> None:
        """Append another block's rows."""
        offset = len(self)
        for label in other.scorers:
            self._column(label, offset)
        self.case_ids.extend(other.case_ids)
        self.passed.extend(other.passed)
        self.error.extend(other.error)
        self.latency.extend(other.latency)
        self.cost.extend(other.cost)
        for label, column in self.scorers.items():
            theirs = other.scorers.get(label)
            if theirs is None:
                for r in range(len(other)):
                    column.add(None, offset + r, False)
            else:
                column.extend(theirs, offset)


class RunColumns:
    """Columns of every system of a run, filled as records come."""

    def __init__(self, system_names: Sequence[str] = ()) -> None:
        self.systems: dict[str, SystemColumns] = {name: SystemColumns() for name in system_names}

    def system(self, name: str) -> SystemColumns:
        """The columns of one system (created on first use)."""
        columns = self.systems.get(name)
        if columns is None:
            columns = self.systems[name] = SystemColumns()
        return columns

    def add(self, record: Mapping[str, Any], scores: Mapping[str, Any] | None = None) -> None:
        """Append one record (stored mapping or as the runner made it)."""
        self.system(record["system"]).add(record, scores)

    def extend(self, other: RunColumns) -> None:
        """Append every system's rows of another block."""
        for name, columns in other.systems.items():
            self.system(name).extend(columns)

    def __len__(self) -> int:
        return sum(len(c) for c in self.systems.values())


@dataclass
class ScorerTable:
    """A scorer's columns in case order, as numpy arrays."""

    values: np.ndarray
    status: np.ndarray
    passed: np.ndarray
    metrics: dict[str, np.ndarray]
    reasons: list[str]  # in row order
    views: list[tuple[int, Score]]  # (row, score) in row order
    partials: list[Any]
    failures: list[tuple[int, str]] = field(default_factory=list)  # (row, reason), row order

    @property
    def ok(self) -> np.ndarray:
        """Rows whose score has a value that counts (failures included: they count 0)."""
        import numpy as np

        return (self.status == OK) & ~np.isnan(self.values)

    @property
    def failed(self) -> np.ndarray:
        """Rows that are the system's failures."""
        import numpy as np

        mask = np.zeros(len(self.status), dtype=bool)
        if self.failures:
            mask[np.fromiter((r for r, _ in self.failures), dtype=np.int64)] = True
        return mask


@dataclass
class SystemTable:
    """A system's rows in case order: case positions and numpy columns."""

    case_index: np.ndarray
    passed: np.ndarray
    error: np.ndarray
    latency: np.ndarray
    cost: np.ndarray
    scorers: dict[str, ScorerTable]

    def cases(self, all_cases: Sequence[CaseInfo], rows: list[int]) -> list[CaseInfo]:
        """The cases (or the cases' infos) of the rows."""
        return [all_cases[i] for i in self.case_index[rows].tolist()]


def _take(column: array[Any], dtype: type, rows: np.ndarray, n: int, pad: float) -> np.ndarray:
    import numpy as np

    data: np.ndarray = (
        np.frombuffer(column, dtype=dtype) if len(column) else np.empty(0, dtype=dtype)
    )
    if len(data) < n:
        data = np.concatenate([data, np.full(n - len(data), pad, dtype=dtype)])
    return data[rows]


def _reorder(sparse: dict[int, T], new_row: dict[int, int] | None) -> list[tuple[int, T]]:
    """(new row, item) of the kept rows, in the new row order (None: rows stay as they are)."""
    if new_row is None:
        return sorted(sparse.items(), key=lambda pair: pair[0])
    kept = [(new_row[r], item) for r, item in sparse.items() if r in new_row]
    kept.sort(key=lambda pair: pair[0])
    return kept


def finish(columns: SystemColumns, cases: Sequence[CaseInfo]) -> SystemTable:
    """The rows whose case is known, in case order."""
    import numpy as np

    n = len(columns)
    case_ids = [c.id for c in cases]
    new_row: dict[int, int] | None = None
    if columns.case_ids == case_ids:  # one row per case, in case order (a sharded run's)
        rows = position = np.arange(n, dtype=np.int64)
    else:
        index = {case_id: i for i, case_id in enumerate(case_ids)}
        position = np.array([index.get(cid, -1) for cid in columns.case_ids], dtype=np.int64)
        known = np.flatnonzero(position >= 0)
        rows = known[np.argsort(position[known], kind="stable")]
        new_row = {old: new for new, old in enumerate(rows.tolist())}
    scorers = {}
    for label, col in columns.scorers.items():
        scorers[label] = ScorerTable(
            values=_take(col.values, np.float64, rows, n, _NAN),
            status=_take(col.status, np.int8, rows, n, ABSENT),
            passed=_take(col.passed, np.int8, rows, n, -1),
            metrics={
                name: _take(m, np.float64, rows, n, _NAN) for name, m in sorted(col.metrics.items())
            },
            reasons=[reason for _, reason in _reorder(col.reasons, new_row)],
            views=_reorder(col.views, new_row),
            partials=col.partials,
            failures=_reorder(col.failures, new_row),
        )
    return SystemTable(
        case_index=position[rows],
        passed=_take(columns.passed, np.int8, rows, n, -1),
        error=_take(columns.error, np.int8, rows, n, 0),
        latency=_take(columns.latency, np.float64, rows, n, _NAN),
        cost=_take(columns.cost, np.float64, rows, n, _NAN),
        scorers=scorers,
    )


def _whole(cases: Sequence[CaseInfo]) -> TypeGuard[Sequence[Case]]:
    """Whether every case is a whole `Case` (not a sharded run's stub)."""
    from queryeval.cases import Case

    return all(isinstance(c, Case) for c in cases)


def aggregate_of(scorer: Scorer, table: SystemTable, cases: Sequence[CaseInfo]) -> dict[str, Any]:
    """The scorer's own dataset-level figures: from its rows' scores, merged with partial
    aggregates made elsewhere (sharded workers) when there are any. A shardable scorer is
    given the cases' infos as they are; any other scorer only ever sees whole cases (a run
    holds stubs only when every scorer is shardable)."""
    from queryeval.scorers import ShardableScorer

    column = table.scorers.get(scorer.label)
    if column is None:
        return scorer.aggregate([], [])
    rows = [r for r, _ in column.views]
    scores = [s for _, s in column.views]
    picked = table.cases(cases, rows)
    if not isinstance(scorer, ShardableScorer):
        assert not column.partials, "only shardable scorers send partials"
        assert _whole(picked), "case stubs only reach shardable scorers"
        return scorer.aggregate(picked, scores)
    if not column.partials:
        return scorer.aggregate(picked, scores)
    partials = list(column.partials)
    if scores:
        partials.append(scorer.aggregate_partial(picked, scores))
    return scorer.aggregate_merge(partials)
