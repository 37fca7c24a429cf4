"""Saved predictions scored by running them on local database files go to forked workers
(a forked `LocalExecutor`, decided by `runner._units.fork_workers`): the same records, in the same
order, and the same summary as the inline loop; the gold cache written by every worker."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from queryeval.runner import _executors as executors
from queryeval.runner import load_suite, run_suite
from queryeval.runner._units import FORK_MIN_ITEMS, fork_workers
from queryeval.scorers import build_scorers

N_CASES = FORK_MIN_ITEMS + 100

# gold and prediction shapes: right in other words, columns reordered, wrong, failing to
# run, a write, empty, garbage, floats
_GOLDS = [
    ("SELECT count(*) FROM orders WHERE customer_id = {c}",
     ["SELECT count(order_id) FROM orders WHERE customer_id = {c}",
      "SELECT count(*) FROM orders WHERE customer_id = {c} + 1",
      "SELEC count(*) FROM orders"]),
    ("SELECT status, count(*) AS n FROM orders WHERE customer_id = {c} GROUP BY status",
     ["SELECT count(*) AS n, status FROM orders WHERE customer_id = {c} GROUP BY status",
      "SELECT status, count(*) FROM orders GROUP BY status",
      "DELETE FROM orders"]),
    ("SELECT order_id, amount FROM orders WHERE customer_id = {c} ORDER BY order_id",
     ["SELECT order_id, amount FROM orders WHERE customer_id = {c} ORDER BY order_id DESC",
      "SELECT o.order_id, o.amount FROM orders AS o WHERE o.customer_id = {c} "
      "ORDER BY 1",
      ""]),
    ("SELECT round(sum(amount), 2) FROM orders WHERE customer_id = {c}",
     ["SELECT round(sum(amount) * 1.0, 2) FROM orders WHERE customer_id = {c}",
      "SELECT round(avg(amount), 2) FROM orders WHERE customer_id = {c}",
      "SELECT nope FROM orders"]),
]  # fmt: skip


def _database(path: Path, engine: str) -> None:
    rng = random.Random(7)
    rows = [(i, rng.randrange(40), rng.choice(["new", "paid", "sent"]),
             round(rng.uniform(1, 500), 2)) for i in range(3000)]  # fmt: skip
    ddl = "CREATE TABLE orders (order_id INTEGER, customer_id INTEGER, status TEXT, amount DOUBLE)"
    if engine == "duckdb":
        import duckdb

        con = duckdb.connect(str(path))
        con.execute(ddl)
        con.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", rows)
        con.close()
    else:
        with sqlite3.connect(path) as db:
            db.execute(ddl)
            db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", rows)


def _suite(folder: Path, engine: str, workers: int, n: int = N_CASES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / f"shop.{engine}"
    if not db.exists():
        _database(db, engine)
    rng = random.Random(11)
    cases, preds = [], []
    for i in range(n):
        gold, wrong = _GOLDS[i % len(_GOLDS)]
        c = i % 40
        query = gold.format(c=c)
        pred = rng.choice([query, *(w.format(c=c) for w in wrong)])
        cases.append(
            {
                "id": f"q{i}",
                "conversation": [
                    {"role": "user", "content": "?", "target": {"query": query, "database": "shop"}}
                ],
            }
        )
        preds.append({"case_id": f"q{i}", "query": pred})
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds))
    suite = folder / f"suite-{workers}.yaml"
    suite.write_text(
        "name: forked\ncases: cases.jsonl\n"
        f"databases:\n  shop: {{engine: {engine}, path: {db.name}}}\n"
        "systems:\n  - {name: sys, predictions: predictions.jsonl}\n"
        "scorers: [executes, execution_match, results_f1, exact_match]\n"
        f"reports: [json]\nsettings: {{workers: {workers}, cache_dir: cache-{workers}}}\n"
    )
    return suite


def _records(run: Path) -> list[dict[str, Any]]:
    def timeless(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: timeless(v) for k, v in x.items()
                    if k not in ("elapsed_s", "latency_s")}  # fmt: skip
        return [timeless(v) for v in x] if isinstance(x, list) else x

    lines = (run / "results.jsonl").read_text().splitlines()
    return [timeless(json.loads(line)) for line in lines]


@pytest.fixture
def forks_seen(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of workers of every forked LocalExecutor run of the test."""
    seen: list[int] = []
    run = executors.LocalExecutor.run

    def spy(self: executors.LocalExecutor, *args: Any) -> None:
        if self.workers > 1:
            seen.append(self.workers)
        run(self, *args)

    monkeypatch.setattr(executors.LocalExecutor, "run", spy)
    return seen


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_a_forked_run_writes_what_the_inline_loop_writes(
    tmp_path: Path, engine: str, forks_seen: list[int]
) -> None:
    inline = run_suite(load_suite(_suite(tmp_path, engine, 1)), tmp_path / "inline",
                       progress=False)  # fmt: skip
    assert forks_seen == []
    forked = run_suite(load_suite(_suite(tmp_path, engine, 2)), tmp_path / "forked",
                       progress=False)  # fmt: skip
    assert forks_seen == [2]
    assert _records(tmp_path / "forked") == _records(tmp_path / "inline")  # order included
    summary = (tmp_path / "forked" / "summary.json").read_bytes()
    assert summary == (tmp_path / "inline" / "summary.json").read_bytes()
    records = _records(tmp_path / "inline")
    failures = {r["scores"]["executes"]["details"].get("failure") for r in records}
    assert {None, "refused", "empty", "syntax", "schema"} <= failures  # all reached the workers
    assert inline.summary is not None and forked.summary is not None

    # every worker wrote its golds to the one cache: all of them, once
    store = tmp_path / "cache-2" / "gold-v2.sqlite"
    with sqlite3.connect(store) as db:
        stored = {q for (q,) in db.execute("SELECT query FROM gold")}
    golds = {json.loads(line)["conversation"][0]["target"]["query"]
             for line in (tmp_path / "cases.jsonl").read_text().splitlines()}  # fmt: skip
    assert stored == golds

    # a second (warm) forked run reads them back: the same summary
    run_suite(load_suite(_suite(tmp_path, engine, 2)), tmp_path / "warm", progress=False)
    assert forks_seen == [2, 2]
    assert (tmp_path / "warm" / "summary.json").read_bytes() == summary


