"""The index's columns of run records (what the viewer, `compare` and `history` filter and
sort on), built one record at a time into plain lists and handed to Arrow once per batch:
no dict per row, each column built in C from its list.

Below the runner and the viewer (both may build them: the viewer from results.jsonl, a
worker from the records it holds).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

import orjson

from queryeval.cases import failure_label

TEXT_CHARS = 2_000  # the prediction kept for search and the table (cut)
_FIXED = ("system", "case_id", "passed", "error", "latency", "cost", "tokens_in", "tokens_out",
          "attempts", "prediction")  # fmt: skip
_TAIL = ("reason", "status")


def cut_text(text: str, limit: int = TEXT_CHARS) -> str:
    """`text` cut to `limit` characters (an ellipsis marks the cut).

    >>> cut_text("abcdef", 3)
    'abc…'
    """
    return text if len(text) <= limit else text[:limit] + "…"


def number(value: Any) -> float | None:
    """A finite-or-infinite float of a JSON number; None for anything else (NaN, bools).

    >>> number(2), number(True), number(float("nan")), number("1")
    (2.0, None, None, None)
    """
    kind = type(value)  # the exact types first: this runs a dozen times a record
    if kind is float:
        return value if value == value else None
    if kind is int:
        return float(value)
    if value is None or kind is bool or not isinstance(value, int | float) or value != value:
        return None
    return float(value)


def _mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return type(value) is dict or isinstance(value, Mapping)


def attempt_text(attempt: Mapping[str, Any]) -> str:
    """What an attempt said, as text: its query or answer, else its structured output."""
    for key in ("query", "answer"):
        value = attempt.get(key)
        if value:
            return str(value)
    for key in ("weaviate_query", "indicator_selection"):
        value = attempt.get(key)
        if value is not None:
            return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    return ""


def _totals(attempts: list[Any]) -> tuple[list[float], list[float], list[float]]:
    """The attempts' latencies, input and output tokens (the numbers given)."""
    times, ins, outs = [], [], []
    for a in attempts:
        if (t := number(a.get("latency_s"))) is not None:
            times.append(t)
        if (t := number(a.get("tokens_in"))) is not None:
            ins.append(t)
        if (t := number(a.get("tokens_out"))) is not None:
            outs.append(t)
    return times, ins, outs


