"""The on-disk judgment cache: one SQLite file, content-addressed by the request key.

What is stored is the judge's raw reply and its usage, not the parsed score, so a better
parser later applies to cached replies too and an unparseable reply is never bought twice.
Failed calls (outages, refusals) are not stored: a re-run tries them again.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from queryeval.judges._client import Reply


def request_key(
    model: str, rubric_hash: str, inputs: dict[str, str], params: dict[str, Any]
) -> str:
    """sha256 of (judge model, rubric hash, rendered inputs, call parameters)."""
    body = json.dumps(
        {"model": model, "rubric": rubric_hash, "inputs": inputs, "params": params},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


class JudgmentCache:
    """Replies by key, in `<dir>/judgments.sqlite` (WAL mode: several runs may share it)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / "judgments.sqlite"
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS judgments (key TEXT PRIMARY KEY, model TEXT, "
            "rubric TEXT, reply TEXT NOT NULL, created REAL)"
        )
        self._db.commit()

    def get(self, key: str) -> Reply | None:
        """The stored reply under `key`, if any."""
        with self._lock:
            row = self._db.execute("SELECT reply FROM judgments WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        data = json.loads(row[0])
        return Reply(
            data["text"], data.get("usage", {}), data.get("cost"), data.get("finish_reason")
        )

    def __contains__(self, key: str) -> bool:
        with self._lock:
            row = self._db.execute("SELECT 1 FROM judgments WHERE key = ?", (key,)).fetchone()
        return row is not None

    def put(self, key: str, model: str, rubric: str, reply: Reply) -> None:
        """Store a reply (the first one stored under a key wins)."""
        body = json.dumps(
            {
                "text": reply.text,
                "usage": reply.usage,
                "cost": reply.cost,
                "finish_reason": reply.finish_reason,
            }
        )
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO judgments (key, model, rubric, reply, created) "
                "VALUES (?, ?, ?, ?, ?)",
                (key, model, rubric, body, time.time()),
            )
            self._db.commit()

    def close(self) -> None:
        """Close the database file."""
        with self._lock:
            self._db.close()
