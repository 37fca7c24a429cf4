"""Columns to integer codes: equal canonical values get equal codes, different ones never do.

Codes are exact dictionary indexes, not hashes, so two different values can never share a
code (no probabilistic collisions). Code 0 is NULL in every column. Columns encoded in one
call share one code space, so a code means the same value in any of them.

Two ways to get there, with the same answer:

- Arrow columns of plain types (integers, floats, strings, booleans, timestamps, dates,
  durations, binary) are encoded vectorised: numbers as int64 (floats by their bit pattern
  after folding -0.0 into 0.0 and every NaN into one NaN), strings by Arrow's
  ``dictionary_encode``.
- Anything else (decimals, nested values, graph and neo4j temporal values, mixed Python
  types) goes through :func:`~queryeval.metrics.results._canonical.canonical` and a dict, which is
  the reference semantics. Large plain Python columns are first converted to Arrow.
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from queryeval.metrics.results._canonical import NAN, ValuePolicy, canonical, is_number

# Plain Python columns at least this long are converted to Arrow to be encoded vectorised.
_ARROW_CONVERT_MIN_ROWS = 20_000
_MAX_EXACT_FLOAT_INT = 2**53
_OFFSET_MAX_RANGE = 2**32
_NS_PER_DAY = 86_400 * 10**9
_NONE_TYPE = type(None)
_SIMPLE_PY_TYPES = {
    frozenset({int}): "int64",
    frozenset({float}): "float64",
    frozenset({str}): "string",
    frozenset({bool}): "bool_",
}


def _pyarrow() -> Any | None:
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a core dependency
        return None
    return pa


def is_arrow(data: Any) -> bool:
    """True for an Arrow (chunked) array."""
    return (type(data).__module__ or "").startswith("pyarrow")


def _py_types(values: Sequence[Any]) -> frozenset[type]:
    return frozenset(map(type, values)) - {_NONE_TYPE}


def numeric_kind(data: Any) -> str:
    """``"float"`` (floats/decimals), ``"int"``, ``"null"`` (all NULL) or ``"other"``: decides
    which columns float tolerance applies to."""
    if is_arrow(data):
        import pyarrow as pa

        t = data.type
        if pa.types.is_null(t) or data.null_count == len(data):
            return "null"
        if pa.types.is_floating(t) or pa.types.is_decimal(t):
            return "float"
        return "int" if pa.types.is_integer(t) else "other"
    types = _py_types(data)
    if not types:
        return "null"
    if not all(
        issubclass(t, int | float | decimal.Decimal) and not issubclass(t, bool) for t in types
    ):
        return "other"
    return "float" if any(issubclass(t, float | decimal.Decimal) for t in types) else "int"


# -- exact codes ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExactCodes:
    """Per input column an int64 code array (0 = NULL); codes lie in ``[0, cardinality)``."""

    codes: list[np.ndarray]
    cardinality: int
    vectorised: bool


def encode_exact(columns: Sequence[Any], policy: ValuePolicy) -> ExactCodes:
    """Encode columns (Arrow arrays or Python sequences) into one shared code space."""
    prepared = [_maybe_arrow(c) for c in columns]
    if prepared and all(is_arrow(c) for c in prepared):
        result = _encode_arrow(prepared, policy)
        if result is not None:
            return result
    return _encode_python(columns, policy)


def _maybe_arrow(data: Any) -> Any:
    if is_arrow(data) or len(data) < _ARROW_CONVERT_MIN_ROWS:
        return data
    target = _SIMPLE_PY_TYPES.get(_py_types(data))
    pa = _pyarrow()
    if target is None or pa is None:
        return data
    try:
        return pa.chunked_array([pa.array(data, type=getattr(pa, target)())])
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
        return data


def _encode_python(columns: Sequence[Any], policy: ValuePolicy) -> ExactCodes:
    table: dict[Any, int] = {None: 0}
    out = []
    for data in columns:
        values = data.to_pylist() if is_arrow(data) else data
        out.append(
            np.fromiter(
                (table.setdefault(v, len(table)) for v in _canonical_values(values, policy)),
                dtype=np.int64,
                count=len(values),
            )
        )
    return ExactCodes(out, len(table), vectorised=False)


def _canonical_values(values: Sequence[Any], policy: ValuePolicy) -> Sequence[Any]:
    types = _py_types(values)
    if types <= {int, str, bytes}:
        return values
    if types <= {int, str, bytes, float}:
        return [NAN if v != v else v for v in values]
    return [canonical(v, policy) for v in values]


# -- the vectorised Arrow path ------------------------------------------------------------


def _family(t: Any, pa: Any, policy: ValuePolicy) -> str | None:
    types = pa.types
    if types.is_null(t):
        return "null"
    if types.is_boolean(t):
        return "bool"
    if types.is_integer(t):
        return "int"
    if types.is_floating(t):
        return "float"
    if types.is_string(t) or types.is_large_string(t) or types.is_string_view(t):
        return "string"
    if types.is_binary(t) or types.is_large_binary(t) or types.is_fixed_size_binary(t):
        return "binary"
    naive_zone = policy.naive_timezone
    if types.is_timestamp(t):
        if t.tz is not None:
            return "ts"
        if naive_zone is None:
            return "ts_naive"
        # local wall-clock times in another zone: the Python path reads them in that zone
        return "ts" if naive_zone.upper() == "UTC" else None
    if types.is_date(t):
        if not policy.date_equals_midnight:
            return "date"
        if naive_zone is None:
            return "ts_naive"
        return "ts" if naive_zone.upper() == "UTC" else None
    if types.is_duration(t):
        return "duration"
    return None


def _encode_arrow(columns: list[Any], policy: ValuePolicy) -> ExactCodes | None:
    """Vectorised encoding, or None when a column needs the Python path."""
    import pyarrow as pa

    families = [_family(c.type, pa, policy) for c in columns]
    if any(f is None for f in families):
        return None
    present = set(families) - {"null"}
    if {"int", "float"} <= present:
        families = ["float" if f == "int" else f for f in families]
    groups: dict[str, list[int]] = {}
    for index, family in enumerate(families):
        groups.setdefault(str(family), []).append(index)
    codes: list[np.ndarray | None] = [None] * len(columns)
    next_code = 1
    try:
        for family, members in groups.items():
            if family == "null":
                for i in members:
                    codes[i] = np.zeros(len(columns[i]), dtype=np.int64)
                continue
            family_codes, card = _encode_family(family, [columns[i] for i in members], pa)
            for i, c in zip(members, family_codes, strict=True):
                if next_code > 1:
                    c[c > 0] += next_code - 1
                codes[i] = c
            next_code += card - 1
    except _NeedsPython:
        return None
    return ExactCodes([c for c in codes if c is not None], next_code, vectorised=True)


class _NeedsPython(Exception):
    """A value the vectorised path cannot represent exactly (huge ints, far-future dates)."""


def _encode_family(family: str, columns: list[Any], pa: Any) -> tuple[list[np.ndarray], int]:
    if family in {"string", "binary"}:
        return _dictionary_codes(columns, pa)
    lengths = [len(c) for c in columns]
    values = np.empty(sum(lengths), dtype=np.int64)
    valid = np.ones(len(values), dtype=bool)
    pos = 0
    for column in columns:
        _as_int64(
            column, family, pa, values[pos : pos + len(column)], valid[pos : pos + len(column)]
        )
        pos += len(column)
    flat, card = dense_codes(values, None if valid.all() else valid)
    return _split(flat, lengths), card


def _split(flat: np.ndarray, lengths: list[int]) -> list[np.ndarray]:
    return np.split(flat, np.cumsum(lengths)[:-1]) if lengths else []


def _dictionary_codes(columns: list[Any], pa: Any) -> tuple[list[np.ndarray], int]:
    target = columns[0].type
    if any(c.type != target for c in columns):
        target = pa.large_binary() if pa.types.is_binary(target) else pa.large_string()
        if any(pa.types.is_fixed_size_binary(c.type) for c in columns):
            target = pa.large_binary()
    chunks = [ch for c in columns for ch in c.cast(target).chunks]
    encoded = pa.chunked_array(chunks, type=target).dictionary_encode()
    flat = np.empty(sum(len(c) for c in columns), dtype=np.int64)
    pos = 0
    for chunk in encoded.chunks:
        indices = chunk.indices
        view = flat[pos : pos + len(chunk)]
        if indices.null_count:
            np.add(indices.fill_null(-1).to_numpy(), 1, out=view)
        else:
            np.add(indices.to_numpy(), 1, out=view)
        pos += len(chunk)
    card = len(encoded.chunks[0].dictionary) + 1 if encoded.num_chunks else 1
    return _split(flat, [len(c) for c in columns]), card


def _as_int64(data: Any, family: str, pa: Any, values: np.ndarray, valid: np.ndarray) -> None:
    """Write a column's values as int64 (floats: canonical bit patterns) and its validity."""
    pos = 0
    for chunk in data.chunks:
        n = len(chunk)
        if chunk.null_count:
            valid[pos : pos + n] = chunk.is_valid().to_numpy(zero_copy_only=False)
        values[pos : pos + n] = _chunk_int64(chunk, family, pa)
        pos += n


