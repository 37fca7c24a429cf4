"""`externaldata` on the embedded KQL engine: each URL a suite maps to a local file is read
as Kusto reads the artifact, and the query runs on those rows; any other URL is refused.

A KQL database's `externaldata` option maps URLs to files (relative to the suite):

    databases:
      logs: {engine: kql, path: logs.duckdb,
             options: {externaldata: {"https://example.com/bad-ips.txt": data/bad-ips.txt}}}

A URL matches as written in the query, or without its `?query` part (a SAS token). The
rows follow Kusto's documentation (`externaldata` operator; "Data formats supported for
ingestion"; "Data mappings", identity mapping):

- the format is the `with (format=...)` property, else the one the URL's file extension
  names (a `.gz` or `.zip` after it is the compression), else CSV; `ignoreFirstRecord=true`
  skips each file's first record;
- CSV (RFC 4180), TSV, PSV, SCSV, SOHsv: one record a line, fields mapped to the declared
  columns in order (or by an ingestionMapping's `Ordinal`/`ConstValue`);
- JSON (one property bag a line) and MultiJSON (bags, or arrays of bags, separated by
  whitespace): columns mapped to the fields of the same name, case-sensitive (or by an
  ingestionMapping's `Path`, `$.a.b` / `$['a']`, a `Path` without `$` a constant), a
  missing field null;
- TXT: one record a line, empty lines skipped; RAW: the whole file, one value (one column,
  or a mapping of `Ordinal` 0 and constants).

Each value is read as its declared type; an empty field is null (an empty string for a
`string` column, which Kusto's strings cannot be null). What the documentation leaves open
is refused (`KqlRefused`: the evaluator's, unscored), never guessed: a record whose field
count differs from the schema, a value that is not of its column's type in the plain
ISO/JSON forms, a blank line inside a CSV, other formats (Parquet, Avro, ...).

The rows become a temporary table (`queryeval_externaldata_<key>`) on the cursor that runs
the query, and the expression is replaced by its name before the rewriter sees the query.

    >>> found = find('externaldata (Ip:string) [@"https://x/ips.txt"] | count')
    >>> found[0].columns, found[0].urls, found[0].format
    ((('Ip', 'string'),), ('https://x/ips.txt',), 'txt')
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import hashlib
import io
import json
import re
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from queryeval.engines._kql_rewrite import KqlRefused, _kind, _rules, _span, _walk, parsed

# KQL column types as the DuckDB types of queryeval's KQL databases (docs/kql.md)
DUCKDB_TYPES = {"string": "VARCHAR", "datetime": "TIMESTAMP", "real": "DOUBLE",
                "int": "INTEGER", "long": "BIGINT", "dynamic": "JSON", "bool": "BOOLEAN",
                "guid": "UUID", "timespan": "INTERVAL", "decimal": "DECIMAL(38, 18)"}  # fmt: skip
_TYPE_ALIASES = {"double": "real", "boolean": "bool", "date": "datetime", "time": "timespan",
                 "uniqueid": "guid", "int64": "long", "int32": "int"}  # fmt: skip
_DELIMITED = {"csv": ",", "tsv": "\t", "psv": "|", "scsv": ";", "sohsv": "\x01"}
_FORMATS = (*_DELIMITED, "txt", "raw", "json", "multijson")
# the file extensions of "Data formats supported for ingestion" (a format named by its
# extension that is not read is refused, never read as the default CSV)
_EXTENSIONS = {**{f: f for f in _FORMATS}, "avro": "avro", "orc": "orc", "parquet": "parquet",
               "log": "w3clogfile"}  # fmt: skip
MAX_FILE_BYTES = 100 * 2**20  # Kusto's docs: externaldata is for reference tables to 100 MB
TABLE_PREFIX = "queryeval_externaldata_"
NETWORK_REFUSAL = "externaldata reads its rows from a URL, which an offline evaluator"
HOW_TO_MAP = (
    "map the URL to a local file in the database's `externaldata` option "
    "(options: {externaldata: {URL: path}}; docs/kql.md)"
)


@dataclass(frozen=True)
class Found:
    """One `externaldata` expression of a query: its place, declared columns (name, KQL
    type), URLs and `with` properties (names in lower case)."""

    start: int
    stop: int
    columns: tuple[tuple[str, str], ...]
    urls: tuple[str, ...]
    properties: tuple[tuple[str, str], ...] = ()

    @property
    def format(self) -> str:
        """The data format: the `format` property, else the one of the first URL's
        extension (a compression extension skipped), else csv."""
        given = dict(self.properties).get("format")
        if given:
            return given.lower()
        path = self.urls[0].split("?", 1)[0].split(";", 1)[0].rsplit("/", 1)[-1].lower()
        parts = path.split(".")
        if len(parts) > 1 and parts[-1] in ("gz", "zip"):
            parts = parts[:-1]
        ext = parts[-1] if len(parts) > 1 else ""
        return _EXTENSIONS.get(ext, "csv")


@dataclass(frozen=True)
class Table:
    """The rows of one `externaldata` expression, as a temporary DuckDB table."""

    name: str
    columns: tuple[tuple[str, str], ...]  # (name, KQL type)
    rows: tuple[tuple[Any, ...], ...]

    def create(self, cursor: Any) -> None:
        """Create the table on `cursor` (a DuckDB connection) unless it is there."""
        defs = ", ".join(f'"{n.replace(chr(34), chr(34) * 2)}" {DUCKDB_TYPES[k]}'
                         for n, k in self.columns)  # fmt: skip
        cursor.execute(f'CREATE TEMP TABLE IF NOT EXISTS "{self.name}" ({defs})')
        (count,) = cursor.execute(f'SELECT count(*) FROM "{self.name}"').fetchone()
        if count or not self.rows:
            return
        width = len(self.columns)
        marks = "(" + ", ".join("?" * width) + ")"
        for at in range(0, len(self.rows), 500):  # one statement per 500 rows
            chunk = self.rows[at : at + 500]
            values = [v for row in chunk for v in row]
            cursor.execute(f'INSERT INTO "{self.name}" VALUES {", ".join([marks] * len(chunk))}',
                           values)  # fmt: skip


# -- finding the expressions --------------------------------------------------------------------


_LITERAL = re.compile(
    r"""[hH]?(?:@"(?:[^"]|"")*"|@'(?:[^']|'')*'|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"""
)


