"""`make demo`: run every example suite on embedded engines and say where the reports are."""

from __future__ import annotations

import gc
import importlib.util
import sys
from pathlib import Path
from typing import Any

from queryeval.config import SuiteConfig
from queryeval.errors import InputError
from queryeval.runner import load_suite, run_suite

ROOT = Path(__file__).resolve().parent.parent


def _toy_model(suite: SuiteConfig) -> Any:
    """For a suite beside `toy_model.py` (examples/model): start the toy model on a free port
    of 127.0.0.1 and point the suite's model systems at it. None for other suites."""
    script = suite.base_dir / "toy_model.py"
    if not script.is_file() or not any(s.model is not None for s in suite.systems):
        return None
    spec = importlib.util.spec_from_file_location("toy_model", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = module.start(0)
    for system in suite.systems:
        if system.model is not None:
            system.model.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    return server


def _needs_missing_postgres(suite: SuiteConfig) -> bool:
    """Whether the suite needs a PostgreSQL server this machine cannot start (then a note
    says so and the suite is skipped)."""
    from queryeval.engines import postgres_missing

    uses = any(db.engine == "postgres" for db in suite.databases.values())
    why = postgres_missing() if uses else None
    if why is not None:
        print(f"note: {suite.name} skipped: {why}", flush=True)
    return why is not None


def main() -> int:
    """Run examples/*/suite*.yaml into runs/<suite name>; a failing suite does not stop the rest."""
    suites = sorted((ROOT / "examples").glob("*/suite*.yaml"))
    written: list[tuple[str, dict[str, Path]]] = []
    problems = 0
    for path in suites:
        print(f"\n=== {path.relative_to(ROOT)}", flush=True)
        try:
            suite = load_suite(path)
            if _needs_missing_postgres(suite):
                continue
            toy = _toy_model(suite)  # model systems run offline against a local toy model
            try:
                result = run_suite(
                    suite, ROOT / "runs" / suite.name, overwrite=True, progress=False
                )
            finally:
                if toy is not None:
                    toy.shutdown()
        except InputError as exc:
            print(f"error: {exc.render()}", file=sys.stderr)
            problems += 1
            continue
        files = {"results": result.out_dir / "results.jsonl", **result.reports}
        if any(system.params for system in suite.systems):  # a grid: show the leaderboard
            from queryeval.cli._grid import grid_command

            grid_command(result.out_dir)
            files["grid"] = result.out_dir / "grid.json"
        written.append((suite.name, files))
    print("\nReports written:")
    for name, files in written:
        print(f"  {name}:")
        for kind, file in files.items():
            print(f"    {kind:8} {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}")
    print("\nSee every run in your browser:\n  .venv/bin/queryeval view runs/")
    # let frozen engine objects go before exit, so DuckDB's bindings have nothing to report
    gc.unfreeze()
    gc.collect()
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
