"""Every gold tried on a database failing with an engine error is a configuration that
cannot be honoured: `run` stops with exit 2 naming the database, for a server database
(checked on the run's own engines, nothing started twice) as for a local file, and a
sharded run stops on a database it cannot read as a serial run does."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from queryeval.cli import app

SUITE = """name: precheck
cases: cases.yaml
databases:
  sales: {{engine: sqlalchemy, url: "sqlite:///{db}"}}
systems:
  - {{name: baseline, predictions: predictions.jsonl}}
scorers: [execution_match]
reports: [json]
"""
CASES = "".join(
    f"""- id: q{i}
  conversation:
    - content: How many customers?
      target: {{query: "SELECT count(*) FROM customers WHERE id > {i}"}}
"""
    for i in range(7)
)
PREDICTIONS = "".join(f'{{"case_id": "q{i}", "query": "SELECT {i}"}}\n' for i in range(7))


def _database(path: Path, *, customers: bool) -> None:
    db = sqlite3.connect(path)
    db.execute(f"CREATE TABLE {'customers' if customers else 'other'} (id INTEGER)")
    db.executemany(f"INSERT INTO {'customers' if customers else 'other'} VALUES (?)", [(1,), (2,)])
    db.commit()
    db.close()


def _suite(folder: Path, *, customers: bool) -> Path:
    folder.mkdir(parents=True)
    _database(folder / "sales.db", customers=customers)
    (folder / "suite.yaml").write_text(SUITE.format(db=folder / "sales.db"))
    (folder / "cases.yaml").write_text(CASES)
    (folder / "predictions.jsonl").write_text(PREDICTIONS)
    return folder / "suite.yaml"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stderr


def test_a_server_database_whose_golds_all_fail_stops_the_run(tmp_path: Path) -> None:
    path = _suite(tmp_path / "s", customers=False)
    code, err = invoke("run", str(path), "--out", str(tmp_path / "r"), "--no-progress")
    assert code == 2, err
    assert err.startswith(f"error: {path}:4: databases.sales: "), err
    assert "every gold query tried on database 'sales' fails with a schema error" in err
    assert "(5 tried; first: case q0: " in err and "customers" in err, err
    assert not (tmp_path / "r" / "results.jsonl").exists()


def test_a_server_database_whose_golds_run_is_scored(tmp_path: Path) -> None:
    """The control: the same suite on a database that has the table runs and scores."""
    path = _suite(tmp_path / "s", customers=True)
    code, err = invoke("run", str(path), "--out", str(tmp_path / "r"), "--no-progress")
    assert code == 0, err
    assert len((tmp_path / "r" / "results.jsonl").read_text().splitlines()) == 7


def test_a_resumed_run_stops_before_touching_its_finished_records(tmp_path: Path) -> None:
    """An interrupted run resumed on a database that lost its tables: exit 2, the records
    already stored left as they were (the gold cache is off: a server's content changes
    under the same URL)."""
    path = _suite(tmp_path / "s", customers=True)
    text = path.read_text().replace('"}\n', '", options: {gold_cache: false}}\n', 1)
    assert "gold_cache" in text
    path.write_text(text)
    out = tmp_path / "r"
    assert invoke("run", str(path), "--out", str(out), "--no-progress")[0] == 0
    results = out / "results.jsonl"
    kept = "".join(results.read_text().splitlines(keepends=True)[:4])
    results.write_text(kept)  # three cases still to score
    (tmp_path / "s" / "sales.db").unlink()
    _database(tmp_path / "s" / "sales.db", customers=False)
    code, err = invoke("run", str(path), "--out", str(out), "--resume", "--no-progress")
    assert code == 2, err
    assert "(3 tried; first: case q4: no such table: customers)" in err, err
    assert results.read_text() == kept


def test_a_sharded_run_stops_on_a_database_it_cannot_read(tmp_path: Path) -> None:
    """Sharded runs score with shardable scorers, which run no query: a database they name
    is still checked before anything runs, as a serial run's is."""
    import sys

    from queryeval.runner import load_suite
    from queryeval.runner._units import can_shard

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from _sdmx_data import write_suite

    path = write_suite(tmp_path / "s", 50)
    (tmp_path / "s" / "db.duckdb").write_bytes(bytes(range(256)) * 40)
    path.write_text(
        path.read_text() + "settings: {workers: 2, shard_min_cases: 10}\n"
        "databases:\n  stats: {engine: duckdb, path: db.duckdb}\n"
    )
    assert can_shard(load_suite(path))
    code, err = invoke("run", str(path), "--out", str(tmp_path / "r"), "--no-progress")
    assert code == 2, err
    assert "databases.stats.path: cannot read the database: " in err, err
    assert not (tmp_path / "r").exists()
