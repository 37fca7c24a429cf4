"""Rows queryeval adds to duckdb-kql's function tables.

duckdb-kql keeps its coverage as data: `duckdb_kql.translate.functions` maps each KQL
scalar and aggregate function to a DuckDB SQL template ("growing support means adding rows
and tests, not writing new logic"), and 1.1 has no other way to register one. queryeval adds
rows there, once, when the first KQL engine is built (`install()`): only under names
duckdb-kql does not map, so nothing it answers changes, except two rows known to answer
wrongly (base64 decoding, see below), replaced only while they are the known wrong ones.
Any other code using duckdb_kql in the same process sees the added names too.

Every template follows Kusto's documented behaviour and is tested against hand-computed
results and the docs' examples in tests/test_kql_coverage.py and tests/test_kql_functions.py.
Runtime refusals raise a DuckDB error whose message starts with `REFUSED_MARKER`, which the
KQL engine reports as `unsupported`. One special form of duckdb-kql known to answer wrongly
(`datetime_diff('week', ...)`, see `_sunday_weeks`) is wrapped while it is the known one.
"""

from __future__ import annotations

import threading
from typing import Any

REFUSED_MARKER = "queryeval refused:"
_LOCK = threading.Lock()
_INSTALLED = False

# duckdb-kql 1.1's make_set / make_list templates, whose FILTER clause the `_if` and sized
# variants extend; a different template (another duckdb-kql) leaves those variants out.
_NOT_NULL_FILTER = "FILTER (WHERE {0} IS NOT NULL)"
_KNOWN_BASE64 = "coalesce(TRY_CAST(TRY_CAST(from_base64({0}) AS VARCHAR) AS VARCHAR), '')"
# Kusto's base64_decode_tostring answers '' when the decoded bytes are not UTF-8 (its docs'
# example); DuckDB's cast of such bytes to VARCHAR gives escaped text instead. What Kusto does
# with text that is not base64 at all is not documented, so that is refused at run time.
_BASE64_TEXT = r"^([A-Za-z0-9+/]{{4}})*([A-Za-z0-9+/]{{2}}==|[A-Za-z0-9+/]{{3}}=)?$"
_BASE64_DECODE = (
    "(CASE WHEN {0} IS NULL THEN '' "
    f"WHEN regexp_full_match({{0}}, '{_BASE64_TEXT}') "
    "THEN coalesce(try(decode(from_base64({0}))), '') "
    f"ELSE error('{REFUSED_MARKER} base64_decode_tostring of text that is not base64 "
    "(what Kusto answers is not established)') END)"
)

# base64_decode_toarray: the decoded bytes as an array of longs (the docs' "S3VzdG8=" ->
# [75,117,115,116,111]); text that is not base64 is refused, as for base64_decode_tostring
_BASE64_ARRAY = (
    f"(CASE WHEN regexp_full_match(coalesce({{0}}, ''), '{_BASE64_TEXT}') "
    "THEN to_json(list_transform([hex(from_base64(coalesce({0}, '')))], lambda _qe_h: "
    "list_transform(range(0, length(_qe_h) // 2), lambda _qe_i: "
    "CAST('0x' || substring(_qe_h, 2 * _qe_i + 1, 2) AS BIGINT)))[1]) "
    f"ELSE error('{REFUSED_MARKER} base64_decode_toarray of text that is not base64 "
    "(what Kusto answers is not established)') END)"
)


_INTEGERS = "('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'UTINYINT', 'USMALLINT', 'UINTEGER')"
_RANGE = (
    f"(CASE WHEN typeof({{0}}) IN {_INTEGERS} AND typeof({{1}}) IN {_INTEGERS} "
    f"AND typeof({{2}}) IN {_INTEGERS} AND {{2}} <> 0 "
    "AND (TRY_CAST({1} AS BIGINT) - TRY_CAST({0} AS BIGINT)) // TRY_CAST({2} AS BIGINT) "
    "< 1048576 THEN to_json(CASE WHEN sign({1} - {0}) IN (0, sign({2})) THEN "
    "generate_series(TRY_CAST({0} AS BIGINT), TRY_CAST({1} AS BIGINT), TRY_CAST({2} AS BIGINT))"
    " ELSE [] END) "
    f"ELSE error('{REFUSED_MARKER} range() other than of integers, or of over 1,048,576 "
    "elements') END)"
)


_SERIES_BINS = "generate_series({2}, {3} - INTERVAL 1 microsecond, {4})"
_SERIES = (
    "(CASE WHEN count(*) = 0 THEN NULL "
    "ELSE list_transform([map_from_entries(list(struct_pack(k := {1}, v := {0})))], "
    f"lambda _qe_m: list_transform({_SERIES_BINS}, lambda _qe_t: "
    "coalesce(_qe_m[_qe_t], {5})))[1] END)"
)
_SERIES_AXIS = "generate_series({1}, {2} - INTERVAL 1 microsecond, {3})"