class RecordColumns:
    """The index's columns of records: `add` one record, `row()` as a dict, `table()` the
    rows so far as an Arrow table (with the extra columns given, e.g. the lines' offsets).

    >>> cols = RecordColumns()
    >>> cols.add({"system": "s", "case_id": "c", "passed": False, "error": None,
    ...     "output": {"attempts": [{"query": "SELECT 1", "tokens_in": 5}]},
    ...     "scores": {"em": {"value": 0.0, "status": "ok", "passed": False,
    ...                       "details": {"failure": "wrong_result", "metrics": {"f1": 0.5}}}}})
    >>> row = cols.row(0)
    >>> row["status"], row["reason"], row["prediction"], row["v:em"], row["m:em.f1"]
    ('fail', 'wrong result', 'SELECT 1', 0.0, 0.5)
    >>> cols.table({"row": [0]}).num_rows
    1
    """

    def __init__(self) -> None:
        self.n = 0
        self.fixed: dict[str, list[Any]] = {name: [] for name in (*_FIXED, *_TAIL)}
        self.extra: dict[str, list[Any]] = {}  # v:LABEL and m:LABEL.SUB, as first seen
        self._first = 0  # extra columns the first record had (their place in the table)
        self._names: dict[str, tuple[str, dict[str, str]]] = {}  # label: v:, {metric: m:}

    def __len__(self) -> int:
        return self.n

    def _set(self, name: str, value: float) -> None:
        column = self.extra.get(name)
        if column is not None and len(column) == self.n:  # the common case
            column.append(value)
            return
        if column is None:
            column = self.extra[name] = []
        elif len(column) > self.n:  # set twice in one record (`m:a.b` + `c` = `m:a` + `b.c`)
            column[-1] = value
            return
        if len(column) < self.n:
            column.extend([None] * (self.n - len(column)))
        column.append(value)

    def add(self, rec: Mapping[str, Any]) -> None:
        """One record's row (a record as stored in results.jsonl, parsed)."""
        get = rec.get
        output = get("output") or {}
        attempts = output.get("attempts") if _mapping(output) else None
        if type(attempts) is not list:
            attempts = []
        elif not all(type(a) is dict for a in attempts):
            attempts = [a for a in attempts if _mapping(a)]
        passed = get("passed")
        error = get("error")
        latency = number(get("latency_s"))
        tokens_in: float | None = None
        tokens_out: float | None = None
        if attempts:
            times, ins, outs = _totals(attempts)
            if latency is None and times:
                latency = sum(times)
            tokens_in = int(sum(ins)) if ins else None
            tokens_out = int(sum(outs)) if outs else None
        fixed = self.fixed
        fixed["system"].append(str(get("system")))
        fixed["case_id"].append(str(get("case_id")))
        fixed["passed"].append(None if passed is None else bool(passed))
        fixed["error"].append(cut_text(str(error), 500) if error else None)
        fixed["latency"].append(latency)
        fixed["cost"].append(number(get("cost")))
        fixed["tokens_in"].append(tokens_in)
        fixed["tokens_out"].append(tokens_out)
        fixed["attempts"].append(len(attempts))
        fixed["prediction"].append(cut_text(attempt_text(attempts[-1])) if attempts else "")
        reason: str | None = "system error" if error else None
        scores = get("scores") or {}
        for label, score in scores.items() if _mapping(scores) else ():
            if not _mapping(score):
                continue
            status = score.get("status", "ok")
            value = number(score.get("value"))
            if status != "ok" or value is None:
                if reason is None:
                    first = str(score.get("explanation") or status).split("\n")[0]
                    reason = cut_text(f"{status}: {first}", 120)
                continue
            known = self._names.get(label)
            if known is None:
                known = self._names[label] = (f"v:{label}", {})
            column, names = known
            self._set(column, value)
            found = score.get("details")
            details: Mapping[str, Any] = found if _mapping(found) else {}
            if reason is None and score.get("passed") is False:
                failure = details.get("failure")
                reason = failure_label(str(failure)) if failure else f"{label} did not pass"
            metrics = details.get("metrics")
            if _mapping(metrics):
                for name, v in metrics.items():
                    if type(v) is float:  # the common case, without a call
                        if v != v:
                            continue
                    elif (v := number(v)) is None:
                        continue
                    column = names.get(name) or names.setdefault(name, f"m:{label}.{name}")
                    self._set(column, v)
        fixed["reason"].append(reason)
        fixed["status"].append(
            "error"
            if error
            else "pass"
            if passed is True
            else "fail"
            if passed is False
            else "none"
        )
        if not self.n:
            self._first = len(self.extra)
        self.n += 1

    def row(self, i: int) -> dict[str, Any]:
        """Row `i` as a dict: the columns it has a value in (the fixed ones always)."""
        row = {name: self.fixed[name][i] for name in _FIXED}
        row.update((k, c[i]) for k, c in self.extra.items() if i < len(c) and c[i] is not None)
        row.update((name, self.fixed[name][i]) for name in _TAIL)
        return row

    def table(self, more: Mapping[str, list[Any]]) -> Any:
        """The rows so far as an Arrow table, with the columns in `more` (one value a row)
        after them: the fixed columns, the first record's scores, the reason and status,
        `more`, then any score column that came later (as a table of the rows as dicts
        would order them)."""
        import pyarrow as pa

        extra = list(self.extra.items())
        columns = [
            *((k, self.fixed[k]) for k in _FIXED),
            *extra[: self._first],
            *((k, self.fixed[k]) for k in _TAIL),
            *more.items(),
            *extra[self._first :],
        ]
        names, arrays = [], []
        for name, values in columns:
            if len(values) < self.n:  # a score column the last rows lack
                values = [*values, *([None] * (self.n - len(values)))]
            names.append(name)
            arrays.append(pa.array(values, type=column_type(pa, name)))
        return pa.Table.from_arrays(arrays, names=names)


def column_type(pa: Any, name: str) -> Any:
    """The Arrow type of an index column."""
    if name.startswith(("v:", "m:")) or name in ("latency", "cost"):
        return pa.float64()
    if name in ("row", "offset", "tokens_in", "tokens_out"):
        return pa.int64()
    if name in ("length", "attempts"):
        return pa.int32()
    if name == "passed":
        return pa.bool_()
    return pa.string()
