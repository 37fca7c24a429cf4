"""The on-disk reply cache: one SQLite file, content-addressed by the request key.

What is stored is the raw reply and its usage, not what was read out of it, so a better
parser later applies to cached replies too and an unreadable reply is never bought twice.
Failed calls are not stored: a re-run tries them again.

- **Safe under concurrent runs**: SQLite in WAL mode with a busy timeout; several runs (and
  processes) may share one file; the first reply stored under a key wins.
- **Bounded**: past `max_bytes` of stored replies, the least recently used are deleted until
  the file holds 90% of the bound. Uses are recorded in batches (one write per 256 hits),
  not one write per read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from queryeval.llm._client import Reply

DEFAULT_MAX_BYTES = 2 * 2**30
_USE_BATCH = 256
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, model TEXT, source TEXT, "
    "reply TEXT NOT NULL, size INTEGER NOT NULL, created REAL, used REAL)"
)


def cache_bound(settings: Any) -> int:
    """The bound of reply caches in bytes: the suite's `settings.cache_max_mb` (the typed
    settings, or a mapping), else 2 GiB.

    >>> cache_bound({"cache_max_mb": 1})
    1048576
    """
    mb = settings.get("cache_max_mb") if isinstance(settings, dict) else settings.cache_max_mb
    return int(float(mb) * 2**20) if mb else DEFAULT_MAX_BYTES


def request_key(**parts: Any) -> str:
    """sha256 of the parts (JSON with sorted keys): what shapes a reply, nothing else.

    >>> request_key(model="m", prompt="p") == request_key(prompt="p", model="m")
    True
    """
    body = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    # an unpaired surrogate (a JSON escape) has no UTF-8 form: hashed as it is
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


class ReplyCache:
    """Replies by key in the SQLite file `path` (created with its folder)."""

    def __init__(self, path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.max_bytes = max_bytes
        self.hits = 0
        self.stored = 0
        self.evicted = 0
        self._lock = threading.Lock()
        self._used: set[str] = set()
        self._db = sqlite3.connect(path, timeout=30, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)
        self._db.execute("CREATE INDEX IF NOT EXISTS replies_used ON replies (used)")
        self._adopt_legacy_judgments()
        self._db.commit()
        self._size = self._db.execute("SELECT COALESCE(SUM(size), 0) FROM replies").fetchone()[0]

    def _adopt_legacy_judgments(self) -> None:
        """Judge caches written before the cache was shared kept a `judgments` table; its
        replies are copied over once (the keys are unchanged)."""
        legacy = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'judgments'"
        ).fetchone()
        if legacy is None:
            return
        self._db.execute(
            "INSERT OR IGNORE INTO replies (key, model, source, reply, size, created, used) "
            "SELECT key, model, rubric, reply, length(reply), created, created FROM judgments"
        )
        self._db.execute("DROP TABLE judgments")

    def get(self, key: str) -> Reply | None:
        """The stored reply under `key`, if any."""
        with self._lock:
            row = self._db.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            self.hits += 1
            self._used.add(key)
            if len(self._used) >= _USE_BATCH:
                self._flush_uses()
        return Reply.from_json(json.loads(row[0]))

    def __contains__(self, key: str) -> bool:
        with self._lock:
            row = self._db.execute("SELECT 1 FROM replies WHERE key = ?", (key,)).fetchone()
        return row is not None

    def put(self, key: str, model: str, source: str, reply: Reply) -> None:
        """Store a reply (the first one stored under a key wins)."""
        body = json.dumps(reply.to_json(), ensure_ascii=False)
        try:
            size = len(body.encode("utf-8"))
        except UnicodeEncodeError:  # an unpaired surrogate: stored escaped, read back as is
            body = json.dumps(reply.to_json(), ensure_ascii=True)
            size = len(body)
        now = time.time()
        with self._lock:
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO replies (key, model, source, reply, size, created, used) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, model, source, body, size, now, now),
            )
            if cursor.rowcount:
                self.stored += 1
                self._size += size
            if self._size > self.max_bytes:
                self._evict()
            self._db.commit()

    def _flush_uses(self) -> None:
        """Record the batch of recent hits (under the lock)."""
        if not self._used:
            return
        now = time.time()
        self._db.executemany(
            "UPDATE replies SET used = ? WHERE key = ?", [(now, k) for k in self._used]
        )
        self._db.commit()
        self._used.clear()

    def _evict(self) -> None:
        """Delete the least recently used replies down to 90% of the bound (under the lock).
        Other processes may have written too: the total is read from the file first."""
        self._flush_uses()
        self._size = self._db.execute("SELECT COALESCE(SUM(size), 0) FROM replies").fetchone()[0]
        target = int(self.max_bytes * 0.9)
        if self._size <= self.max_bytes:
            return
        rows = self._db.execute("SELECT key, size FROM replies ORDER BY used, created").fetchall()
        doomed: list[tuple[str]] = []
        for key, size in rows:
            if self._size <= target:
                break
            doomed.append((key,))
            self._size -= size
        self._db.executemany("DELETE FROM replies WHERE key = ?", doomed)
        self.evicted += len(doomed)

    def flush(self) -> None:
        """Record the pending uses now (they are otherwise written in batches)."""
        with self._lock:
            self._flush_uses()

    def stats(self) -> dict[str, Any]:
        """Hits, replies stored and evicted by this process, and the file's size."""
        return {
            "path": str(self.path),
            "hits": self.hits,
            "stored": self.stored,
            "evicted": self.evicted,
            "bytes": self._size,
            "max_bytes": self.max_bytes,
        }

    def close(self) -> None:
        """Record pending uses and close the database file."""
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self._flush_uses()
            self._db.close()