# ipv4_is_private: an IPv4 address (optionally with a /prefix) in 10.0.0.0/8, 172.16.0.0/12
# or 192.168.0.0/16 (Kusto's docs: a masked address counts by its prefix); null for text that
# is not an IPv4 address. `_qe_o`: the four octets, `_qe_m`: the prefix length (32 if none).
_IPV4 = r"(\d{{1,3}})\.(\d{{1,3}})\.(\d{{1,3}})\.(\d{{1,3}})(/\d{{1,2}})?"
_IPV4_PRIVATE = (
    f"(CASE WHEN NOT regexp_full_match(trim({{0}}), '{_IPV4}') THEN NULL ELSE "
    "list_transform([list_transform(string_split(split_part(trim({0}), '/', 1), '.'), "
    "lambda _qe_p: CAST(_qe_p AS INTEGER))], lambda _qe_o: list_transform("
    "[coalesce(TRY_CAST(nullif(split_part(trim({0}), '/', 2), '') AS INTEGER), 32)], "
    "lambda _qe_m: CASE WHEN list_max(_qe_o) > 255 OR _qe_m > 32 THEN NULL ELSE "
    "(_qe_o[1] = 10 AND _qe_m >= 8) OR (_qe_o[1] = 172 AND _qe_o[2] BETWEEN 16 AND 31 "
    "AND _qe_m >= 12) OR (_qe_o[1] = 192 AND _qe_o[2] = 168 AND _qe_m >= 16) END)[1])[1] END)"
)


# ipv4_is_in_range(address, range): whether the address is in the range in IP-prefix notation
# (a range without a /prefix is the one address); null when either is not an IPv4 address
# (Kusto's docs). An address with a /prefix of its own is refused at run time (not in the
# docs). `_qe_v`: [address as a number, range as a number, prefix length, largest octet].
_OCTETS = "list_transform(string_split(split_part(trim({x}), '/', 1), '.'), lambda _qe_p: CAST(_qe_p AS BIGINT))"  # noqa: E501
_NUMBER = f"list_reduce({_OCTETS}, lambda _qe_a, _qe_b: _qe_a * 256 + _qe_b)"
_IPV4_IN_RANGE = (
    f"(CASE WHEN regexp_full_match(trim({{0}}), '{_IPV4}') AND strpos({{0}}, '/') > 0 "
    f"THEN error('{REFUSED_MARKER} ipv4_is_in_range of an address with a /prefix') "
    f"WHEN NOT regexp_full_match(trim({{0}}), '{_IPV4}') "
    f"OR NOT regexp_full_match(trim({{1}}), '{_IPV4}') THEN NULL ELSE "
    "list_transform([[" + _NUMBER.format(x="{0}") + ", " + _NUMBER.format(x="{1}") + ", "
    "coalesce(TRY_CAST(nullif(split_part(trim({1}), '/', 2), '') AS BIGINT), 32), "
    "greatest(list_max("
    + _OCTETS.format(x="{0}")
    + "), list_max("
    + _OCTETS.format(x="{1}")
    + "))]], lambda _qe_v: CASE WHEN _qe_v[4] > 255 OR _qe_v[3] > 32 THEN NULL ELSE "
    "(_qe_v[1] >> (32 - _qe_v[3])) = (_qe_v[2] >> (32 - _qe_v[3])) END)[1] END)"
)


_TRANSLATE = (
    "translate({2}, {0}, CASE WHEN length({1}) = 0 THEN '' "
    "ELSE rpad({1}, CAST(greatest(length({0}), length({1})) AS INTEGER), right({1}, 1)) END)"
)


def _refuse(why: str) -> str:
    """SQL that stops the query at run time as queryeval's refusal."""
    return f"error('{REFUSED_MARKER} {why}')"


# format_bytes(size, precision = 0, units = ''): size / 1024^k rounded to `precision` digits
# with the unit's name; k from `units`, else the largest unit not above the size (Kusto's
# docs: 564 Bytes, 10.1 KB, 19 MB, 19.08 MB, 19541 KB). What the docs leave open is refused:
# a negative or null size, a tie between two roundings, and a last digit of 0 after the
# point (whether Kusto writes "10.0 KB" or "10 KB").
_UNITS = "['Bytes', 'KB', 'MB', 'GB', 'TB', 'PB', 'EB']"
_AUTO_UNIT = (
    "CASE " + " ".join(f"WHEN {{0}} >= {1024**k} THEN {k}" for k in range(6, 0, -1)) + " ELSE 0 END"
)
_FORMAT_BYTES = (
    "(CASE WHEN {0} IS NULL OR {1} IS NULL OR {2} IS NULL OR {0} < 0 "
    f"THEN {_refuse('format_bytes of a null or negative size')} "
    f"WHEN {{1}} < 0 THEN {_refuse('format_bytes with a negative precision')} "
    f"WHEN NOT list_contains({_UNITS}, {{2}}) AND {{2}} <> '' "
    f"THEN {_refuse('format_bytes with units other than Bytes, KB, MB, GB, TB, PB, EB')} "
    f"ELSE list_transform([CASE WHEN {{2}} = '' THEN {_AUTO_UNIT} "
    f"ELSE list_position({_UNITS}, {{2}}) - 1 END], lambda _qe_k: list_transform("
    "[CAST({0} AS DOUBLE) / pow(1024, _qe_k) * pow(10, {1})], lambda _qe_v: "
    "CASE WHEN _qe_v - floor(_qe_v) = 0.5 "
    f"THEN {_refuse('format_bytes of a value halfway between two roundings')} "
    "WHEN {1} > 0 AND round(_qe_v) % 10 = 0 "
    f"THEN {_refuse('format_bytes whose last digit after the point is 0')} "
    "ELSE format('{{:.{{}}f}} {{}}', round(_qe_v) / pow(10, {1}), CAST({1} AS INTEGER), "
    f"{_UNITS}[_qe_k + 1]) END)[1])[1] END)"
)


