"""The parsing half of the sandbox: which statements may run at all.

The other half is the engine itself (read-only connection, read-only user, rolled-back
transaction); both must agree before a query runs. Each check returns None (may run) or
the reason for refusing.
"""

from __future__ import annotations

import logging
import re
from typing import Any

# --- SQL: sqlglot ----------------------------------------------------------------------------

_SQL_WRITE_TOKENS = {
    "INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "DROP", "ALTER", "TRUNCATE", "COPY",
    "ATTACH", "DETACH", "REPLACE", "GRANT", "REVOKE", "VACUUM", "INSTALL", "LOAD", "SET",
    "PRAGMA", "CALL", "EXECUTE", "EXPORT", "IMPORT", "CHECKPOINT", "COMMIT", "BEGIN", "USE",
}  # fmt: skip


def sql_refusal(query: str, dialect: str | None) -> str | None:
    """Refuse anything but one read-only query (SELECT/UNION/... with no write inside)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    try:
        statements = [s for s in sqlglot.parse(query, read=dialect) if s is not None]
    except SqlglotError:
        # sqlglot cannot read every dialect's every corner; then look at the tokens, and
        # let the read-only engine (the other half of the sandbox) judge the rest.
        return _sql_token_refusal(query, dialect)
    if not statements:
        return "empty query"
    if len(statements) > 1:
        return f"{len(statements)} statements: only one read-only query may run at a time"
    root = statements[0]
    if not isinstance(root, exp.Query):
        return f"not a read-only query but a {root.key.upper()} statement"
    writes = (
        exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter,
        exp.Copy, exp.Command, exp.TruncateTable, exp.Attach, exp.Detach, exp.Into,
    )  # fmt: skip
    for node in root.walk():
        if isinstance(node, writes):
            return f"{node.key.upper()} inside the query: writes are refused"
    return None


def _sql_token_refusal(query: str, dialect: str | None) -> str | None:
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import SqlglotError

    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(query)
    except SqlglotError:
        return None  # not even tokenizable: the engine will report the syntax error
    words = {t.text.upper() for t in tokens if t.token_type.name not in {"STRING", "VAR"}}
    found = sorted(words & _SQL_WRITE_TOKENS)
    if found:
        return f"statement keyword(s) {', '.join(found)} found: writes are refused"
    if any(t.token_type.name == "SEMICOLON" for t in tokens[:-1]):
        return "several statements: only one read-only query may run at a time"
    return None


# --- KQL: control commands ---------------------------------------------------------------------

_KQL_READ_COMMANDS = re.compile(r"^\.show\b", re.IGNORECASE)


def kql_refusal(query: str) -> str | None:
    """Refuse every control command except `.show ...` (`.drop`, `.set`, `.append`, ...)."""
    from duckdb_kql.control import strip_leading_comments

    head = strip_leading_comments(query).lstrip()
    if head.startswith("."):
        command = " ".join(head.split()[:2])
        if not _KQL_READ_COMMANDS.match(head):
            return f"control command {command!r}: only queries and .show commands may run"
    return None


# --- Cypher: write clauses -------------------------------------------------------------------

# No maintained Cypher parser is on PyPI, so a small lexer finds clause keywords outside
# strings, comments and `quoted` names; the read-only user/transaction is the other half.
_CYPHER_TOKEN = re.compile(
    r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<quoted>`(?:[^`]|``)*`)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<other>\S)
    """,
    re.VERBOSE | re.DOTALL,
)
_CYPHER_WRITES = {"CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "FOREACH",
                  "LOAD", "ALTER", "GRANT", "REVOKE", "DENY"}  # fmt: skip
_CYPHER_PROCEDURE_WRITES = re.compile(
    r"\b(create|merge|delete|drop|set|remove|write|import|load|periodic|refactor|"
    r"trigger|schema\.assert|index|constraint)\b",
    re.IGNORECASE,
)


def cypher_tokens(query: str) -> list[tuple[str, str]]:
    """(kind, text) tokens of a Cypher query, comments dropped."""
    out: list[tuple[str, str]] = []
    for m in _CYPHER_TOKEN.finditer(query):
        kind = m.lastgroup or "other"
        if kind != "comment":
            out.append((kind, m.group()))
    return out


def cypher_refusal(query: str) -> str | None:
    """Refuse write clauses (CREATE, MERGE, SET, DELETE, REMOVE, ...), procedure calls that
    write, and several statements; a word after `.`, `:`, `$`, `AS` or before `:` is a name."""
    tokens = cypher_tokens(query)
    for i, (kind, text) in enumerate(tokens):
        if kind == "other" and text == ";" and any(k != "other" for k, _ in tokens[i + 1 :]):
            return "several statements: only one read-only query may run at a time"
        if kind != "word":
            continue
        before = tokens[i - 1][1] if i else ""
        after = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if before in {".", ":", "$"} or before.upper() == "AS" or after == ":":
            continue  # a property, label, parameter, alias or map key named like a keyword
        word = text.upper()
        if word in _CYPHER_WRITES:
            return f"{word} clause: writes are refused"
        if word == "CALL" and _writing_procedure(tokens, i + 1):
            return "a procedure that may write: writes are refused"
    return None


def _writing_procedure(tokens: list[tuple[str, str]], start: int) -> bool:
    """Whether the procedure name after CALL looks like one that writes (apoc.create...)."""
    name: list[str] = []
    for kind, text in tokens[start:]:
        if kind in {"word", "quoted"} or text == ".":
            name.append(text.strip("`"))
        else:
            break
    return bool(name) and bool(_CYPHER_PROCEDURE_WRITES.search("".join(name)))


def describe_refusal(reason: Any) -> str:
    """The message of a refused outcome."""
    return f"refused by the read-only sandbox: {reason}"
