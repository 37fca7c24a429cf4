"""``ResultSet``: the columns and rows a query returned, as every engine hands them over.

Small results are row tuples; large ones can stay an Arrow table (what DuckDB, duckdb-kql
and Arrow Flight return), so comparing a million rows never builds a million Python tuples.
Either form converts to the other lazily.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def _arrow_like(value: Any) -> bool:
    return (type(value).__module__ or "").startswith("pyarrow") and hasattr(value, "column_names")


class ResultSet:
    """Immutable columns plus rows. ``ResultSet(columns, rows)`` or one of the ``from_*``."""

    __slots__ = ("_columns", "_pycolumns", "_rows", "_table")

    _columns: tuple[str, ...]
    _rows: tuple[tuple[Any, ...], ...] | None
    _table: Any
    _pycolumns: tuple[tuple[Any, ...], ...] | None

    def __init__(self, columns: Sequence[str], rows: Iterable[Sequence[Any]] = ()) -> None:
        names = tuple(str(c) for c in columns)
        body = tuple(tuple(r) for r in rows)
        widths = {len(r) for r in body}
        if widths - {len(names)}:
            bad = next(i for i, r in enumerate(body) if len(r) != len(names))
            raise ValueError(
                f"row {bad} has {len(body[bad])} values but there are {len(names)} columns "
                f"{list(names)}"
            )
        self._init(names, body, None)

    def _init(self, columns: tuple[str, ...], rows: Any, table: Any) -> None:
        object.__setattr__(self, "_columns", columns)
        object.__setattr__(self, "_rows", rows)
        object.__setattr__(self, "_table", table)
        object.__setattr__(self, "_pycolumns", None)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ResultSet is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its columns and its rows or table (a result may cross processes: a
        cluster's engine actor returns it)."""
        return (_restored, (self._columns, self._rows, self._table))

    # -- constructors ---------------------------------------------------------------------

    @classmethod
    def from_rows(cls, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> ResultSet:
        """From column names and row sequences (tuples or lists)."""
        return cls(columns, rows)

    @classmethod
    def from_dicts(
        cls, rows: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None
    ) -> ResultSet:
        """From dict rows; columns default to every key in first-seen order, missing = None."""
        records = list(rows)
        if columns is None:
            seen: dict[str, None] = {}
            for record in records:
                seen.update(dict.fromkeys(record))
            columns = list(seen)
        return cls(columns, (tuple(r.get(c) for c in columns) for r in records))

    @classmethod
    def from_arrow(cls, table: Any) -> ResultSet:
        """From a ``pyarrow.Table`` or ``RecordBatch``, kept columnar (no copy)."""
        import pyarrow as pa

        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        if not isinstance(table, pa.Table):
            raise TypeError(f"expected a pyarrow Table, got {type(table).__name__}")
        self = cls.__new__(cls)
        self._init(tuple(table.column_names), None, table)
        return self

    # -- accessors ------------------------------------------------------------------------

    @property
    def columns(self) -> tuple[str, ...]:
        """Column names, in result order."""
        return self._columns

    @property
    def rows(self) -> tuple[tuple[Any, ...], ...]:
        """Rows as tuples (materialised from Arrow on first use)."""
        if self._rows is None:
            columns = [c.to_pylist() for c in self._table.columns]
            rows = tuple(zip(*columns, strict=True)) if columns else ((),) * self.num_rows
            object.__setattr__(self, "_rows", rows)
        assert self._rows is not None
        return self._rows

    @property
    def num_rows(self) -> int:
        """Number of rows."""
        return self._table.num_rows if self._table is not None else len(self.rows)

    @property
    def num_columns(self) -> int:
        """Number of columns."""
        return len(self._columns)

    @property
    def arrow(self) -> Any:
        """The backing ``pyarrow.Table``, or None for a row-backed result."""
        return self._table

    def column_values(self, index: int) -> Sequence[Any]:
        """One column's values as Python objects."""
        if self._table is not None:
            return self._table.column(index).to_pylist()
        return self._python_columns()[index]

    def _python_columns(self) -> tuple[tuple[Any, ...], ...]:
        if self._pycolumns is None:
            cols = tuple(zip(*self.rows, strict=True)) if self.rows else ((),) * len(self._columns)
            object.__setattr__(self, "_pycolumns", cols)
        assert self._pycolumns is not None
        return self._pycolumns

    def column_data(self, index: int) -> Any:
        """One column in its native form: an Arrow ChunkedArray, or a tuple of values."""
        if self._table is not None:
            return self._table.column(index)
        return self._python_columns()[index]

    def head(self, n: int) -> ResultSet:
        """The first ``n`` rows."""
        if self._table is not None:
            return ResultSet.from_arrow(self._table.slice(0, n))
        return ResultSet(self._columns, self.rows[:n])

    def to_dicts(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Rows as dicts (later duplicate column names win, as in any dict)."""
        source = self.head(limit) if limit is not None else self
        return [dict(zip(self._columns, row, strict=True)) for row in source.rows]

    def __len__(self) -> int:
        return self.num_rows

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResultSet):
            return NotImplemented
        return self._columns == other._columns and self.rows == other.rows

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        backing = "arrow" if self._table is not None else "rows"
        return f"ResultSet(columns={list(self._columns)!r}, rows={self.num_rows}, {backing})"


ResultLike = Any
"""What ``compare_results`` accepts for each side (see :func:`as_result_set`)."""


def as_result_set(value: ResultLike, side: str = "result") -> ResultSet:
    """Coerce a ResultSet, a ``(columns, rows)`` pair, dict rows or an Arrow/pandas/polars
    table into a ResultSet; ``side`` names the argument in the error.

    >>> as_result_set([{"a": 1, "b": 2}, {"a": 3}])
    ResultSet(columns=['a', 'b'], rows=2, rows)
    >>> as_result_set((["a"], [(1,), (2,)])).rows
    ((1,), (2,))
    """
    if isinstance(value, ResultSet):
        return value
    if _arrow_like(value):
        return ResultSet.from_arrow(value)
    module = type(value).__module__ or ""
    if module.startswith("polars") and hasattr(value, "to_arrow"):
        return ResultSet.from_arrow(value.to_arrow())
    if module.startswith("pandas") and hasattr(value, "itertuples"):
        return ResultSet(list(value.columns), value.itertuples(index=False, name=None))
    if isinstance(value, tuple | list):
        if (
            len(value) == 2
            and isinstance(value[0], Sequence)
            and not isinstance(value[0], str | Mapping)
            and all(isinstance(c, str) for c in value[0])
        ):
            return ResultSet(value[0], value[1])
        if all(isinstance(r, Mapping) for r in value):
            return ResultSet.from_dicts(value)
    raise TypeError(
        f"{side}: expected a ResultSet, a (columns, rows) pair, a list of dict rows or an "
        f"Arrow table, got {type(value).__name__}"
    )


def _restored(columns: tuple[str, ...], rows: Any, table: Any) -> ResultSet:
    """A pickled ResultSet, as `__reduce__` gave it."""
    out = ResultSet.__new__(ResultSet)
    out._init(columns, rows, table)
    return out
