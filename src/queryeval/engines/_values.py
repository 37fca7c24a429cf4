"""Result values at the engine boundary: plain Python values, and a lossless JSON codec for
the on-disk gold cache (JSON cannot hold decimals, datetimes, timespans, bytes or NaN)."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import sys
import uuid
from typing import Any

from queryeval.languages.cypher import Neo4jKind, neo4j_kind


def plain_value(value: Any) -> Any:
    """Driver-specific values as plain Python: neo4j nodes/relationships/paths become dicts
    (labels or type plus properties; never database ids, which differ between copies of
    one graph), neo4j temporals become `datetime` values."""
    if "neo4j" in sys.modules:  # loaded only when a neo4j driver is in use
        kind = neo4j_kind(value)
        if kind is not None:
            return _plain_neo4j(value, kind)
    if isinstance(value, list | tuple):
        return [plain_value(v) for v in value]
    if isinstance(value, dict):
        return {k: plain_value(v) for k, v in value.items()}
    return value


def _plain_neo4j(value: Any, kind: Neo4jKind) -> Any:
    if kind == "node":
        return {"labels": sorted(value.labels), "properties": plain_value(dict(value))}
    if kind == "relationship":
        return {"type": value.type, "properties": plain_value(dict(value))}
    if kind == "path":
        return {
            "nodes": [plain_value(n) for n in value.nodes],
            "relationships": [plain_value(r) for r in value.relationships],
        }
    if kind == "duration":
        if value.months == 0:
            return dt.timedelta(
                days=value.days, seconds=value.seconds, microseconds=value.nanoseconds // 1000
            )
        return {"months": value.months, "days": value.days, "seconds": value.seconds,
                "nanoseconds": value.nanoseconds}  # fmt: skip
    return value.to_native()  # datetime, date, time


# --- gold-cache codec: tagged JSON ------------------------------------------------------------

_TAG = "$qe"


def _encode(value: Any) -> Any:
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return {_TAG: "float", "v": repr(value)}
        return value
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, decimal.Decimal):
        return {_TAG: "decimal", "v": str(value)}
    if isinstance(value, dt.datetime):
        return {_TAG: "datetime", "v": value.isoformat()}
    if isinstance(value, dt.date):
        return {_TAG: "date", "v": value.isoformat()}
    if isinstance(value, dt.time):
        return {_TAG: "time", "v": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {_TAG: "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, bytes | bytearray | memoryview):
        return {_TAG: "bytes", "v": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, uuid.UUID):
        return {_TAG: "uuid", "v": str(value)}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, set | frozenset):
        return {_TAG: "set", "v": [_encode(v) for v in value]}
    if isinstance(value, dict):
        return {_TAG: "map", "v": [[_encode(k), _encode(v)] for k, v in value.items()]}
    return {_TAG: "repr", "v": repr(value)}


def _decode_tagged(value: dict[str, Any]) -> Any:
    """One tagged object, its contents already decoded (`json.loads`' object hook: JSON
    objects are decoded innermost first, and the codec writes no untagged object)."""
    tag: Any = value.get(_TAG)
    v: Any = value.get("v")
    if tag == "float":
        return float(v)
    if tag == "decimal":
        return decimal.Decimal(v)
    if tag == "datetime":
        return dt.datetime.fromisoformat(v)
    if tag == "date":
        return dt.date.fromisoformat(v)
    if tag == "time":
        return dt.time.fromisoformat(v)
    if tag == "timedelta":
        return dt.timedelta(days=v[0], seconds=v[1], microseconds=v[2])
    if tag == "bytes":
        return base64.b64decode(v)
    if tag == "uuid":
        return uuid.UUID(v)
    if tag == "set":
        return frozenset(v)
    if tag == "map":
        return {k: x for k, x in v}
    if tag == "repr":
        return v
    raise ValueError(f"unknown tag in gold cache: {tag!r}")


def dumps(payload: Any) -> str:
    """JSON text of `payload` with every value kept exactly (see `loads`)."""
    return json.dumps(_encode(payload), ensure_ascii=False, separators=(",", ":"))


def loads(text: str) -> Any:
    """The inverse of `dumps`. Rows come back as lists; callers make tuples."""
    return json.loads(text, object_hook=_decode_tagged)