def _string_value(text: str) -> str:
    """The value of a KQL string literal's source (regular, verbatim `@`, obfuscated `h`, or
    several adjacent literals)."""
    from queryeval.languages.kql import decode_string

    out = []
    for token in _LITERAL.finditer(text):
        literal = token.group(0).lstrip("hH")
        verbatim = literal.startswith("@")
        body = literal[1:] if verbatim else literal
        quote, inner = body[0], body[1:-1]
        if verbatim:
            out.append(inner.replace(quote * 2, quote))
        else:
            try:
                out.append(decode_string(inner))
            except ValueError as exc:
                raise KqlRefused(f"externaldata: {exc}") from None
    return "".join(out)


def _name(node: Any, text: str) -> str:
    source = text[slice(*_span(node))].strip()
    if source.startswith("["):  # ['name'] / ["name"]
        return _string_value(source[1:-1])
    return source


def find(query: str) -> list[Found]:
    """The `externaldata` expressions of `query`, outermost first ([] when it does not
    parse or has none)."""
    if "externaldata" not in query.lower():
        return []
    tree = parsed(query)
    if tree is None:
        return []
    found = []
    for node in sorted(_walk(tree), key=lambda n: _span(n)[0]):
        if _kind(node) != "ExternalDataExpression":
            continue
        columns, urls, properties = [], [], []
        for part in _rules(node):
            kind = _kind(part)
            if kind == "RowSchema":
                for column in _rules(part):
                    if _kind(column) != "RowSchemaColumnDeclaration":
                        continue
                    name_node, type_node = _rules(column)[0], _rules(column)[-1]
                    raw = query[slice(*_span(type_node))].strip().lower()
                    columns.append((_name(name_node, query), _TYPE_ALIASES.get(raw, raw)))
            elif kind == "StringLiteralExpression":
                urls.append(_string_value(query[slice(*_span(part))]))
            elif kind == "ExternalDataWithClause":
                for prop in _rules(part):
                    kids = _rules(prop)
                    if not kids:
                        continue
                    key = query[slice(*_span(kids[0]))].strip().lower()
                    start = _span(kids[0])[1]
                    value = query[start : _span(prop)[1]].strip().lstrip("=").strip()
                    if value[:1] in "\"'@hH" and value[-1:] in "\"'":
                        value = _string_value(value)
                    properties.append((key, value))
        if not urls:  # a query parameter or another expression as the URL
            raise KqlRefused("externaldata whose URL is not a string literal")
        found.append(Found(*_span(node), tuple(columns), tuple(urls), tuple(properties)))
    return found