# format_timespan(timespan, format): the docs' format elements (d-dddddddd, f-fffffff,
# F-FFFFFFF, H/HH, h/hh as the docs' example uses it, m/mm, s/ss) and delimiters; anything
# else, a negative or null timespan, and an F element with no digit to write (whether its
# delimiter stays is not documented) are refused. `_qe_u`: the timespan in microseconds.
_SPAN_TOKENS = r"(d+|f+|F+|H+|h+|m+|s+|.)"
_PAD = (
    "lpad(CAST({v} AS VARCHAR), "
    "CAST(greatest(length(CAST({v} AS VARCHAR)), length(_qe_t)) AS INTEGER), '0')"
)
_FRACTION = "left(lpad(CAST(_qe_u % 1000000 AS VARCHAR), 6, '0') || '0', length(_qe_t))"
_FORMAT_TIMESPAN = (
    "(CASE WHEN {0} IS NULL OR {1} IS NULL "
    f"THEN {_refuse('format_timespan of a null timespan or format')} "
    "ELSE list_transform([datediff('microsecond', TIMESTAMP '1970-01-01', "
    "TIMESTAMP '1970-01-01' + {0})], lambda _qe_u: CASE WHEN _qe_u < 0 "
    f"THEN {_refuse('format_timespan of a negative timespan')} "
    f"ELSE array_to_string(list_transform(regexp_extract_all({{1}}, '{_SPAN_TOKENS}'), "
    "lambda _qe_t: CASE "
    f"WHEN regexp_full_match(_qe_t, 'd{{{{1,8}}}}') THEN {_PAD.format(v='_qe_u // 86400000000')} "
    f"WHEN regexp_full_match(_qe_t, 'f{{{{1,7}}}}') THEN {_FRACTION} "
    f"WHEN regexp_full_match(_qe_t, 'F{{{{1,7}}}}') THEN CASE WHEN rtrim({_FRACTION}, '0') = '' "
    f"THEN {_refuse('format_timespan F element with no digit to write')} "
    f"ELSE rtrim({_FRACTION}, '0') END "
    "WHEN regexp_full_match(_qe_t, 'H{{1,2}}|h{{1,2}}') "
    f"THEN {_PAD.format(v='(_qe_u // 3600000000) % 24')} "
    f"WHEN regexp_full_match(_qe_t, 'm{{{{1,2}}}}') "
    f"THEN {_PAD.format(v='(_qe_u // 60000000) % 60')} "
    f"WHEN regexp_full_match(_qe_t, 's{{{{1,2}}}}') "
    f"THEN {_PAD.format(v='(_qe_u // 1000000) % 60')} "
    "WHEN regexp_full_match(_qe_t, '[ /:,._\\[\\]-]') THEN _qe_t "
    f"ELSE {_refuse('format_timespan format element outside the documented ones')} END), '') "
    "END)[1] END)"
)


# unicode_codepoints_from_string (deprecated alias to_utf8): the code points of the string's
# characters as a dynamic array; unicode_codepoints_to_string its inverse (Kusto's docs)
_CODEPOINTS = (
    "to_json(list_transform(string_split(coalesce({0}, ''), ''), lambda _qe_c: unicode(_qe_c)))"
)
# unicode_codepoints_to_string(values...) (deprecated alias make_string): up to 64 code points
# or arrays of them; null when one is not a valid code point (Kusto's docs); an element that
# is null or not an integer is refused (not documented). `_qe_l`: each argument as a list.
_AS_CODEPOINTS = (
    "(CASE WHEN json_type(TRY_CAST(to_json({x}) AS JSON)) = 'ARRAY' "
    "THEN TRY_CAST(to_json({x}) AS BIGINT[]) ELSE [TRY_CAST({x} AS BIGINT)] END)"
)
_FROM_CODEPOINTS = (
    "list_transform([[{lists}]], lambda _qe_l: CASE WHEN len(list_filter(_qe_l, lambda _qe_a: "
    "_qe_a IS NULL OR len(list_filter(_qe_a, lambda _qe_c: _qe_c IS NULL)) > 0)) > 0 "
    f"THEN {_refuse('unicode_codepoints_to_string of a value that is not an integer')} "
    "WHEN len(list_filter(flatten(_qe_l), lambda _qe_c: _qe_c < 0 OR _qe_c > 1114111 "
    "OR _qe_c BETWEEN 55296 AND 57343)) > 0 THEN NULL "
    "ELSE array_to_string(list_transform(flatten(_qe_l), "
    "lambda _qe_c: chr(CAST(_qe_c AS INTEGER))), '') END)[1]"
)


def _codepoints_row(functions: Any, name: str) -> Any:
    """unicode_codepoints_to_string's row: each of its 1-64 arguments as a list of code
    points (a template names a fixed number of arguments)."""
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Codepoints(functions.FunctionSpec):
        def render(self, args: list[str]) -> str:
            if not 1 <= len(args) <= 64:
                raise ValueError(f"{name}() takes 1 to 64 arguments, got {len(args)}")
            lists = ", ".join(_AS_CODEPOINTS.format(x=arg) for arg in args)
            return _FROM_CODEPOINTS.replace("{lists}", lists)

    return Codepoints(name, "template", "", (), (), "queryeval: 1-64 arguments")


