"""A bounded sample of a server database's tables, copied into a local DuckDB or SQLite file
for verified verdicts (`queryeval.verify`): the server (reached by a SQLAlchemy URL) is only
read, through its own engine's sandbox (read-only transaction, time limit, row cap); the
copy declares what SQLAlchemy's inspector reports (column types mapped by their Python
type, NOT NULL, primary and unique keys, foreign keys between copied tables) and holds at
most `rows` rows of each table, a child row only where its parent row was copied too."""

from __future__ import annotations

import datetime as dt
import decimal
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queryeval.engines._base import Engine

_DUCKDB = {int: "BIGINT", float: "DOUBLE", decimal.Decimal: "DOUBLE", str: "VARCHAR",
           bool: "BOOLEAN", dt.date: "DATE", dt.datetime: "TIMESTAMP", dt.time: "TIME",
           bytes: "BLOB", dt.timedelta: "INTERVAL"}  # fmt: skip
_SQLITE = {int: "INTEGER", float: "REAL", decimal.Decimal: "REAL", str: "TEXT", bool: "INTEGER",
           bytes: "BLOB"}  # fmt: skip


@dataclass
class CopiedTable:
    """One table of the copy: its rows as copied, and whether they are all the server's."""

    name: str
    rows: int
    complete: bool
    unmapped: list[str] = field(default_factory=list)  # columns copied as text


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _type(column: dict[str, Any], target: str) -> tuple[str, bool]:
    """The copy's type of a column (and whether it is mapped, not text by default)."""
    try:
        python = column["type"].python_type
    except (NotImplementedError, AttributeError):
        python = None
    table = _DUCKDB if target == "duckdb" else _SQLITE
    for kind, name in table.items():
        if python is kind:
            return name, True
    if python is not None and target == "sqlite" and issubclass(python, dt.date | dt.time):
        return "TEXT", True  # SQLite keeps dates as ISO text, as its engine reads them
    return ("VARCHAR" if target == "duckdb" else "TEXT"), False


def related_tables(engine: Engine, wanted: set[str]) -> list[str]:
    """The server's tables named in `wanted` (case-insensitively) and the tables their
    foreign keys refer to, transitively; parents first (example: `copy_sample`)."""
    from sqlalchemy import inspect

    inspector = inspect(engine._engine)  # type: ignore[attr-defined]
    names = inspector.get_table_names()
    low = {n.lower(): n for n in names}
    todo = [low[w.lower()] for w in sorted(wanted) if w.lower() in low]
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for fk in inspector.get_foreign_keys(name):
            parent = fk.get("referred_table")
            if parent in names and parent != name:
                visit(parent)
        order.append(name)

    for name in todo:
        visit(name)
    return order


