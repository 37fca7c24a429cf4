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
from queryeval.metrics.results._codes import Codes, LazyCodes, code_dtype, materialize
from queryeval.metrics.results._scratch import scratch_pool

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
    """Per input column a code array (0 = NULL), int32 where the cardinality allows (see
    :func:`code_dtype`), one dtype for all columns; codes lie in ``[0, cardinality)``."""

    codes: list[np.ndarray]
    cardinality: int
    vectorised: bool


@dataclass(frozen=True, slots=True)
class ColumnCodes:
    """:class:`ExactCodes` before the codes are written out: per input column an array or
    a :class:`~queryeval.metrics.results._codes.LazyCodes` (read from Arrow's buffers)."""

    codes: list[Codes]
    cardinality: int
    vectorised: bool


def encode_exact(columns: Sequence[Any], policy: ValuePolicy) -> ExactCodes:
    """Encode columns (Arrow arrays or Python sequences) into one shared code space."""
    coded = encode_columns(columns, policy)
    dtype = code_dtype(coded.cardinality)
    codes = [materialize(c, dtype) for c in coded.codes]
    return ExactCodes(codes, coded.cardinality, coded.vectorised)


def encode_columns(columns: Sequence[Any], policy: ValuePolicy) -> ColumnCodes:
    """:func:`encode_exact` without writing the codes out where they can be read lazily."""
    prepared = [_maybe_arrow(c) for c in columns]
    if prepared and all(is_arrow(c) for c in prepared):
        result = _encode_arrow(prepared, policy)
        if result is not None:
            return result
    python = _encode_python(columns, policy)
    return ColumnCodes(list(python.codes), python.cardinality, vectorised=False)


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


def _encode_arrow(columns: list[Any], policy: ValuePolicy) -> ColumnCodes | None:
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
    codes: list[Codes] = [np.empty(0, dtype=np.int32)] * len(columns)
    next_code = 1
    try:
        for family, members in groups.items():
            if family == "null":
                for i in members:
                    codes[i] = np.zeros(len(columns[i]), dtype=np.int32)
                continue
            family_codes, card = _encode_family(family, [columns[i] for i in members], pa)
            offset = next_code - 1
            for i, c in zip(members, family_codes, strict=True):
                if offset:  # another family's codes come first: move these up
                    c = materialize(c, code_dtype(offset + card))
                    c[c > 0] += offset
                codes[i] = c
            next_code += card - 1
    except _NeedsPython:
        return None
    return ColumnCodes(codes, next_code, vectorised=True)


class _NeedsPython(Exception):
    """A value the vectorised path cannot represent exactly (huge ints, far-future dates)."""


def _encode_family(family: str, columns: list[Any], pa: Any) -> tuple[list[Codes], int]:
    if family in {"string", "binary"}:
        return _dictionary_codes(columns, pa)
    parts = [_int64_values(_one_chunk(c, pa), family, pa) for c in columns]
    valid_parts = [(v, ok) for v, ok in parts if len(v) and (ok is None or ok.any())]
    if not valid_parts:
        return [np.zeros(len(v), dtype=np.int32) for v, _ in parts], 1
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    low = min(int(v.min(where=ok, initial=big)) if ok is not None else int(v.min())
              for v, ok in valid_parts)  # fmt: skip
    high = max(int(v.max(where=ok, initial=small)) if ok is not None else int(v.max())
               for v, ok in valid_parts)  # fmt: skip
    if high - low + 2 <= _OFFSET_MAX_RANGE and low - 1 >= small:
        # offsets from the minimum (no hashing), computed where they are used
        return [LazyCodes(values, low - 1, ok) for values, ok in parts], high - low + 2
    values = np.concatenate([v for v, _ in parts])
    valid = None
    if any(ok is not None for _, ok in parts):
        valid = np.concatenate([np.ones(len(v), bool) if ok is None else ok for v, ok in parts])
        values[~valid] = 0  # what lies under a NULL must not add dictionary entries
    flat, card = _rank(values)
    if valid is not None:
        flat[~valid] = 0
    return list(_split(flat, [len(v) for v, _ in parts])), card


def _one_chunk(data: Any, pa: Any) -> Any:
    """A chunked array as one array (Arrow concatenates several chunks)."""
    if data.num_chunks == 1:
        return data.chunk(0)
    if not data.num_chunks:
        return pa.array([], type=data.type)
    return pa.concat_arrays(data.chunks, memory_pool=scratch_pool(pa))


