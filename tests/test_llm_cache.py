"""The shared reply cache: bounded (least recently used go first), safe when several
processes write at once, and judge caches written before it are adopted."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import time
from pathlib import Path

from queryeval.llm import Reply, ReplyCache, ToolCall, request_key


def reply(text: str) -> Reply:
    return Reply(text, {"prompt_tokens": 3, "completion_tokens": 4}, 0.01, "stop")


def test_replies_round_trip_with_tool_calls_and_latency(tmp_path: Path) -> None:
    cache = ReplyCache(tmp_path / "c.sqlite")
    full = Reply("t", {"prompt_tokens": 1}, None, "tool_calls", (ToolCall("f", '{"a": 1}'),), 0.25)
    cache.put("k", "m", "s", full)
    cache.put("k", "m", "s", reply("other"))  # the first stored wins
    assert cache.get("k") == full and cache.get("nope") is None
    cache.close()
    assert ReplyCache(tmp_path / "c.sqlite").get("k") == full


def test_the_bound_evicts_the_least_recently_used(tmp_path: Path) -> None:
    one = len(json.dumps(reply("x" * 100).to_json()))  # the stored size of one reply
    cache = ReplyCache(tmp_path / "c.sqlite", max_bytes=one * 6 + one // 2)
    for i in range(4):
        cache.put(f"k{i}", "m", "s", reply(f"{i}" * 100))
        time.sleep(0.002)
    assert cache.get("k0") is not None  # k0 used: k1 is now the least recently used
    cache.flush()
    for i in range(4, 7):  # the 7th reply passes the bound: down to 90% (5 replies)
        cache.put(f"k{i}", "m", "s", reply(f"{i}" * 100))
        time.sleep(0.002)
    kept = {k for k in (f"k{i}" for i in range(7)) if k in cache}
    assert kept == {"k0", "k3", "k4", "k5", "k6"}
    assert cache.stats()["bytes"] == 5 * one and cache.evicted == 2


def _writer(path: str, start: int) -> None:
    cache = ReplyCache(Path(path))
    for i in range(start, start + 150):
        cache.put(f"key{i}", "m", "s", reply(f"reply {i}"))
        cache.get(f"key{i - 1}")
    cache.close()


def test_several_processes_share_one_cache(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    ReplyCache(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), n * 100)) for n in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    cache = ReplyCache(path)
    assert all(cache.get(f"key{i}") == reply(f"reply {i}") for i in range(350))
    rows = sqlite3.connect(path).execute("SELECT count(*) FROM replies").fetchone()[0]
    assert rows == 350


def test_a_judge_cache_of_the_earlier_layout_is_adopted(tmp_path: Path) -> None:
    path = tmp_path / "judgments.sqlite"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE judgments (key TEXT PRIMARY KEY, model TEXT, rubric TEXT, "
        "reply TEXT NOT NULL, created REAL)"
    )
    db.execute(
        "INSERT INTO judgments VALUES ('k', 'm', 'r', ?, 1.0)",
        ('{"text": "{\\"score\\": 1}", "usage": {}, "cost": null}',),
    )
    db.commit()
    db.close()
    cache = ReplyCache(path)
    assert cache.get("k") == Reply('{"score": 1}', {}, None, None)


def test_request_keys_follow_content() -> None:
    a = request_key(model="m", messages=[{"role": "user", "content": "x"}], sample=0)
    assert a == request_key(sample=0, messages=[{"role": "user", "content": "x"}], model="m")
    assert a != request_key(model="m", messages=[{"role": "user", "content": "x"}], sample=1)
    assert a != request_key(model="m2", messages=[{"role": "user", "content": "x"}], sample=0)