# jaccard_index(set1, set2): |set1 ∩ set2| / |set1 ∪ set2|, duplicates ignored (Kusto's docs);
# two empty sets (0 / 0), null elements and arguments that are not arrays are refused (not
# documented). `_qe_s`: both sets, distinct, as JSON values.
_JSON_SET = "list_distinct(CAST(to_json({x}) AS JSON[]))"
_JACCARD = (
    "(CASE WHEN json_type(TRY_CAST(to_json({0}) AS JSON)) IS DISTINCT FROM 'ARRAY' "
    "OR json_type(TRY_CAST(to_json({1}) AS JSON)) IS DISTINCT FROM 'ARRAY' "
    f"THEN {_refuse('jaccard_index of a value that is not an array')} "
    "ELSE list_transform([[" + _JSON_SET.format(x="{0}") + ", " + _JSON_SET.format(x="{1}") + "]], "
    "lambda _qe_s: CASE WHEN len(list_filter(list_concat(_qe_s[1], _qe_s[2]), "
    "lambda _qe_e: json_type(_qe_e) = 'NULL')) > 0 "
    f"THEN {_refuse('jaccard_index of sets holding null')} "
    "WHEN len(_qe_s[1]) + len(_qe_s[2]) = 0 "
    f"THEN {_refuse('jaccard_index of two empty sets')} "
    "ELSE len(list_intersect(_qe_s[1], _qe_s[2])) / "
    "len(list_distinct(list_concat(_qe_s[1], _qe_s[2]))) END)[1] END)"
)

# datetime_utc_to_local / datetime_local_to_utc(from, timezone) with DuckDB's ICU time zones
# (IANA names, as Kusto's); a name ICU does not know is refused. Local to UTC: a local time
# has one UTC instant except near a DST change; one the clocks skipped takes the offset after
# the change (the docs' Europe/Brussels example: 02:00 -> 00:00 UTC), one they repeated is
# ambiguous and refused (not documented). `_qe_u`: the local time less the offset a day
# before and a day after (at most one change between them); the first that maps back wins.
_TZ_KNOWN = "{1} IN (SELECT name FROM pg_timezone_names())"


def _local(utc: str) -> str:
    return f"timezone({{1}}, timezone('UTC', {utc}))"


_UTC_TO_LOCAL = (
    "(CASE WHEN {0} IS NULL OR {1} IS NULL THEN NULL "
    f"WHEN NOT ({_TZ_KNOWN}) THEN {_refuse('datetime_utc_to_local with an unknown time zone')} "
    f"ELSE {_local('CAST({0} AS TIMESTAMP)')} END)"
)
_DAY = "INTERVAL 1 DAY"
_LOCAL_TO_UTC = (
    "(CASE WHEN {0} IS NULL OR {1} IS NULL THEN NULL "
    f"WHEN NOT ({_TZ_KNOWN}) THEN {_refuse('datetime_local_to_utc with an unknown time zone')} "
    "ELSE list_transform([[{0} - (" + _local(f"({{0}} - {_DAY})") + f" - ({{0}} - {_DAY})), "
    "{0} - (" + _local(f"({{0}} + {_DAY})") + f" - ({{0}} + {_DAY}))]], lambda _qe_u: CASE "
    f"WHEN {_local('_qe_u[1]')} = {{0}} AND {_local('_qe_u[2]')} = {{0}} AND _qe_u[1] <> _qe_u[2] "
    f"THEN {_refuse('datetime_local_to_utc of a local time the clocks repeat (DST)')} "
    f"WHEN {_local('_qe_u[1]')} = {{0}} THEN _qe_u[1] ELSE _qe_u[2] END)[1] END)"
)

# parse_command_line(command_line, "windows"): CommandLineToArgvW's arguments (Kusto's docs):
# split at spaces and tabs outside double quotes, the quotes dropped. What CommandLineToArgvW's
# documentation leaves to its quirks is refused: a backslash before a quote, two quotes in a
# row, an unclosed quote, leading white space, line breaks, a quote inside the program name
# (its own rule), an empty command line (the current executable's path).
_ARGV_QUIRKS = r'\\"|""|[\r\n\v\f]|^[ \t]|^[^ \t"]+"|^"[^"]*"[^ \t]'
_PARSE_COMMAND_LINE = (
    "(CASE WHEN {1} IS DISTINCT FROM 'windows' "
    f"THEN {_refuse('parse_command_line with a parser other than windows')} "
    f"WHEN coalesce({{0}}, '') = '' THEN {_refuse('parse_command_line of an empty command line')} "
    f"WHEN regexp_matches({{0}}, '{_ARGV_QUIRKS}') "
    "OR (length({0}) - length(replace({0}, '\"', ''))) % 2 = 1 "
    f"THEN {_refuse('parse_command_line of quoting documented only by its quirks')} "
    'ELSE to_json(list_transform(regexp_extract_all({0}, \'(?:[^ \\t"]|"[^"]*")+\'), '
    "lambda _qe_a: replace(_qe_a, '\"', ''))) END)"
)

