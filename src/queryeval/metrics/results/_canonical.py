"""Canonical forms of result values, so that values equal in meaning compare equal.

``canonical(value)`` returns a hashable value; two cells are equal exactly when their
canonical forms are ``==``. The rules:

- ``None`` (and pandas/NumPy missing markers) is NULL; every float NaN is one ``NAN`` token.
- Numbers compare by value: ``1 == 1.0 == Decimal("1.00")`` (Python's own numeric equality
  and hashing). A non-integral ``Decimal`` becomes the nearest ``float``, so
  ``Decimal("0.1")`` equals ``0.1``. Booleans are *not* numbers here: ``True != 1``.
- Instants become ``("ts", nanoseconds since the epoch, UTC)``. A naive datetime is read in
  ``naive_timezone`` (default UTC); with ``naive_timezone=None`` naive and aware values never
  match (naive ones become ``("tsn", ...)``). A ``date`` equals the datetime at its midnight
  when ``date_equals_midnight`` (default), else it is ``("date", ordinal)``.
- Timespans (``timedelta``, neo4j ``Duration`` without months, Arrow durations) become
  ``("span", nanoseconds)``; a duration with months stays ``("duration", months, days, s, ns)``.
- Graph values (neo4j ``Node``/``Relationship``/``Path``) keep labels or type and properties,
  never database ids, which differ between databases holding the same graph.
- Lists keep order; maps and sets do not.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Mapping, Set
from dataclasses import dataclass
from functools import cache
from typing import Any

from queryeval.languages.cypher import Neo4jKind, neo4j_kind

_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_NS_PER_DAY = 86_400 * 10**9


class _NaNToken:
    """The one canonical NaN: NaN is not ``==`` itself, but two NaN cells are the same value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NaN"

    def __reduce__(self) -> str:
        return "NAN"


NAN = _NaNToken()


@dataclass(frozen=True, slots=True)
class ValuePolicy:
    """How temporal values are read; see the module docstring."""

    naive_timezone: str | None = "UTC"
    date_equals_midnight: bool = True


DEFAULT_POLICY = ValuePolicy()


@cache
def _zone(name: str) -> dt.tzinfo:
    if name.upper() == "UTC":
        return dt.UTC
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


def _module(value: Any) -> str:
    return type(value).__module__ or ""


def _datetime_ns(value: dt.datetime, policy: ValuePolicy, extra_ns: int = 0) -> tuple[str, int]:
    """Nanoseconds since the epoch; naive values are read in the policy's time zone."""
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        if policy.naive_timezone is None:
            delta = value - dt.datetime(1970, 1, 1)
            return ("tsn", _timedelta_ns(delta) + extra_ns)
        value = value.replace(tzinfo=_zone(policy.naive_timezone))
    return ("ts", _timedelta_ns(value - _EPOCH_UTC) + extra_ns)


def _timedelta_ns(value: dt.timedelta) -> int:
    return (value.days * 86_400 + value.seconds) * 10**9 + value.microseconds * 1000


def _date(value: dt.date, policy: ValuePolicy) -> tuple[str, int]:
    if not policy.date_equals_midnight:
        return ("date", value.toordinal())
    return _datetime_ns(dt.datetime(value.year, value.month, value.day), policy)


def _time(value: Any, nanosecond: int | None = None) -> tuple[str, int, float | None]:
    """Time of day: nanoseconds since midnight and the UTC offset in seconds (or None)."""
    ns = (value.hour * 3600 + value.minute * 60 + value.second) * 10**9
    ns += nanosecond if nanosecond is not None else value.microsecond * 1000
    offset = value.utcoffset() if value.tzinfo is not None else None
    return ("time", ns, offset.total_seconds() if offset is not None else None)


def _duration(months: int, days: int, seconds: int, nanoseconds: int) -> tuple[Any, ...]:
    if months == 0:
        return ("span", days * _NS_PER_DAY + seconds * 10**9 + nanoseconds)
    return ("duration", months, days, seconds, nanoseconds)