def copy_sample(engine: Engine, tables: list[str], path: Path, target: str,
                rows: int) -> dict[str, CopiedTable]:  # fmt: skip
    """Copy the declared schema of `tables` (parents first) and at most `rows` rows of each
    into a new `target` ("duckdb" or "sqlite") file at `path`.

    >>> import sqlite3, tempfile, pathlib
    >>> from queryeval.config import DatabaseConfig
    >>> from queryeval.engines import build_engine
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> con = sqlite3.connect(d / "s.db")
    >>> _ = con.executescript("CREATE TABLE p (id INTEGER PRIMARY KEY, n TEXT);"
    ...                       "CREATE TABLE c (id INTEGER PRIMARY KEY, p_id INTEGER "
    ...                       "REFERENCES p(id)); INSERT INTO p VALUES (1, 'a'), (2, 'b');"
    ...                       "INSERT INTO c VALUES (1, 1), (2, 2)")
    >>> con.commit(); con.close()
    >>> e = build_engine("s", DatabaseConfig(engine="sqlalchemy", url=f"sqlite:///{d}/s.db"),
    ...                  d, d)
    >>> tables = related_tables(e, {"c"})
    >>> tables
    ['p', 'c']
    >>> copied = copy_sample(e, tables, d / "copy.duckdb", "duckdb", rows=1)
    >>> [(c.name, c.rows, c.complete) for c in copied.values()]  # c's row 2 lost its parent
    [('p', 1, False), ('c', 1, False)]
    >>> e.close()
    """
    from sqlalchemy import MetaData, Table, inspect, select

    sa_engine = engine._engine  # type: ignore[attr-defined]
    inspector = inspect(sa_engine)
    copied: dict[str, CopiedTable] = {}
    statements: list[str] = []
    data: dict[str, list[tuple[Any, ...]]] = {}
    keys_of: dict[str, dict[tuple[str, ...], set[tuple[Any, ...]]]] = {}
    for name in tables:
        columns = inspector.get_columns(name)
        cols = [c["name"] for c in columns]
        parts = []
        unmapped = []
        for c in columns:
            kind, mapped = _type(c, target)
            if not mapped:
                unmapped.append(c["name"])
            parts.append(f"{_quote(c['name'])} {kind}" + ("" if c.get("nullable", True)
                                                           else " NOT NULL"))  # fmt: skip
        primary = (inspector.get_pk_constraint(name) or {}).get("constrained_columns") or []
        uniques = [u["column_names"] for u in inspector.get_unique_constraints(name)]
        keys = [tuple(primary)] if primary else []
        keys += [tuple(u) for u in uniques if u and tuple(u) not in keys]
        if primary:
            parts.append(f"PRIMARY KEY ({', '.join(map(_quote, primary))})")
        for u in uniques:
            if u and tuple(u) != tuple(primary):
                parts.append(f"UNIQUE ({', '.join(map(_quote, u))})")
        fks = []
        for fk in inspector.get_foreign_keys(name):
            parent = fk.get("referred_table")
            if parent in copied and fk.get("constrained_columns") and fk.get("referred_columns"):
                fks.append(
                    (tuple(fk["constrained_columns"]), parent, tuple(fk["referred_columns"]))
                )
                child_cols = ", ".join(map(_quote, fk["constrained_columns"]))
                parent_cols = ", ".join(map(_quote, fk["referred_columns"]))
                parts.append(
                    f"FOREIGN KEY ({child_cols}) REFERENCES {_quote(parent)} ({parent_cols})"
                )
        statements.append(f"CREATE TABLE {_quote(name)} ({', '.join(parts)})")
        table = Table(name, MetaData(), autoload_with=sa_engine)
        query = select(table).limit(rows + 1)
        text = str(query.compile(sa_engine, compile_kwargs={"literal_binds": True}))
        run = engine.execute(text)
        if not run.ok or run.result is None:
            raise RuntimeError(f"cannot read {name} from the server: {run.outcome.message}")
        found = [tuple(r) for r in run.result.rows]
        complete = len(found) <= rows and not run.outcome.truncated
        found = found[:rows]
        for columns_, parent, parent_columns in fks:  # a child row only with its parent
            present = keys_of.get(parent, {}).get(parent_columns, set())
            idx = [cols.index(c) for c in columns_]
            kept = [r for r in found if any(r[i] is None for i in idx)
                    or tuple(r[i] for i in idx) in present]  # fmt: skip
            complete = complete and len(kept) == len(found)
            found = kept
        if unmapped:
            as_text = {cols.index(c) for c in unmapped}
            found = [tuple(str(v) if i in as_text and v is not None else v for i, v in enumerate(r))
                     for r in found]  # fmt: skip
        data[name] = found
        referred = [k for k in _referred(inspector, name, tables) if set(k) <= set(cols)]
        keys_of[name] = {k: {tuple(r[cols.index(c)] for c in k) for r in found} for k in referred}
        copied[name] = CopiedTable(name, len(found), complete, unmapped)
    _write(path, target, statements, data)
    return copied


def _referred(inspector: Any, name: str, tables: list[str]) -> set[tuple[str, ...]]:
    """The columns of `name` that foreign keys of `tables` refer to."""
    out: set[tuple[str, ...]] = set()
    for other in tables:
        for fk in inspector.get_foreign_keys(other):
            if fk.get("referred_table") == name and fk.get("referred_columns"):
                out.add(tuple(fk["referred_columns"]))
    return out


def _write(path: Path, target: str, statements: list[str],
           data: dict[str, list[tuple[Any, ...]]]) -> None:  # fmt: skip
    """Create the copy's tables and insert its rows, in DuckDB or SQLite (its values as
    SQLite stores them)."""
    con: Any
    if target == "duckdb":
        import duckdb

        con, cell = duckdb.connect(str(path)), _as_given
    else:
        con, cell = sqlite3.connect(path), _sqlite_value
    try:
        for statement in statements:
            con.execute(statement)
        for name, rows in data.items():
            if rows:
                marks = ", ".join("?" * len(rows[0]))
                con.executemany(f"INSERT INTO {_quote(name)} VALUES ({marks})",
                                [[cell(v) for v in r] for r in rows])  # fmt: skip
        if target != "duckdb":
            con.commit()
    finally:
        con.close()


def _as_given(value: Any) -> Any:
    return value


def _sqlite_value(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.date | dt.time):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    return value