# parse_path(path): Scheme, RootPath, DirectoryPath, DirectoryName, Filename, Extension,
# AlternateDataStreamName (Kusto's docs' five examples): an optional `scheme://` (then a
# drive must follow), a drive `X:` as the root (a share's `\\server` is not), the directory up
# to the last slash or backslash, its last name, the file name up to a `:stream`, the
# extension after its last dot; a part that is absent is "" (as the examples' Scheme and
# stream). Forms the examples do not show are refused: long and device paths (`\\?\`,
# `\\.\`), no slash at all, an empty file or directory name, a directory that is only the
# root, a colon elsewhere, a file name starting or ending with a dot.
_P = "regexp_replace({0}, '^[A-Za-z][A-Za-z0-9+.-]*://', '')"
_PARTS = (
    "struct_pack(s := regexp_extract({0}, '^([A-Za-z][A-Za-z0-9+.-]*)://', 1), "
    f"r := regexp_extract({_P}, '^([A-Za-z]:)', 1), "
    f"d := regexp_extract({_P}, '^(.*)[/\\\\][^/\\\\]*$', 1), "
    f"f := regexp_extract({_P}, '[/\\\\]([^/\\\\]*)$', 1))"
)
_PARSE_PATH = (
    f"(CASE WHEN coalesce({{0}}, '') = '' THEN {_refuse('parse_path of an empty path')} "
    f"ELSE list_transform([{_PARTS}], lambda _qe_p: CASE "
    f"WHEN regexp_matches({_P}, '^[/\\\\][/\\\\][?.][/\\\\]') "
    "OR (_qe_p.s <> '' AND _qe_p.r = '') "
    "OR NOT regexp_matches(" + _P + ", '[/\\\\]') "
    "OR regexp_extract(_qe_p.d, '([^/\\\\]*)$', 1) IN ('', _qe_p.r) "
    "OR strpos(substring(_qe_p.d, length(_qe_p.r) + 1), ':') > 0 "
    "OR NOT regexp_full_match(_qe_p.f, '[^:.][^:]*[^:.](:[^:]+)?|[^:.](:[^:]+)?') "
    f"THEN {_refuse('parse_path of a form its docs do not show')} "
    "ELSE json_object('Scheme', _qe_p.s, 'RootPath', _qe_p.r, 'DirectoryPath', _qe_p.d, "
    "'DirectoryName', regexp_extract(_qe_p.d, '([^/\\\\]*)$', 1), "
    "'Filename', split_part(_qe_p.f, ':', 1), "
    "'Extension', regexp_extract(split_part(_qe_p.f, ':', 1), '\\.([^.]*)$', 1), "
    "'AlternateDataStreamName', split_part(_qe_p.f, ':', 2)) END)[1] END)"
)

# parse_csv(text): the fields of its first record as a string array (Kusto's docs: quotes
# escape commas, line feeds and doubled quotes; only the first record is taken). Text that is
# not records of such fields (a quote inside an unquoted field) and the empty string are
# refused (not documented). `_qe_r`: the first record with a comma after each field.
_CSV_FIELD = r'"(?:[^"]|"")*"|[^,"\r\n]*'
_CSV_RECORD = f"(?:{_CSV_FIELD})(?:,(?:{_CSV_FIELD}))*"
_PARSE_CSV = (
    "(CASE WHEN coalesce({0}, '') = '' "
    f"OR NOT regexp_full_match({{0}}, '{_CSV_RECORD}(?:\\r?\\n{_CSV_RECORD})*') "
    f"THEN {_refuse('parse_csv of text that is not comma-separated fields (RFC 4180)')} "
    f"ELSE to_json(list_transform(regexp_extract_all(regexp_extract({{0}}, '^{_CSV_RECORD}') "
    f"""|| ',', '({_CSV_FIELD}),', 1), lambda _qe_f: CASE WHEN starts_with(_qe_f, '"') """
    """THEN replace(_qe_f[2:-2], '""', '"') ELSE _qe_f END)) END)"""
)

# parse_xml(xml): dynamic, null for text that is not well-formed XML (Kusto's docs): the empty
# string is none. Converting XML to JSON is documented only by a table of forms (how numbers,
# white space, mixed content, namespaces come out is not), so any other text is refused.
_PARSE_XML = (
    "(CASE WHEN coalesce({0}, '') = '' THEN CAST(NULL AS JSON) "
    f"ELSE CAST({_refuse('parse_xml of XML text (its JSON form is documented only by examples)')}"
    " AS JSON) END)"
)


# Functions duckdb-kql renders as special forms (its `_SPECIAL_FORMS`) without a row in its
# table: `summarize x = datetime_diff('minute', now(), max(T))` is refused there as an unknown
# aggregate because the summarize path asks the table whether a call is a scalar. A row with
# this template answers that it is; the special form still renders the call, and were it ever
# to decline one, the row refuses at run time.
_SPECIAL_ONLY = ("datetime_diff", "datetime_add", "datetime_part", "bin")


