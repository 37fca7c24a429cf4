"""Reading a system's output out of a model's reply (or a service's): a tool call, a JSON
object, a fenced code block, a configured pattern, or the plain text.

What cannot be read is the system's failure, never a guess: prose without a query gives no
query (and fails the case), a fence in another language is not taken for the task's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from queryeval.config import ReplySpec

_FENCE = re.compile(r"```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)
# fence tags that mean each task's language
_TAGS = {
    "sql": {"sql", "sqlite", "duckdb", "postgresql", "postgres", "mysql", "tsql", "plsql"},
    "kql": {"kql", "kusto", "csl"},
    "cypher": {"cypher", "cql", "neo4j", "opencypher"},
    "weaviate": {"json", "python", "py"},
    "sdmx": {"json"},
    "answer": set(),
}
# how a bare query starts, for replies that give the query without a fence
_BARE_START = {
    "sql": re.compile(r"^\s*(select|with|values|\()\b", re.IGNORECASE),
    "cypher": re.compile(r"^\s*(match|optional\s+match|call|with|unwind|return)\b", re.IGNORECASE),
    "kql": re.compile(r"^\s*(let\s|print\b|union\b|datatable\b|range\b|[A-Za-z_][\w.]*\s*(\||$))"),
}


@dataclass(frozen=True)
class ReadOutput:
    """What was read (None: nothing usable), how, and why not."""

    value: Any
    how: str
    problem: str | None = None


def _nothing(why: str) -> ReadOutput:
    return ReadOutput(None, "none", why)


def _usable(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    return not (isinstance(value, list | dict) and not value)


def _json_value(text: str) -> Any:
    """The JSON value of `text` (a ```json fence stripped), else the first JSON object in it."""
    stripped = text.strip()
    fence = _FENCE.fullmatch(stripped)
    if fence and fence.group(1).lower() in ("json", ""):
        stripped = fence.group(2).strip()
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict | list):
            return value
    return None


def _from_object(obj: Any, task: str, keys: Sequence[str]) -> Any:
    """The output held by a JSON value or tool-call arguments."""
    if task == "weaviate":
        return obj if isinstance(obj, dict | list) else None
    if task == "sdmx":
        if isinstance(obj, dict):
            return obj.get("indicator_selection")
        return obj if isinstance(obj, list) else None
    if isinstance(obj, str):
        return obj
    if isinstance(obj, dict):
        for key in keys:
            if isinstance(obj.get(key), str):
                return obj[key]
        strings = [v for v in obj.values() if isinstance(v, str)]
        if len(obj) == 1 and strings:
            return strings[0]
    return None


def _from_tool_calls(calls: Sequence[Any], task: str, keys: Sequence[str]) -> Any:
    if not calls:
        return None
    if task == "weaviate":  # every call: a question may need two collections
        return {
            "tool_calls": [{"function": {"name": c.name, "arguments": c.arguments}} for c in calls]
        }
    try:
        arguments = json.loads(calls[0].arguments or "{}")
    except ValueError:
        return None
    return _from_object(arguments, task, keys)


def _from_fences(text: str, task: str) -> Any:
    fences = [(m.group(1).lower(), m.group(2).strip()) for m in _FENCE.finditer(text)]
    if not fences:
        return None
    tagged = [body for tag, body in fences if tag in _TAGS.get(task, set())]
    untagged = [body for tag, body in fences if not tag]
    chosen = (tagged or untagged or [None])[-1]
    if chosen is None:
        return None
    if task in ("weaviate", "sdmx"):
        if task == "weaviate" and not chosen.lstrip().startswith(("{", "[")):
            return chosen  # weaviate-client Python code, read by the scorer
        return _from_object(_json_value(chosen), task, ())
    return chosen


def _from_pattern(text: str, pattern: str) -> Any:
    match = re.search(pattern, text)
    if match is None:
        return None
    if "query" in match.re.groupindex:
        return match.group("query")
    return match.group(1) if match.re.groups else match.group(0)


def read_output(
    text: str, tool_calls: Sequence[Any], task: str, spec: ReplySpec | None = None
) -> ReadOutput:
    """The output of `task` in a reply (see the module's docstring and `ReplySpec`).

    >>> read_output("Here it is:\\n```sql\\nSELECT 1\\n```", [], "sql").value
    'SELECT 1'
    >>> read_output("I cannot answer that.", [], "sql").problem
    'no query in the reply (expected a ```sql fenced block, a tool call or JSON)'
    """
    spec = spec or ReplySpec()
    mode, keys = spec.read, spec.keys
    if mode == "pattern":
        assert spec.pattern is not None
        value = _from_pattern(text, spec.pattern)
        return (
            ReadOutput(value, "pattern")
            if _usable(value)
            else _nothing(f"the reply does not match the pattern {spec.pattern!r}")
        )
    if mode == "text":
        value = text.strip()
        return ReadOutput(value, "text") if value else _nothing("the reply is empty")
    order = ["tool_call", "json", "fenced"] if mode == "auto" else [mode]
    for how in order:
        if how == "tool_call":
            value = _from_tool_calls(tool_calls, task, keys)
        elif how == "json":
            if mode == "auto" and task in ("sql", "kql", "cypher", "answer"):
                # JSON only when the reply is a JSON object as a whole (a query may hold {})
                value = _json_whole(text, task, keys)
            else:
                value = _from_object(_json_value(text), task, keys)
        else:
            value = _from_fences(text, task)
        if _usable(value):
            return ReadOutput(value, how)
    if mode == "auto":
        stripped = text.strip()
        if task == "answer" and stripped:
            return ReadOutput(stripped, "text")
        bare = _BARE_START.get(task)
        if bare is not None and "```" not in stripped and bare.match(stripped):
            return ReadOutput(stripped, "text")
    return _nothing(_expected(task, mode, text))


def _json_whole(text: str, task: str, keys: Sequence[str]) -> Any:
    stripped = text.strip()
    fence = _FENCE.fullmatch(stripped)
    if fence and fence.group(1).lower() == "json":
        stripped = fence.group(2).strip()
    if not stripped.startswith("{"):
        return None
    try:
        return _from_object(json.loads(stripped), task, keys)
    except ValueError:
        return None


def _expected(task: str, mode: str, text: str) -> str:
    what = {"weaviate": "Weaviate query", "sdmx": "indicator selection", "answer": "answer"}
    thing = what.get(task, "query")
    if not text.strip():
        return f"no {thing}: the reply is empty"
    if mode == "auto":
        lang = {"weaviate": "json", "sdmx": "json"}.get(task, task)
        return f"no {thing} in the reply (expected a ```{lang} fenced block, a tool call or JSON)"
    return f"no {thing} in the reply (read: {mode})"