def _split(flat: np.ndarray, lengths: list[int]) -> list[np.ndarray]:
    return np.split(flat, np.cumsum(lengths)[:-1]) if lengths else []


def _dictionary_codes(columns: list[Any], pa: Any) -> tuple[list[Codes], int]:
    """Arrow's hash dictionary over all the columns' values: code = index + 1, 0 = NULL,
    read from the index buffers where they are used (no written-out copy)."""
    import pyarrow.compute as pc

    target = columns[0].type
    if any(c.type != target for c in columns):
        target = pa.large_binary() if pa.types.is_binary(target) else pa.large_string()
        if any(pa.types.is_fixed_size_binary(c.type) for c in columns):
            target = pa.large_binary()
    pool = scratch_pool(pa)
    chunks = [ch for c in columns for ch in pc.cast(c, target, memory_pool=pool).chunks]
    encoded = pc.dictionary_encode(pa.chunked_array(chunks, type=target), memory_pool=pool)
    card = len(encoded.chunks[0].dictionary) + 1 if encoded.num_chunks else 1
    out: list[Codes] = []
    start = 0
    for column in columns:
        pieces = [chunk.indices for chunk in encoded.slice(start, len(column)).chunks]
        start += len(column)
        indices = [_raw_values(p, np.int32) for p in pieces]
        valid = [_validity(p) for p in pieces]
        if len(indices) == 1:
            values = indices[0]
        else:
            values = np.concatenate(indices) if indices else np.empty(0, dtype=np.int32)
        out.append(LazyCodes(values, -1, _joined(valid, pieces)))
    return out, card


def _joined(valid: list[np.ndarray | None], pieces: list[Any]) -> np.ndarray | None:
    """The pieces' validity end to end (None: no NULLs anywhere)."""
    if all(v is None for v in valid):
        return None
    if len(valid) == 1:
        return valid[0]
    return np.concatenate(
        [
            np.ones(len(p), dtype=bool) if v is None else v
            for v, p in zip(valid, pieces, strict=True)
        ]
    )


def _raw_values(array: Any, dtype: Any) -> np.ndarray:
    """A fixed-width Arrow array's values buffer as NumPy, in place: anything may lie
    under a NULL (no filled copy). Only the array's own items are read (a buffer may be
    longer, and need not end on an item)."""
    if not array.null_count:
        return np.asarray(array.to_numpy(), dtype=dtype)
    buffer = array.buffers()[1]
    if buffer is None:  # no values at all: the NULLs' zeros
        return np.zeros(len(array), dtype=dtype)
    size = np.dtype(dtype).itemsize
    return np.frombuffer(buffer, dtype=dtype, count=len(array), offset=array.offset * size)