def _make_bag(condition: str) -> str:
    """make_bag: the property bags of the group merged at the top level; for a key in
    several bags one of its values (Kusto: "an arbitrary value"); values that are not bags
    are skipped; `{}` when there is none."""
    bag = "TRY_CAST({0} AS JSON)"
    return (
        "coalesce((SELECT json_group_object(_qe_e.key, _qe_e.value) FROM (SELECT DISTINCT ON "
        f"(_qe_e.key) _qe_e.key, _qe_e.value FROM unnest(list({bag}) FILTER (WHERE "
        f"json_type({bag}) = 'OBJECT'{condition})) AS _qe_u(b), json_each(_qe_u.b) AS _qe_e) "
        "AS _qe_e), '{{}}')"
    )


def _ordered_distinct(array_sql: str) -> str:
    """Distinct elements of a JSON[] expression, first occurrence first, as JSON."""
    return (
        f"to_json(list_transform([{array_sql}], lambda _qe_l: "
        "list_filter(_qe_l, lambda _qe_x, _qe_i: list_position(_qe_l, _qe_x) = _qe_i))[1])"
    )


def _json_array(arg: str) -> str:
    return f"CAST(to_json({arg}) AS JSON[])"


def _set_union() -> str:
    return _ordered_distinct(f"list_concat({_json_array('{0}')}, {_json_array('{1}')})")


def _set_difference() -> str:
    right = _json_array("{1}")
    return _ordered_distinct(
        f"list_filter({_json_array('{0}')}, lambda _qe_y: NOT list_contains({right}, _qe_y))"
    )


def _set_intersect() -> str:
    right = _json_array("{1}")
    return _ordered_distinct(
        f"list_filter({_json_array('{0}')}, lambda _qe_y: list_contains({right}, _qe_y))"
    )


def _sized(template: str, size_slot: str) -> str:
    """An aggregate's template cut to its first `size_slot` elements, as a JSON array."""
    return f"to_json(list_slice(CAST(to_json({template}) AS JSON[]), 1, {size_slot}))"


def _rows(functions: Any) -> tuple[list[Any], list[Any]]:
    """(scalar rows, aggregate rows) to add, built from duckdb-kql's own templates."""
    aggregate = functions.AggregateSpec
    scalar = functions.FunctionSpec
    aggregates: list[Any] = []
    for name, prefix in (("make_set", "set"), ("make_list", "list")):
        base = functions.AGGREGATE_FUNCTIONS.get(name)
        if base is None or _NOT_NULL_FILTER not in base.template:
            continue
        conditional = base.template.replace(
            _NOT_NULL_FILTER, "FILTER (WHERE {0} IS NOT NULL AND ({1}))"
        )
        aggregates += [
            aggregate(f"{name}_if", conditional, (2,), name_prefix=prefix, rules=("R4",),
                      note="queryeval: make_*(x) over the rows where the predicate holds"),
            # the sized forms the rewriter calls for `make_set(x, n)` and the deprecated
            # `makeset(x)` (128): duckdb-kql's own make_set ignores a maxSize
            aggregate(f"queryeval_{name}", _sized(base.template, "{1}"), (2,),
                      name_prefix=prefix, note="queryeval: make_* cut to maxSize"),
            aggregate(f"queryeval_{name}_if", _sized(conditional, "{2}"), (3,),
                      name_prefix=prefix, note="queryeval: make_*_if cut to maxSize"),
        ]  # fmt: skip
    aggregates += [
        # make-series (from the rewriter): a group's per-bin values ({0} by bin {1}) as an
        # array over the bins {2} + k*{4} < {3}, {5} where a bin has no value; NULL for a
        # group of no rows at all (the rewriter drops that row: Kusto gives none)
        aggregate("queryeval_series", _SERIES, (6,), note="queryeval: make-series values"),
        aggregate("queryeval_series_axis", _SERIES_AXIS, (4,), note="queryeval: its axis"),
        # count_distinct: the exact number of distinct non-null values (Kusto's docs)
        aggregate("count_distinct", "count(DISTINCT {0})", (1,), name_prefix="count_distinct",
                  note="queryeval: exact distinct count"),
        aggregate("make_bag", _make_bag(""), (1,), name_prefix="bag", rules=("R4", "R9"),
                  note="queryeval: top-level merge, one value per key"),
        aggregate("make_bag_if", _make_bag(" AND ({1})"), (2,), name_prefix="bag",
                  rules=("R4", "R9"), note="queryeval: make_bag where the predicate holds"),
    ]  # fmt: skip
    scalars = [
        # range(start, stop, step) over integers, stop included, at most 1,048,576 elements
        # as Kusto's; other types are refused at run time (the two-argument form gets its
        # step from the rewriter)
        scalar("range", "template", _RANGE, (3,), ("R9",), "queryeval"),
        # indexof(s, x, start) for the rewriter (start >= 0): each argument evaluated once
        scalar(
            "queryeval_indexof",
            "template",
            "coalesce(nullif(position({1} IN substring({0}, {2} + 1)), 0) + {2} - 1, -1)",
            (3,),
            ("R11",),
            "queryeval: indexof from a start",
        ),
        # a fresh random guid per call, as Kusto's (results with it are never comparable)
        scalar("new_guid", "template", "gen_random_uuid()", (0,), (), "queryeval"),
        scalar("ipv4_is_private", "template", _IPV4_PRIVATE, (1,), (), "queryeval"),
        scalar("ipv4_is_in_range", "template", _IPV4_IN_RANGE, (2,), (), "queryeval"),
        scalar("set_union", "template", _set_union(), (2,), ("R9",), "queryeval"),
        # the NUL character, which duckdb-kql's string literals cannot hold (the rewriter
        # writes a literal argument holding one as strcat(..., queryeval_nul(), ...))
        scalar("queryeval_nul", "template", "chr(0)", (0,), (), "queryeval"),
        # string_size: the string's size in bytes (UTF-8), DuckDB's strlen
        scalar("string_size", "template", "strlen(CAST({0} AS VARCHAR))", (1,), (), "queryeval"),
        # translate(searchList, replacementList, source): a shorter replacement list is
        # padded with its last character, an empty one deletes (Kusto's docs' examples)
        scalar("translate", "template", _TRANSLATE, (3,), (), "queryeval"),
        # ingestion_time(): null where the table has no IngestionTime policy (Kusto's docs);
        # a DuckDB table records no ingestion time
        scalar("ingestion_time", "template", "CAST(NULL AS TIMESTAMP)", (0,), (), "queryeval"),
        # pack_dictionary: the deprecated name of bag_pack
        scalar("pack_dictionary", "template", "json_object({})", (), ("R9",), "queryeval"),
        scalar("set_difference", "template", _set_difference(), (2,), ("R9",), "queryeval"),
        scalar("set_intersect", "template", _set_intersect(), (2,), ("R9",), "queryeval"),
        defaulted(scalar("format_bytes", "template", _FORMAT_BYTES, (1, 2, 3), (),
                         "queryeval: Kusto's docs' examples"), ("0", "''")),
        scalar("format_timespan", "template", _FORMAT_TIMESPAN, (2,), (), "queryeval"),
        scalar("unicode_codepoints_from_string", "template", _CODEPOINTS, (1,), ("R9",),
               "queryeval"),
        scalar("to_utf8", "template", _CODEPOINTS, (1,), ("R9",), "queryeval: deprecated alias"),
        _codepoints_row(functions, "unicode_codepoints_to_string"),
        _codepoints_row(functions, "make_string"),
        scalar("base64_decode_toarray", "template", _BASE64_ARRAY, (1,), ("R9",), "queryeval"),
        scalar("jaccard_index", "template", _JACCARD, (2,), (), "queryeval"),
        scalar("datetime_utc_to_local", "template", _UTC_TO_LOCAL, (2,), (), "queryeval: ICU"),
        scalar("datetime_local_to_utc", "template", _LOCAL_TO_UTC, (2,), (), "queryeval: ICU"),
        scalar("parse_command_line", "template", _PARSE_COMMAND_LINE, (2,), ("R9",),
               "queryeval: CommandLineToArgvW's documented rules"),
        scalar("parse_path", "template", _PARSE_PATH, (1,), ("R9",), "queryeval"),
        scalar("parse_xml", "template", _PARSE_XML, (1,), ("R9",), "queryeval: '' only"),
        scalar("parse_csv", "template", _PARSE_CSV, (1,), ("R9",), "queryeval: RFC 4180"),
    ]  # fmt: skip
    scalars += [
        scalar(name, "template", _refuse(f"{name}() in a form duckdb-kql does not render"), (),
               (), "queryeval: a special form of duckdb-kql, summarized")
        for name in _SPECIAL_ONLY
    ]  # fmt: skip
    scalars += [_refused_row(functions, name, why) for name, why in UNREPRODUCIBLE.items()]
    from queryeval.engines._kql_functions_series import rows as series_rows

    scalars += series_rows(functions)
    return scalars, aggregates