# -- reading a file as Kusto reads the artifact ------------------------------------------------

_INT = re.compile(r"[+-]?\d+")
_REAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,7}))?)?)?"
    r"(Z|[+-]\d{2}:?\d{2})?"
)
_TIMESPAN = re.compile(r"(-)?(?:(\d+)\.)?(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,7}))?)?")
_GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_INT_RANGE = {"int": 2**31, "long": 2**63}


def _fraction(digits: str | None) -> int:
    """Microseconds of a fraction of up to 7 digits (a 7th digit other than 0 is below
    what the engine's timestamps hold: refused)."""
    digits = (digits or "").ljust(7, "0")
    if digits[6] != "0":
        raise ValueError("a fraction of a microsecond")
    return int(digits[:6])


def _datetime(text: str) -> dt.datetime:
    match = _DATETIME.fullmatch(text)
    if match is None:
        raise ValueError("not an ISO 8601 datetime")
    y, mo, d, h, mi, s, frac, zone = match.groups()
    moment = dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0),
                         _fraction(frac))  # fmt: skip
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        moment -= sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return moment


def _timespan(text: str) -> dt.timedelta:
    match = _TIMESPAN.fullmatch(text)
    if match is None:
        raise ValueError("not a timespan ([d.]hh:mm[:ss[.fffffff]])")
    minus, days, h, mi, s, frac = match.groups()
    if int(h) > 23 or int(mi) > 59 or int(s or 0) > 59:  # days.hours:minutes:seconds
        raise ValueError("a timespan with hours over 23 or minutes or seconds over 59")
    span = dt.timedelta(days=int(days or 0), hours=int(h), minutes=int(mi),
                        seconds=int(s or 0), microseconds=_fraction(frac))  # fmt: skip
    return -span if minus else span


def from_text(text: str, kind: str) -> Any:
    """A field's text as a value of KQL type `kind` (ValueError when it is not one in the
    forms read: ISO 8601 datetimes, [d.]hh:mm:ss timespans, JSON dynamics)."""
    if kind == "string":
        return text
    if text == "":
        return None
    if kind in ("int", "long"):
        if not _INT.fullmatch(text) or not -_INT_RANGE[kind] <= int(text) < _INT_RANGE[kind]:
            raise ValueError(f"not a {kind}")
        return int(text)
    if kind in ("real", "decimal"):
        if not _REAL.fullmatch(text):
            raise ValueError(f"not a {kind}")
        return float(text) if kind == "real" else text
    if kind == "bool":
        if text.lower() not in ("true", "false"):
            raise ValueError("not true or false")
        return text.lower() == "true"
    if kind == "datetime":
        return _datetime(text)
    if kind == "timespan":
        return _timespan(text)
    if kind == "guid":
        if not _GUID.fullmatch(text):
            raise ValueError("not a guid")
        return str(uuid.UUID(text))
    if kind == "dynamic":
        return json.dumps(json.loads(text))
    raise ValueError(f"type {kind}")


