"""The keys a prediction record may have, checked before it is read: a misspelt or unknown
key (`"qurey"`, `"prediction"`) is bad input naming the line and the key (with the closest
known key), never an output silently without a query. The language names `sql`, `kql` and
`cypher` are the query field when nothing else is (`{"case_id": 1, "sql": "SELECT 1"}`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from queryeval.cases import Attempt, Output
from queryeval.errors import InputError

RECORD_KEYS = frozenset({"case_id", "system", "attempt"})  # about the record
# free-text annotations a file may carry for its readers (kept out of the output)
NOTE_KEYS = frozenset({"note", "notes", "comment", "comments"})
OUTPUT_KEYS = frozenset(Output.model_fields) | {"output"}
# what systems and scorers read or write on an attempt beyond its declared fields:
# `retrieved` (RAG ids), `database` (the database a query is for), `statements` (the
# query's statements as the system gave them: a benchmark's `pred_sqls` items, which
# `task_tests` with `legacy` runs one by one), and what a live system records (`reply`,
# `read_problem`, `cached`, `call_error`)
ATTEMPT_EXTRA = frozenset(
    {"retrieved", "database", "statements", "reply", "read_problem", "cached", "call_error"}
)
ATTEMPT_KEYS = frozenset(Attempt.model_fields) | ATTEMPT_EXTRA
LANGUAGE_KEYS = ("sql", "kql", "cypher")  # the query field under its language's name
_LONG_FORM = frozenset({"output", "attempts", "error"})
_MAIN = (
    "the output: query (or sql, kql, cypher), answer, weaviate_query, indicator_selection, "
    "retrieved, language, latency_s, cost, or attempts / error"
)
# names people use for a field, with the field they mean
_MEANT = {
    "prediction": "query",
    "predicted": "query",
    "predicted_query": "query",
    "pred": "query",
    "generated_query": "query",
    "generated": "query",
    "completion": "query",
    "response": "answer",
    "tool_calls": "weaviate_query",
    "tool_call": "weaviate_query",
    "contexts": "retrieved",
    "context": "retrieved",
    "passages": "retrieved",
    "documents": "retrieved",
    "selection": "indicator_selection",
}


def _expected(keys: Iterable[str]) -> str:
    return ", ".join(sorted(keys))


def _suggestion(key: str, known: Iterable[str]) -> str:
    """`; did you mean 'query'?` for a key close to a known one (or a common other name)."""
    known = sorted(known)
    meant = _MEANT.get(key.lower())
    if meant is None or meant not in known:
        close = difflib.get_close_matches(key.lower(), known, n=1, cutoff=0.7)
        meant = close[0] if close else None
    return f"; did you mean {meant!r}?" if meant else ""


def _unknown(
    key: str, known: Iterable[str], what: str, path: Path, line: int, where: str
) -> InputError:
    known = list(known)
    return InputError(
        f"unknown key {key!r} in {what}{_suggestion(key, known)} (expected some of "
        f"{_expected(known)})",
        path=path,
        line=line,
        where=where,
    )


def _check_attempt(item: Any, path: Path, line: int, where: str) -> Any:
    """The attempt with its keys checked and a language-named query moved to `query`."""
    if not isinstance(item, dict):
        return item  # not an object: the system's unusable output, read later
    item = _language_query(item, path, line, f"{where}.")
    for key in item:
        if key not in ATTEMPT_KEYS and key not in NOTE_KEYS:
            raise _unknown(str(key), ATTEMPT_KEYS, "an attempt", path, line, f"{where}.{key}")
    return item


def _check_attempts(data: dict[str, Any], path: Path, line: int, where: str) -> dict[str, Any]:
    attempts = data.get("attempts")
    if not isinstance(attempts, list):
        return data
    checked = [
        _check_attempt(a, path, line, f"{where}attempts[{i}]") for i, a in enumerate(attempts)
    ]
    return {**data, "attempts": checked}


def _check_output(data: dict[str, Any], path: Path, line: int, where: str) -> dict[str, Any]:
    fields = frozenset(Output.model_fields)
    for key in data:
        if key in fields or key in NOTE_KEYS:
            continue
        if key in ATTEMPT_KEYS:
            raise InputError(
                f"{key!r} in an output: an output holds its attempts "
                f'({{"attempts": [{{"{key}": ...}}]}}), or give the attempt\'s fields at the top '
                "of the record",
                path=path,
                line=line,
                where=f"{where}.{key}",
            )
        raise _unknown(str(key), fields, "an output", path, line, f"{where}.{key}")
    return _check_attempts(data, path, line, f"{where}.")


def check_record(data: dict[str, Any], path: Path, line: int) -> dict[str, Any]:
    """The record with its keys checked (InputError naming the line and the key) and a
    language-named query (`sql`, `kql`, `cypher`) moved to `query` (with its `language`).

    >>> check_record({"case_id": 1, "sql": "SELECT 1"}, Path("p.jsonl"), 1)
    {'case_id': 1, 'query': 'SELECT 1', 'language': 'sql'}
    """
    data = _language_query(data, path, line)
    long_form = _LONG_FORM.intersection(data)
    if "output" in data:
        # `{"case_id", "output": ...}`: the output is the value; beside it, the record's keys
        allowed = RECORD_KEYS | {"output"}
        inner = data["output"]
        if isinstance(inner, dict):
            data = {**data, "output": _check_output(inner, path, line, "output")}
    elif long_form:
        allowed = RECORD_KEYS | OUTPUT_KEYS
        data = _check_attempts(data, path, line, "")
    else:
        allowed = RECORD_KEYS | ATTEMPT_KEYS | OUTPUT_KEYS
    for key in data:
        if key in allowed or key in NOTE_KEYS:
            continue
        if long_form and key in ATTEMPT_KEYS:
            beside = "output" if "output" in data else sorted(long_form)[0]
            raise InputError(
                f"{key!r} beside {beside!r}: a record gives either one attempt's fields "
                f"(query, answer, ...) or the long form ({beside}); put {key!r} in an attempt",
                path=path,
                line=line,
                where=key,
            )
        known = allowed | ({"sql", "kql", "cypher"} if not long_form else set())
        main = _MAIN if not long_form else _expected(allowed - RECORD_KEYS)
        raise InputError(
            f"unknown key {key!r} in a prediction record{_suggestion(str(key), known)} "
            f"(expected case_id and {main}; "
            "docs/systems.md lists every key)",
            path=path,
            line=line,
            where=str(key),
        )
    return data


def _language_query(data: dict[str, Any], path: Path, line: int, where: str = "") -> dict[str, Any]:
    """`sql` / `kql` / `cypher` as the query field, when it is the only query given."""
    named = [k for k in LANGUAGE_KEYS if k in data]
    if not named:
        return data
    if len(named) > 1 or "query" in data:
        given = [*(["query"] if "query" in data else []), *named]
        raise InputError(
            f"a record with {' and '.join(repr(k) for k in given)}: expected one query field "
            f"('query', or the language's name {', '.join(repr(k) for k in LANGUAGE_KEYS)})",
            path=path,
            line=line,
            where=f"{where}{named[-1]}",
        )
    (name,) = named
    language = data.get("language")
    if language is not None and language != name:
        raise InputError(
            f"{name!r} gives a {name} query but 'language' says {language!r}; expected one "
            "language (or 'query' with its 'language')",
            path=path,
            line=line,
            where=f"{where}language",
        )
    out = {("query" if k == name else k): v for k, v in data.items()}
    out.setdefault("language", name)
    return out


def needs_checking(extra: Mapping[str, Any]) -> bool:
    """Whether the keys an attempt's validation left over (beyond its fields) need the
    record check: anything but the record's own keys and an attempt's known extras."""
    return any(
        k not in RECORD_KEYS and k not in ATTEMPT_EXTRA and k not in NOTE_KEYS for k in extra
    )