def _chunk_int64(chunk: Any, family: str, pa: Any) -> np.ndarray:
    t = chunk.type
    try:
        if family == "float":
            floats = chunk.cast(pa.float64()).fill_null(0.0).to_numpy().copy()
            if (
                pa.types.is_integer(t)
                and len(floats)
                and np.abs(floats).max() > _MAX_EXACT_FLOAT_INT
            ):
                raise _NeedsPython
            floats += 0.0  # -0.0 becomes 0.0
            floats[np.isnan(floats)] = np.nan  # one NaN bit pattern
            return floats.view(np.int64)
        if family == "bool":
            return chunk.fill_null(False).to_numpy(zero_copy_only=False).astype(np.int64)
        if family in {"ts", "ts_naive"}:
            if pa.types.is_date(t):
                days = chunk.cast(pa.date32()).cast(pa.int32()).fill_null(0).to_numpy()
                return _days_to_ns(days)
            ns = chunk.cast(pa.timestamp("ns", tz=t.tz))
            return ns.cast(pa.int64()).fill_null(0).to_numpy()
        if family == "date":
            return chunk.cast(pa.date32()).cast(pa.int32()).fill_null(0).to_numpy().astype(np.int64)
        if family == "duration":
            return chunk.cast(pa.duration("ns")).cast(pa.int64()).fill_null(0).to_numpy()
        return chunk.cast(pa.int64()).fill_null(0).to_numpy()
    except (pa.ArrowInvalid, OverflowError) as error:
        raise _NeedsPython from error