# Functions whose answers cannot be Kusto's: refused when the query is translated, with why
# (duckdb-kql's own message would be "no DuckDB mapping in this wave", as if one were coming).
_ANOMALY_DOCS = (
    "Kusto's docs name the steps (series_decompose, series_outliers' Tukey fence, "
    "series_periods_detect) but not the arithmetic (the percentile interpolation, the score "
    "scaling, the period detection), so its values cannot be reproduced exactly"
)
UNREPRODUCIBLE = {
    "series_decompose_anomalies": _ANOMALY_DOCS,
    "series_decompose_forecast": _ANOMALY_DOCS,
    "series_decompose": _ANOMALY_DOCS,
    "series_outliers": _ANOMALY_DOCS,
    "series_periods_detect": _ANOMALY_DOCS,
    "parse_user_agent": "its user-agent patterns are Kusto's own, not published",
    "geo_info_from_ip_address": "it reads Kusto's own geolocation database",
}


def _refused_row(functions: Any, name: str, why: str) -> Any:
    """A FunctionSpec whose every call is refused at translation (`unsupported`)."""
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Refused(functions.FunctionSpec):
        def render(self, args: list[str]) -> str:
            raise ValueError(f"{REFUSED_MARKER} {name}() cannot be Kusto's: {why}")

    return Refused(name, "template", "", (), (), "queryeval: refused")


def defaulted(spec: Any, defaults: tuple[str, ...]) -> Any:
    """`spec` (a FunctionSpec) rendering a call without its last arguments with `defaults`
    (SQL) in their place: a template names every argument."""
    import dataclasses

    top = max(spec.arities)

    @dataclasses.dataclass(frozen=True)
    class Defaulted(type(spec)):  # type: ignore[misc]
        def render(self, args: list[str]) -> str:
            missing = top - len(args)
            if len(args) not in self.arities or not missing:  # as given (or its arity error)
                return str(super().render(args))
            return str(super().render([*args, *defaults[len(defaults) - missing :]]))

    return Defaulted(*dataclasses.astuple(spec))


