"""Spider's dev databases as SQLite files, rebuilt from a public PostgreSQL re-dump with the
real rows (jsperson/querydawg, data/spider/migrations/DB_ID.sql: one file a database,
generated from Spider's own `.sqlite` files: CREATE TABLE in a schema named after the
database, the rows as INSERT ... VALUES, foreign keys as ALTER TABLE at the end).

The conversion: the schema qualifier and `CREATE SCHEMA` dropped, each `ALTER TABLE ... ADD
CONSTRAINT ... FOREIGN KEY` folded into its table's CREATE TABLE (SQLite cannot add one
later), the rest run by sqlite3 as written (PostgreSQL's BIGINT, TEXT, DOUBLE PRECISION,
NUMERIC and its '' string escapes are SQLite's too). What it cannot restore: the original
declared type spellings (the re-dump maps them: `int` -> BIGINT, `bool` -> TEXT ...), so a
column's affinity may differ from Spider's file; values are as the re-dump writes them. The
re-dump's migrations 005-007 (type fixes on the PostgreSQL copy) are not applied.

Coverage (HEAD of the mirror, 2026-11-29): 19 of the 20 dev databases; `wta_1.sql` is
listed but its blob is absent from the mirror (too large), so its 62 dev pairs are left out
(972 of 1,034 pairs covered).

    python bench/spider_dev_sqlite.py /work/.mirror/jsperson+querydawg/repo OUT_DIR
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

_FK = re.compile(
    r"ALTER TABLE\s+(\w+)\s+ADD CONSTRAINT\s+\w+\s+FOREIGN KEY\s*\(([^)]*)\)\s*"
    r"REFERENCES\s+(\w+)\s*\(([^)]*)\)\s*;",
    re.IGNORECASE,
)


def convert(text: str, db: str) -> str:
    """The re-dump of database `db` as a SQLite script."""
    text = re.sub(rf"CREATE SCHEMA IF NOT EXISTS {re.escape(db)}\s*;", "", text)
    text = re.sub(rf"\b{re.escape(db)}\.", "", text)
    fks: dict[str, list[str]] = {}
    for table, cols, parent, pcols in _FK.findall(text):
        fks.setdefault(table.lower(), []).append(
            f"FOREIGN KEY ({cols.strip()}) REFERENCES {parent} ({pcols.strip()})"
        )
    text = _FK.sub("", text)

    def add_fks(match: re.Match[str]) -> str:
        name, body = match.group(1), match.group(2)
        extra = fks.get(name.lower(), [])
        return (
            f"CREATE TABLE {name} ({body.rstrip()}"
            + "".join(f",\n    {fk}" for fk in extra)
            + "\n);"
        )

    return re.sub(r"CREATE TABLE (\w+) \((.*?)\n\);", add_fks, text, flags=re.DOTALL)


def main() -> None:
    mirror, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    listing = subprocess.run(
        ["git", "--git-dir", str(mirror), "ls-tree", "--name-only", "HEAD",
         "data/spider/migrations/"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    done, absent = [], []
    for path in listing:
        name = Path(path).stem
        if name[:3].isdigit():  # 004_..., 008_...: the re-dump's own migrations
            continue
        shown = subprocess.run(["git", "--git-dir", str(mirror), "show", f"HEAD:{path}"],
                               capture_output=True, text=True)  # fmt: skip
        if shown.returncode != 0:
            absent.append(name)
            continue
        target = out / f"{name}.sqlite"
        target.unlink(missing_ok=True)
        con = sqlite3.connect(target)
        try:
            con.executescript(convert(shown.stdout, name))
            con.commit()
            tables = [
                r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            rows = sum(con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables)
        finally:
            con.close()
        done.append(name)
        print(f"{name}: {len(tables)} tables, {rows} rows")
    print(f"{len(done)} databases written to {out}; absent from the mirror: {absent or 'none'}")


if __name__ == "__main__":
    main()