def _days_to_ns(days: np.ndarray) -> np.ndarray:
    wide = days.astype(np.int64)
    if len(wide) and np.abs(wide).max() > (2**63 - 1) // _NS_PER_DAY:
        raise _NeedsPython
    return wide * _NS_PER_DAY


def dense_codes(values: np.ndarray, valid: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """int64 values to codes ``1..k`` (0 where not valid), reusing ``values``' memory.

    Offsets from the minimum when the range is below 2**32 (no hashing); otherwise an exact
    dictionary: Arrow's hash encoder when a sample shows few distinct values, else a sort.
    """
    if not len(values) or (valid is not None and not valid.any()):
        values[:] = 0
        return values, 1
    if valid is None:
        low, high = int(values.min()), int(values.max())
    else:
        low = int(values.min(where=valid, initial=np.iinfo(np.int64).max))
        high = int(values.max(where=valid, initial=np.iinfo(np.int64).min))
    if high - low + 2 <= _OFFSET_MAX_RANGE and low - 1 >= np.iinfo(np.int64).min:
        np.subtract(values, low - 1, out=values)
        card = high - low + 2
    else:
        values, card = _rank(values)
    if valid is not None:
        values[~valid] = 0
    return values, card


def _rank(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes ``1..k`` by an exact dictionary (Arrow's hash encoder; a sort without Arrow)."""
    pa = _pyarrow()
    if pa is None:  # pragma: no cover - pyarrow is a core dependency
        uniques, inverse = np.unique(values, return_inverse=True)
        codes = inverse.astype(np.int64).reshape(-1)
        codes += 1
        return codes, len(uniques) + 1
    encoded = pa.array(values).dictionary_encode()
    codes = encoded.indices.to_numpy().astype(np.int64)
    codes += 1
    return codes, len(encoded.dictionary) + 1


# -- numbers under tolerance ---------------------------------------------------------------

# Tags of a number compared with tolerance: only finite values are compared by distance.
TAG_NULL, TAG_FINITE, TAG_NAN, TAG_POS_INF, TAG_NEG_INF = 0, 1, 2, 3, 4
TAG_CARDINALITY = 5


def encode_numeric(data: Any) -> tuple[np.ndarray, np.ndarray]:
    """A numeric column as (tags, float64 values); non-finite values get a tag and value 0."""
    if is_arrow(data):
        import pyarrow as pa

        valid = np.ones(len(data), dtype=bool)
        floats = np.zeros(len(data), dtype=np.float64)
        pos = 0
        for chunk in data.chunks:
            n = len(chunk)
            if chunk.null_count:
                valid[pos : pos + n] = chunk.is_valid().to_numpy(zero_copy_only=False)
            if not pa.types.is_null(chunk.type):
                floats[pos : pos + n] = (
                    chunk.cast(pa.float64(), safe=False).fill_null(0.0).to_numpy()
                )
            pos += n
    else:
        valid = np.fromiter((v is not None for v in data), dtype=bool, count=len(data))
        floats = np.fromiter(
            (float(v) if v is not None and is_number(v) else 0.0 for v in data),
            dtype=np.float64,
            count=len(data),
        )
    tags = np.full(len(floats), TAG_FINITE, dtype=np.int64)
    if np.isfinite(floats).all():  # the common case: NULLs at most, whose floats are 0
        if not valid.all():
            tags[~valid] = TAG_NULL
        return tags, floats
    tags[np.isnan(floats)] = TAG_NAN
    tags[floats == np.inf] = TAG_POS_INF
    tags[floats == -np.inf] = TAG_NEG_INF
    tags[~valid] = TAG_NULL
    floats[tags != TAG_FINITE] = 0.0
    return tags, floats