def _sunday_weeks(translate: Any) -> None:
    """duckdb-kql 1.1 renders `datetime_diff('week', a, b)` as DuckDB's `date_diff('week',
    b, a)`, which counts whole weeks elapsed; Kusto counts the week boundaries between them,
    its weeks starting on Sunday (its docs: `datetime_diff('week', datetime(2017-10-29
    00:00), datetime(2017-09-30 23:59))` is 5, DuckDB's 4). Rendered here as the days between
    the two Sundays that start their weeks, over 7 (a day later, `date_trunc('week')`'s Monday
    is that Sunday). The special form is wrapped only while it is the known one."""
    original = translate._SPECIAL_FORMS.get("datetime_diff")
    if getattr(original, "__qualname__", None) != "_render_datetime_diff":
        return
    ir = translate.ir

    def datetime_diff(node: Any) -> str | None:
        part = node.args[0] if len(node.args) == 3 else None
        if not (isinstance(part, ir.Literal) and str(part.value).lower() == "week"):
            return original(node)
        first, second = (translate.render_expr(a) for a in node.args[1:])
        return (f"(date_diff('day', date_trunc('week', ({second}) + INTERVAL 1 DAY), "
                f"date_trunc('week', ({first}) + INTERVAL 1 DAY)) // 7)")  # fmt: skip

    datetime_diff.__qualname__ = "queryeval_datetime_diff"
    translate._SPECIAL_FORMS["datetime_diff"] = datetime_diff


# DuckDB list types whose JSON text (`to_json`) is Kusto's string form of the same dynamic
# array: strings, integers, bools (duckdb-kql holds split()/extract_all() results as lists)
_JSON_LISTS = "('VARCHAR[]', 'BIGINT[]', 'INTEGER[]', 'BOOLEAN[]')"
_LIST_CALLS = ("split", "extract_all")  # duckdb-kql's string lists


def _list_strings(translate: Any) -> None:
    """duckdb-kql 1.1 holds `split()` and `extract_all()` results as DuckDB lists, and its
    KQL string form (`render_kql_tostring`: tostring, strcat, strcat_delim, hashes) casts a
    list to VARCHAR: `strcat("x", split("a,b", ","))` gave `x[a, b]`. Kusto's string form of
    a dynamic array is its JSON text, as duckdb-kql measured for `tostring(dynamic([1,2]))`
    ('[1,2]'), so a list of strings, integers or bools is written as its JSON text (null:
    ''): a split() or extract_all() call itself, and a column holding such a list (a
    run-time typeof); other expressions are left to duckdb-kql (rendering one twice doubles
    the work at each nesting level: 40 -> 60+ s of preparation for KQLAdvancedHunting:46).
    A list of anything else (reals, datetimes: their JSON spelling is Kusto's own) is left
    to duckdb-kql. No refusal here: DuckDB's `error()` is volatile, which neither a
    `string_agg` delimiter (a constant) nor `try()` accepts. Wrapped only while it is the
    known one."""
    original = translate.render_kql_tostring
    if getattr(original, "__qualname__", None) != "render_kql_tostring":
        return

    ir = translate.ir

    def render_kql_tostring(node: Any) -> str:
        # only where the operand is cheap to render again (a column) or a list for sure
        # (split, extract_all): rendering an expression twice doubles at each nested level
        if isinstance(node, ir.FunctionCall) and node.name.lower() in _LIST_CALLS:
            return f"coalesce(CAST(to_json({translate.render_expr(node)}) AS VARCHAR), '')"
        text = str(original(node))
        if not isinstance(node, ir.ColumnRef):
            return text
        value = translate.render_expr(node)
        as_json = f"coalesce(CAST(to_json({value}) AS VARCHAR), '')"
        return f"(CASE WHEN typeof({value}) IN {_JSON_LISTS} THEN {as_json} ELSE {text} END)"

    render_kql_tostring.__qualname__ = "queryeval_render_kql_tostring"
    translate.render_kql_tostring = render_kql_tostring


def install() -> None:
    """Add queryeval's rows to duckdb-kql's tables (once per process; idempotent)."""
    global _INSTALLED
    with _LOCK:
        if _INSTALLED:
            return
        from duckdb_kql import translate
        from duckdb_kql.translate import functions

        scalars, aggregates = _rows(functions)
        _sunday_weeks(translate)
        _list_strings(translate)
        for spec in scalars:
            functions.SCALAR_FUNCTIONS.setdefault(spec.name, spec)
        for spec in aggregates:
            functions.AGGREGATE_FUNCTIONS.setdefault(spec.name, spec)
        for name in ("base64_decode_tostring", "base64_decodestring"):
            row = functions.SCALAR_FUNCTIONS.get(name)
            if row is not None and row.template == _KNOWN_BASE64:
                functions.SCALAR_FUNCTIONS[name] = functions.FunctionSpec(
                    name, "template", _BASE64_DECODE, (1,), row.rules,
                    "queryeval: '' for bytes that are not UTF-8, refused for text that is "
                    "not base64",
                )  # fmt: skip
        _INSTALLED = True