def from_json(value: Any, kind: str) -> Any:
    """A JSON field's value as a value of KQL type `kind` (a string is read as text is)."""
    if value is None:
        return "" if kind == "string" else None
    if kind == "dynamic":
        return json.dumps(value)
    if isinstance(value, str):
        return from_text(value, kind)
    if kind in ("int", "long") and isinstance(value, int) and not isinstance(value, bool):
        return from_text(str(value), kind)
    if (
        kind in ("real", "decimal")
        and isinstance(value, int | float)
        and not isinstance(value, bool)
    ):
        return float(value) if kind == "real" else str(value)
    if kind == "bool" and isinstance(value, bool):
        return value
    raise ValueError(f"a JSON {type(value).__name__} for a {kind} column")


def _records(text: str, delimiter: str) -> list[list[str]]:
    """The records of a delimited text (RFC 4180 quoting); trailing empty lines dropped, an
    empty line before a record refused (the docs say nothing of one)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        records = list(reader)
    except csv.Error as exc:
        raise ValueError(f"malformed record: {exc}") from None
    while records and records[-1] == []:
        records.pop()
    if any(r == [] for r in records):
        raise ValueError("an empty line between records")
    return records


def _bags(text: str, multi: bool) -> list[Any]:
    """The property bags of a JSON (one a line) or MultiJSON text."""
    if not multi:
        # objects delimited by \n or \r\n (the formats' docs): not at U+2028 and the other
        # line breaks of str.splitlines, which a JSON string may hold unescaped
        return [json.loads(line) for line in text.split("\n") if line.strip()]
    decoder, at = json.JSONDecoder(), 0
    bags: list[Any] = []
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return bags
        value, at = decoder.raw_decode(text, at)
        bags.extend(value if isinstance(value, list) else [value])


_STEP = re.compile(r"\.([^.\[\]\s]+)|\.?\[\s*'([^']*)'\s*\]|\.?\[\s*\"([^\"]*)\"\s*\]|\.?\[(\d+)\]")


def _json_path(bag: Any, path: str) -> Any:
    """The value at a mapping's path (`$`, `$.a.b`, `$['a']`, `$.['a']`, `$.a[0]`), None
    when absent. Kusto's JSON mapping docs: a path that does not start with `$` is a constant
    value (returned as it is)."""
    if not path.startswith("$"):
        return path
    value, at = bag, 1
    while at < len(path):
        step = _STEP.match(path, at)
        if step is None:
            raise ValueError(f"an ingestionMapping path other than $.a, $['a'], $.a[0]: {path}")
        key, quoted, dquoted, index = step.groups()
        at = step.end()
        if index is not None:
            value = (
                value[int(index)] if isinstance(value, list) and int(index) < len(value) else None
            )
        else:
            name = key if key is not None else quoted if quoted is not None else dquoted
            value = value.get(name) if isinstance(value, dict) else None
        if value is None:
            return None
    return value


def _mapping(found: Found) -> list[dict[str, Any]] | None:
    """The ingestionMapping, one element per declared column in order (None: identity)."""
    given = dict(found.properties).get("ingestionmapping")
    if not given:
        return None
    try:
        elements = json.loads(given)
    except ValueError:
        raise ValueError("an ingestionMapping that is not JSON") from None
    if not isinstance(elements, list):
        raise ValueError("an ingestionMapping that is not a list")
    by_column = {}
    for element in elements:
        top = {k.lower(): v for k, v in element.items()} if isinstance(element, dict) else {}
        if "column" not in top:
            raise ValueError("an ingestionMapping element without a Column")
        props = {k.lower(): v for k, v in (top.get("properties") or {}).items()}
        for key in ("path", "ordinal", "constvalue"):
            if key in top:
                props.setdefault(key, top[key])
        if set(props) - {"path", "ordinal", "constvalue"}:
            raise ValueError(f"an ingestionMapping property other than Path, Ordinal, "
                             f"ConstValue: {sorted(set(props))}")  # fmt: skip
        if len(props) > 1:  # the mapping docs: "either of" them (ConstValue: Ordinal unset)
            raise ValueError(f"an ingestionMapping element with several of Path, Ordinal, "
                             f"ConstValue: {sorted(props)}")  # fmt: skip
        if top["column"] in by_column or top["column"] not in dict(found.columns):
            raise ValueError(f"an ingestionMapping Column {top['column']!r} mapped twice or "
                             "not declared")  # fmt: skip
        by_column[top["column"]] = props
    return [by_column.get(name, {}) for name, _ in found.columns]


def read_rows(found: Found, files: list[Path]) -> list[tuple[Any, ...]]:
    """The rows Kusto reads from `files` (one per URL) for the expression `found`;
    KqlRefused when the format, the mapping or a value is outside what is read."""
    fmt = found.format
    if fmt not in _FORMATS:
        raise KqlRefused(f"externaldata of format {fmt!r} (read: {', '.join(_FORMATS)})")
    kinds = [kind for _, kind in found.columns]
    unknown = [k for k in kinds if k not in DUCKDB_TYPES]
    if unknown:
        raise KqlRefused(f"externaldata column of type {unknown[0]!r}")
    skip = dict(found.properties).get("ignorefirstrecord", "false").lower() == "true"
    rows: list[tuple[Any, ...]] = []
    for path in files:
        try:
            text = _text(path.read_bytes())
            rows += _file_rows(found, fmt, kinds, text, skip)
        except (ValueError, IndexError, KeyError, TypeError, OSError, EOFError) as exc:
            raise KqlRefused(f"externaldata {path.name} ({fmt}): {exc}") from None
    return rows


def _text(data: bytes) -> str:
    """A file's text: gzip (a `.gz` artifact) or zip (a `.zip` one, "archive or single
    file": an archive of several files is refused, which of them Kusto reads not being
    documented) decompressed, UTF-8 decoded (ValueError when not UTF-8)."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    elif data[:4] == b"PK\x03\x04":
        import zipfile

        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                members = [m for m in archive.infolist() if not m.is_dir()]
                if len(members) != 1:
                    raise ValueError(f"a zip archive of {len(members)} files")
                data = archive.read(members[0])
        except zipfile.BadZipFile as exc:
            raise ValueError(f"a zip file that does not read: {exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"a file over {MAX_FILE_BYTES // 2**20} MB")
    return data.decode("utf-8-sig", "strict")


def _file_rows(found: Found, fmt: str, kinds: list[str], text: str,
               skip: bool) -> list[tuple[Any, ...]]:  # fmt: skip
    mapping = _mapping(found)
    if fmt in ("txt", "raw"):
        # CSV mapping docs: "For TXT and RAW formats, only Ordinal 0 can be mapped"
        if mapping is None and len(kinds) != 1:
            raise ValueError(f"{fmt} holds one field a record: declare one column")
        if fmt == "raw":
            records = [[text]]
        else:
            records = [[line.removesuffix("\r")] for line in text.split("\n")]
            records = [r for r in records if r[0] != ""]
        if mapping is not None and any(
            "constvalue" not in spec and str(spec.get("ordinal")) != "0" for spec in mapping
        ):
            raise ValueError(f"an ingestionMapping of {fmt} other than Ordinal 0 or ConstValue")
        records = records[skip:]
    elif fmt in _DELIMITED:
        records = _records(text, _DELIMITED[fmt])[skip:]
    if fmt in _DELIMITED or fmt in ("txt", "raw"):
        out = []
        for number, record in enumerate(records, 1 + skip):
            if mapping is None and len(record) != len(kinds):
                raise ValueError(f"record {number} has {len(record)} fields, the schema "
                                 f"{len(kinds)} columns")  # fmt: skip
            values = []
            for i, kind in enumerate(kinds):
                spec = mapping[i] if mapping is not None else {"ordinal": i}
                if "constvalue" in spec:
                    values.append(from_text(str(spec["constvalue"]), kind))
                elif "ordinal" in spec and int(spec["ordinal"]) < len(record):
                    values.append(from_text(record[int(spec["ordinal"])], kind))
                else:
                    raise ValueError(f"record {number}: no field for column {i + 1}")
            out.append(tuple(values))
        return out
    bags = _bags(text, fmt == "multijson")[skip:]
    out = []
    for bag in bags:
        if not isinstance(bag, dict):
            raise ValueError("a JSON record that is not a property bag")
        values = []
        for i, (name, kind) in enumerate(found.columns):
            spec = mapping[i] if mapping is not None else {"path": None}
            if "constvalue" in spec:
                values.append(from_text(str(spec["constvalue"]), kind))
            elif spec.get("path") is not None:
                values.append(from_json(_json_path(bag, str(spec["path"])), kind))
            elif mapping is None:  # identity: the field of the same name
                values.append(from_json(bag.get(name), kind))
            else:  # what a mapping that leaves a column out gives is not documented
                raise ValueError(f"the ingestionMapping does not map column {name!r}")
        out.append(tuple(values))
    return out


# -- the engine's side -------------------------------------------------------------------------


def physical_columns(columns: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """Declared columns as stored: a spelling that differs only in case from an earlier one
    gets `_kql_case`'s suffix (`country`, `Country` -> `country`, `Country__qe1`).

    >>> physical_columns((("country", "string"), ("Country", "string"), ("x", "long")))
    (('country', 'string'), ('Country__qe1', 'string'), ('x', 'long'))
    """
    seen: dict[str, int] = {}
    out = []
    for name, kind in columns:
        count = seen.get(name.casefold(), 0)
        seen[name.casefold()] = count + 1
        out.append((f"{name}__qe{count}" if count else name, kind))
    return tuple(out)


def _check_encoded(query: str, found: Found, table: Table) -> None:
    """Refuse a query that would see an encoded column under its other spelling: one that
    names it (DuckDB would read the first spelling's column: names fold case there) or reads
    column names as data."""
    from queryeval.engines._kql_case import NAME_READERS

    encoded = [d for (d, _), (p, _) in zip(found.columns, table.columns, strict=True) if d != p]
    if not encoded:
        return
    rest = query[: found.start] + query[found.stop :]
    named = [n for n in encoded if re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", rest)]
    if named or NAME_READERS.search(rest):
        raise KqlRefused("externaldata columns whose names differ only in case, named in the "
                         "query or read as data")  # fmt: skip


RowSource = Callable[[Found], list[tuple[Any, ...]]]


class ExternalData:
    """A KQL database's `externaldata` URLs: `substitute` replaces each expression of a query
    by a table holding its rows (read by `rows`, else from the file a URL maps to) and
    refuses one whose URL maps to nothing; `create` makes the tables a translation names on
    the cursor that runs it."""

    def __init__(self, files: Mapping[str, Path] | None = None,
                 rows: RowSource | None = None) -> None:  # fmt: skip
        """`files`: URL -> file; `rows`: the rows of every expression instead of the
        files' (with no `files`, of any URL)."""
        self.files = dict(files or {})
        self.rows = rows
        self._tables: dict[str, Table] = {}
        self._lock = threading.Lock()

    def _file(self, url: str) -> Path:
        for key in (url, url.split("?", 1)[0], url.split("?", 1)[0].split(";", 1)[0]):
            if key in self.files:
                return self.files[key]
        raise KqlRefused(f"{NETWORK_REFUSAL} does not fetch ({url[:80]}): {HOW_TO_MAP}")

    def table(self, found: Found) -> Table:
        """The table of one expression (read once per engine); columns whose names differ
        only in case (two columns to Kusto, one name to DuckDB) hold the later spellings
        under `_kql_case`'s encoded names (`Country__qe1`, named back in the result)."""
        files: list[Path] = []
        if self.files or self.rows is None:  # a row source alone takes any URL
            files = [self._file(url) for url in found.urls]
        source = repr([(str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files])
        key = hashlib.sha256(repr((found.columns, found.urls, found.properties, source))
                             .encode()).hexdigest()[:16]  # fmt: skip
        name = TABLE_PREFIX + key
        with self._lock:
            if name in self._tables:
                return self._tables[name]
        rows = self.rows(found) if self.rows is not None else read_rows(found, files)
        table = Table(name, physical_columns(found.columns), tuple(rows))
        with self._lock:
            self._tables[name] = table
        return table

    def substitute(self, query: str) -> str:
        """`query` with each `externaldata` expression replaced by its table's name."""
        found = find(query)
        out, at = [], 0
        for item in found:
            if item.start < at:  # inside another (cannot be: no pipeline input)
                continue
            # a parenthesized tabular expression wherever the operator stands (a bare name
            # would be a column inside `in (...)`, and a function body duckdb-kql refuses)
            table = self.table(item)
            _check_encoded(query, item, table)
            name = f"({table.name} | where true)"
            out += [query[at : item.start], name]
            at = item.stop
        return "".join(out) + query[at:] if found else query

    def emptied(self) -> ExternalData:
        """The same URLs holding no rows (an empty copy of the database); none mapped: the
        same refusals."""
        if not self.files and self.rows is None:
            return self
        return ExternalData(self.files, rows=lambda found: [])

    def named(self, sql: str) -> list[Table]:
        """The tables a translation names."""
        if TABLE_PREFIX not in sql:
            return []
        with self._lock:
            return [t for name, t in self._tables.items() if f'"{name}"' in sql]

    def catalog(self, catalog: Mapping[str, Any], text: str) -> dict[str, Any]:
        """duckdb-kql's catalog with the tables `text` (a substituted query) names."""
        if TABLE_PREFIX not in text:
            return dict(catalog)
        with self._lock:
            extra = {n: [c for c, _ in t.columns] for n, t in self._tables.items() if n in text}
        return {**catalog, **extra}


def mapping_problem(mapping: Any, base_dir: Path) -> tuple[tuple[str, ...], str] | None:
    """What is wrong with a database's `externaldata` option (a URL -> file map, files
    relative to the suite), as (place under options.externaldata, message), or None."""
    if not isinstance(mapping, dict):
        return (), "expected a mapping of URL to a local file"
    for url, value in mapping.items():
        if not isinstance(value, str) or not value:
            return (str(url),), "expected the path of a local file"
        path = Path(value).expanduser()
        path = path if path.is_absolute() else base_dir / path
        if not path.is_file():
            return (str(url),), f"externaldata file not found: {path}"
    return None


def resolve(mapping: Mapping[str, str], base_dir: Path) -> dict[str, Path]:
    """The option's files as paths (relative ones under the suite's folder)."""
    out = {}
    for url, value in mapping.items():
        path = Path(value).expanduser()
        out[url] = path if path.is_absolute() else base_dir / path
    return out


def synthetic_rows(value: Callable[[str, int], Any], count: int) -> RowSource:
    """A row source giving every expression `count` rows, value(kind, i) in row i (the
    coverage benchmark's tables' rows)."""

    def rows(found: Found) -> list[tuple[Any, ...]]:
        return [tuple(value(kind, i) for _, kind in found.columns) for i in range(count)]

    return rows


def file_identity(files: Mapping[str, Path]) -> str:
    """A short key of the URLs and their files' paths, sizes and times (for the engine's
    identity: the gold cache's key)."""
    stats = sorted((url, str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns)
                   for url, p in files.items())  # fmt: skip
    return hashlib.sha256(repr(stats).encode()).hexdigest()[:12]
