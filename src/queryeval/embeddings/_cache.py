"""A persistent embedding cache keyed by (model id, text hash), so no text is embedded twice
across runs. SQLite (stdlib) gives atomic, concurrent-safe writes with no extra dependency."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

# SQLite's default limit on host parameters is 999 in old builds; stay well under it.
_CHUNK = 900


def text_key(text: str) -> bytes:
    """16-byte BLAKE2b digest of the UTF-8 text: the cache key within one model. A text
    with an unpaired UTF-16 surrogate (no UTF-8 form) is hashed with it encoded as is, so
    its key is its own."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class MemoryCache:
    """An in-process cache (for notebooks and `cache: false`): same interface as SqliteCache."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, bytes], np.ndarray] = {}

    def get_many(self, model_id: str, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Vectors found for `keys` (missing keys are absent from the result)."""
        found = {}
        for k in keys:
            v = self._data.get((model_id, k))
            if v is not None:
                found[k] = v
        return found

    def put_many(self, model_id: str, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        """Store vectors under their keys."""
        for k, v in items:
            self._data[(model_id, k)] = v

    def __len__(self) -> int:
        return len(self._data)

    def close(self) -> None:
        """Nothing to release."""


class SqliteCache:
    """Vectors as float32 blobs in one SQLite file; safe to share between threads and runs."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        # A rowid table with a separate unique index: vectors are ~1.5 KB, too big to sit in
        # the index B-tree itself (a WITHOUT ROWID table reads 3x slower here).
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors ("
            " model TEXT NOT NULL, key BLOB NOT NULL, dim INTEGER NOT NULL, vec BLOB NOT NULL)"
        )
        self._db.execute("CREATE UNIQUE INDEX IF NOT EXISTS vectors_key ON vectors (model, key)")
        self._db.commit()

    def get_many(self, model_id: str, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Vectors found for `keys` (missing keys are absent from the result)."""
        unique = list(dict.fromkeys(keys))
        rows: list[tuple[bytes, bytes]] = []
        with self._lock:
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                # only '?' placeholders are interpolated into the SQL text
                rows.extend(
                    self._db.execute(
                        f"SELECT key, vec FROM vectors WHERE model = ? AND key IN ({marks})",
                        (model_id, *chunk),
                    )
                )
        if not rows:
            return {}
        # one buffer for all rows instead of one numpy array per row (a model has one size)
        dim = len(rows[0][1]) // 4
        if all(len(blob) == 4 * dim for _, blob in rows):
            matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32)
            return dict(zip((k for k, _ in rows), matrix.reshape(len(rows), dim), strict=True))
        return {k: np.frombuffer(blob, dtype=np.float32) for k, blob in rows}

    def put_many(self, model_id: str, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        """Store vectors under their keys (an existing key keeps its first vector)."""
        rows = [
            (model_id, k, int(v.shape[0]), np.ascontiguousarray(v, dtype=np.float32).tobytes())
            for k, v in items
        ]
        with self._lock:
            self._db.executemany(
                "INSERT OR IGNORE INTO vectors (model, key, dim, vec) VALUES (?, ?, ?, ?)",
                rows,
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            (n,) = self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()
        return int(n)

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()