def _int64_values(chunk: Any, family: str, pa: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """An array's values as int64 (floats: canonical bit patterns) and its validity (None:
    no NULLs). Possibly a read-only view of Arrow's buffer, and for plain integers anything
    may lie under a NULL (the caller masks them)."""
    return _chunk_int64(chunk, family, pa), _validity(chunk)


def _chunk_int64(chunk: Any, family: str, pa: Any) -> np.ndarray:
    t = chunk.type
    try:
        if family == "float":
            floats = _filled(_cast(chunk, pa.float64()), 0.0).to_numpy().copy()
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
            return _filled(chunk, False).to_numpy(zero_copy_only=False).astype(np.int64)
        if family in {"ts", "ts_naive"}:
            if pa.types.is_date(t):
                return _days_to_ns(_filled(_cast(chunk, pa.date32(), pa.int32()), 0).to_numpy())
            ns = _cast(chunk, pa.timestamp("ns", tz=t.tz), pa.int64())
            return _filled(ns, 0).to_numpy()
        if family == "date":
            days = _filled(_cast(chunk, pa.date32(), pa.int32()), 0).to_numpy()
            return days.astype(np.int64)
        if family == "duration":
            return _filled(_cast(chunk, pa.duration("ns"), pa.int64()), 0).to_numpy()
        return _raw_values(_cast(chunk, pa.int64()), np.int64)  # NULLs masked by the caller
    except (pa.ArrowInvalid, OverflowError) as error:
        raise _NeedsPython from error


def _cast(array: Any, *types: Any) -> Any:
    """`array` cast to each of `types` in turn (a no-op where it has the type already)."""
    import pyarrow as pa

    for target in types:
        array = array.cast(target, memory_pool=scratch_pool(pa))
    return array


def _filled(array: Any, value: Any) -> Any:
    """`array` with NULLs replaced by `value` (Arrow's fill_null copies even without any)."""
    if not array.null_count:
        return array
    import pyarrow as pa
    import pyarrow.compute as pc

    fill = pa.scalar(value, type=array.type)
    return pc.coalesce(array, fill, memory_pool=scratch_pool(pa))


def _validity(array: Any) -> np.ndarray | None:
    """Where `array` holds a value (None: everywhere)."""
    if not array.null_count:
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.is_valid(array, memory_pool=scratch_pool(pa)).to_numpy(zero_copy_only=False)


def _days_to_ns(days: np.ndarray) -> np.ndarray:
    wide = days.astype(np.int64)
    if len(wide) and np.abs(wide).max() > (2**63 - 1) // _NS_PER_DAY:
        raise _NeedsPython
    return wide * _NS_PER_DAY


def _rank(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes ``1..k`` by an exact dictionary (Arrow's hash encoder; a sort without Arrow)."""
    pa = _pyarrow()
    if pa is None:  # pragma: no cover - pyarrow is a core dependency
        uniques, inverse = np.unique(values, return_inverse=True)
        codes = inverse.astype(np.int64).reshape(-1)
        codes += 1
        return codes, len(uniques) + 1
    encoded = pa.array(values).dictionary_encode()
    card = len(encoded.dictionary) + 1
    codes = np.empty(len(values), dtype=code_dtype(card))
    np.add(encoded.indices.to_numpy(), 1, out=codes, casting="unsafe")
    return codes, card


# -- numbers under tolerance ---------------------------------------------------------------

# Tags of a number compared with tolerance: only finite values are compared by distance.
TAG_NULL, TAG_FINITE, TAG_NAN, TAG_POS_INF, TAG_NEG_INF = 0, 1, 2, 3, 4
TAG_CARDINALITY = 5


def encode_numeric(data: Any) -> tuple[np.ndarray, np.ndarray]:
    """A numeric column as (int8 tags, float64 values). A value means something only where
    its tag is TAG_FINITE; under the other tags (NULL, NaN, infinities) it is unspecified,
    and readers clean it (see `blank_mask`). The values may be Arrow's own buffer, read in
    place (no filled copy of a large column)."""
    if is_arrow(data):
        floats, valid = _arrow_floats(data)
    else:
        valid = np.fromiter((v is not None for v in data), dtype=bool, count=len(data))
        floats = np.fromiter(
            (float(v) if v is not None and is_number(v) else 0.0 for v in data),
            dtype=np.float64,
            count=len(data),
        )
    # TAG_FINITE is 1 and TAG_NULL 0: a valid row is finite until shown otherwise
    tags = np.ones(len(floats), dtype=np.int8) if valid is None else valid.astype(np.int8)
    if not np.isfinite(floats).all():  # NaN, infinities, or what lies under a NULL
        tags[np.isnan(floats)] = TAG_NAN
        tags[floats == np.inf] = TAG_POS_INF
        tags[floats == -np.inf] = TAG_NEG_INF
        if valid is not None:
            tags[~valid] = TAG_NULL
    return tags, floats


def blank_mask(tags: np.ndarray) -> np.ndarray | None:
    """Where the values of a tagged column mean nothing (None: nowhere)."""
    blank = tags != TAG_FINITE
    return blank if blank.any() else None


def cleaned(values: np.ndarray, blank: np.ndarray | None) -> np.ndarray:
    """A copy of `values` fit to be compared by its bits: 0.0 where they mean nothing, and
    -0.0 folded into 0.0 (as the exact path's canonical values do)."""
    out = values + 0.0 if blank is None else np.where(blank, 0.0, values)
    out += 0.0  # -0.0 + 0.0 is 0.0
    return out


def _arrow_floats(data: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """An Arrow numeric column's float64 values (anything where NULL) and its validity
    (None: no NULLs). A float64 column in one chunk is read in place."""
    import pyarrow as pa

    if pa.types.is_null(data.type) or not data.num_chunks:
        return np.zeros(len(data), dtype=np.float64), np.zeros(len(data), dtype=bool)
    chunk = _one_chunk(data, pa)
    floats = chunk.cast(pa.float64(), safe=False, memory_pool=scratch_pool(pa))
    return _raw_values(floats, np.float64), _validity(chunk)