def test_a_forked_run_resumed_scores_only_what_is_missing(
    tmp_path: Path, forks_seen: list[int]
) -> None:
    suite = load_suite(_suite(tmp_path, "duckdb", 2, n=FORK_MIN_ITEMS * 2))
    ref = tmp_path / "ref"
    run_suite(suite, ref, progress=False)
    lines = (ref / "results.jsonl").read_text().splitlines(keepends=True)
    cut = tmp_path / "cut"
    cut.mkdir()
    for name in ("run.json",):
        (cut / name).write_bytes((ref / name).read_bytes())
    (cut / "results.jsonl").write_text("".join(lines[: FORK_MIN_ITEMS // 2]))
    run_suite(suite, cut, resume=True, progress=False)
    assert forks_seen == [2, 2]  # the rest, 1.5 x FORK_MIN_ITEMS items, forked again
    assert (cut / "summary.json").read_bytes() == (ref / "summary.json").read_bytes()
    keys = [(r["system"], r["case_id"]) for r in _records(cut)]
    assert len(keys) == len(set(keys)) == FORK_MIN_ITEMS * 2


def test_which_runs_fork(tmp_path: Path) -> None:
    suite = load_suite(_suite(tmp_path, "duckdb", 2))
    scorers = list(build_scorers(suite).values())
    assert fork_workers(suite, scorers, N_CASES) == 2
    # by default, too few items do not pay for the fork; `workers: 2` asked for is honoured
    default = suite.model_copy(
        update={"settings": suite.settings.model_copy(update={"workers": None})}
    )
    assert fork_workers(default, scorers, FORK_MIN_ITEMS - 1) == 0
    assert fork_workers(suite, scorers, 10) == 2
    one = suite.model_copy(update={"settings": suite.settings.model_copy(update={"workers": 1})})
    assert fork_workers(one, scorers, N_CASES) == 0
    # a live system's calls stay in the driver (its concurrency and its cache are one)
    called = suite.systems[0].model_copy(update={"predictions": None, "callable": "m:f"})
    live = suite.model_copy(update={"systems": [called]})
    assert fork_workers(live, scorers, N_CASES) == 0
    # text metrics run the prediction too (a query that fails to run scores 0)
    text = [s for s in scorers if s.name == "exact_match"]
    assert fork_workers(suite, text, N_CASES) == 2
    # scorers that read no query run none: nothing worth a worker
    no_query = type("NoQuery", (type(text[0]),), {"reads": "indicator_selection"})
    assert fork_workers(suite, [no_query(text[0].options)], N_CASES) == 0
    # a database behind a URL or a server: each worker would open its own connections
    remote = suite.databases["shop"].model_copy(update={"url": "postgresql://h/db"})
    served = suite.model_copy(update={"databases": {"shop": remote}})
    assert fork_workers(served, scorers, N_CASES) == 0
    # a scorer not marked as pure per case (judges, embeddings, third-party scorers)
    unmarked = type("Unmarked", (type(scorers[0]),), {"forks": False})
    assert fork_workers(suite, [*scorers, unmarked(scorers[0].options)], N_CASES) == 0
    assert fork_workers(suite.model_copy(update={"databases": {}}), scorers, N_CASES) == 0
    # no more workers than the memory holds if each ran a query at its bound
    hungry = suite.databases["shop"].model_copy(update={"options": {"memory_limit": "64TiB"}})
    huge = suite.model_copy(update={"databases": {"shop": hungry}})
    assert fork_workers(huge, scorers, N_CASES) == 0


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc")
def test_a_worker_killed_stops_the_run_and_resume_finishes_it(tmp_path: Path) -> None:
    """A worker killed under the run (the system's OOM killer, a crash inside an engine):
    exit 2 saying to resume, the records written so far kept; `--resume` then gives the
    summary of an uninterrupted run."""
    suite = _suite(tmp_path, "duckdb", 2, n=FORK_MIN_ITEMS * 8)
    run = [sys.executable, "-m", "queryeval", "run", str(suite), "--no-progress"]
    ref = subprocess.run([*run, "--out", str(tmp_path / "ref")], cwd=tmp_path,
                         capture_output=True, text=True)  # fmt: skip
    assert ref.returncode == 0, ref.stderr
    out = tmp_path / "killed"
    proc = subprocess.Popen([*run, "--out", str(out)], cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 60
    results = out / "results.jsonl"
    while time.monotonic() < deadline and proc.poll() is None:
        workers = _children(proc.pid)
        if len(workers) >= 2 and results.exists() and results.stat().st_size:
            os.kill(workers[-1], signal.SIGKILL)
            break
        time.sleep(0.005)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2, stderr
    assert "a worker process ended abruptly" in stderr and "--resume" in stderr
    kept = results.read_text().count("\n")
    assert 0 < kept < FORK_MIN_ITEMS * 8
    resumed = subprocess.run([*run, "--out", str(out), "--resume"], cwd=tmp_path,
                             capture_output=True, text=True)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert (out / "summary.json").read_bytes() == (tmp_path / "ref" / "summary.json").read_bytes()