def _number(value: Any) -> Any:
    if isinstance(value, float):
        return NAN if value != value else value
    if isinstance(value, decimal.Decimal):
        if value.is_nan():
            return NAN
        if value.is_infinite():
            return float(value)
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _neo4j(value: Any, kind: Neo4jKind, policy: ValuePolicy) -> Any:
    """The canonical form of a neo4j graph or temporal value."""
    if kind == "duration":
        return _duration(value.months, value.days, value.seconds, value.nanoseconds)
    if kind == "datetime":
        native = value.to_native()
        form, ns = _datetime_ns(native.replace(microsecond=0), policy, value.nanosecond)
        return (form, ns)
    if kind == "date":
        return _date(value.to_native(), policy)
    if kind == "time":
        return _time(value, value.nanosecond)
    if kind == "node":
        props = canonical_map(dict(value.items()), policy)
        return ("node", frozenset(value.labels), props)
    if kind == "relationship":
        return ("rel", value.type, canonical_map(dict(value.items()), policy))
    nodes = tuple(canonical(n, policy) for n in value.nodes)
    rels = tuple(canonical(r, policy) for r in value.relationships)
    return ("path", nodes, rels)


def canonical_map(value: Mapping[Any, Any], policy: ValuePolicy = DEFAULT_POLICY) -> Any:
    """A map's canonical form: order-insensitive, keys and values canonical."""
    return (
        "map",
        frozenset((canonical(k, policy), canonical(v, policy)) for k, v in value.items()),
    )


def canonical(value: Any, policy: ValuePolicy = DEFAULT_POLICY) -> Any:
    """The hashable canonical form of one result cell (see the module docstring).

    >>> import decimal
    >>> canonical(1) == canonical(1.0) == canonical(decimal.Decimal("1.00"))
    True
    >>> canonical(True) == canonical(1), canonical(float("nan")) == canonical(float("nan"))
    (False, True)
    """
    if value is None:
        return None
    kind = type(value)
    if kind is str or kind is int:
        return value
    if kind is float:
        return NAN if value != value else value
    if kind is bool:
        return ("bool", value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool):
        return ("bool", bool(value))
    if isinstance(value, int | float | decimal.Decimal):
        return _number(value)
    if isinstance(value, dt.datetime):
        return _datetime_ns(value, policy, getattr(value, "nanosecond", 0))
    if isinstance(value, dt.date):
        return _date(value, policy)
    if isinstance(value, dt.time):
        return _time(value)
    if isinstance(value, dt.timedelta):
        return ("span", _timedelta_ns(value) + getattr(value, "nanoseconds", 0))
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    module = _module(value)
    if module.startswith("numpy"):
        return _numpy_scalar(value, policy)
    driver_kind = neo4j_kind(value)
    if driver_kind is not None:
        return _neo4j(value, driver_kind, policy)
    if module.startswith("neo4j.time"):
        return ("repr", type(value).__name__, repr(value))
    if module.startswith("pandas") and _is_missing(value):
        return None
    if type(value).__name__ == "MonthDayNano":  # pyarrow's month_day_nano interval
        months, days, nanos = value
        return _duration(months, days, 0, nanos)
    if isinstance(value, Mapping):
        return canonical_map(value, policy)
    if isinstance(value, Set):
        return ("set", frozenset(canonical(v, policy) for v in value))
    if isinstance(value, list | tuple):
        return ("list", tuple(canonical(v, policy) for v in value))
    try:
        hash(value)
    except TypeError:
        return ("repr", type(value).__name__, repr(value))
    return value


def _numpy_scalar(value: Any, policy: ValuePolicy) -> Any:
    import numpy as np

    if isinstance(value, np.datetime64):
        if np.isnat(value):
            return None
        seconds, nanos = divmod(int(value.astype("datetime64[ns]").astype(np.int64)), 10**9)
        return _datetime_ns(_EPOCH_NAIVE + dt.timedelta(seconds=seconds), policy, nanos)
    if isinstance(value, np.timedelta64):
        if np.isnat(value):
            return None
        return ("span", int(value.astype("timedelta64[ns]").astype(np.int64)))
    if isinstance(value, np.ndarray):
        return ("list", tuple(canonical(v, policy) for v in value.tolist()))
    if isinstance(value, np.generic):
        return canonical(value.item(), policy)
    return ("repr", type(value).__name__, repr(value))


_EPOCH_NAIVE = dt.datetime(1970, 1, 1)


def _is_missing(value: Any) -> bool:
    name = type(value).__name__
    return name in {"NAType", "NaTType"}


def is_number(value: Any) -> bool:
    """True for ints, floats and decimals (not booleans): the values tolerance applies to."""
    return isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool)
