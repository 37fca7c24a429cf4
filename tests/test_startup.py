"""Starting queryeval imports nothing heavy before it is needed (issue 31): `import
queryeval`, `queryeval --help` and reading a suite's SDMX codelists are checked in fresh
interpreters, by the modules they leave in `sys.modules`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sdmx"
HEAVY = ["duckdb", "numpy", "pandas", "polars", "pyarrow", "pydantic", "requests", "rich",
         "scipy", "sdmx", "sqlglot", "yaml"]  # fmt: skip


def loaded_after(code: str) -> list[str]:
    """The heavy modules a fresh interpreter holds after running `code`."""
    probe = (
        f"{code}\nimport json, sys\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)), file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(out.stderr.strip().splitlines()[-1])
    return loaded


def test_importing_the_package_loads_nothing_heavy() -> None:
    assert loaded_after("import queryeval, queryeval.errors") == []


def test_help_loads_nothing_heavy() -> None:
    code = (
        "import sys, queryeval.cli\nsys.argv = ['queryeval', '--help']\n"
        "try:\n    queryeval.cli.main()\nexcept SystemExit as exc:\n    assert not exc.code\n"
    )
    assert loaded_after(code) == []


def test_help_is_answered_without_typer_and_says_what_typer_says() -> None:
    """`queryeval --help` prints a kept copy of typer's text (no typer or click imported);
    the copy is what the app renders now (a command added or reworded fails here)."""
    from queryeval.cli._help import HELP, _rendered

    code = (
        "import sys, queryeval.cli\nsys.argv = ['queryeval', '--help']\nqueryeval.cli.main()\n"
        "import json\nprint(json.dumps([m for m in ('typer', 'click', 'queryeval.cli._app')"
        " if m in sys.modules]), file=sys.stderr)"
    )
    env = {**os.environ, "COLUMNS": "100"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert json.loads(out.stderr.strip().splitlines()[-1]) == []
    assert out.stdout == HELP == _rendered()


def test_a_plain_codelist_file_is_read_without_sdmx1() -> None:
    code = (
        "from pathlib import Path\nfrom queryeval.scorers._codelists import load_codelists\n"
        f"assert len(load_codelists(Path({str(EXAMPLE / 'codelists.xml')!r}))) == 3\n"
    )
    loaded = loaded_after(code)
    assert "sdmx" not in loaded and "pandas" not in loaded


def test_a_run_without_databases_imports_no_engine_code(tmp_path: Path) -> None:
    """`queryeval run` of the SDMX example (JSON report) imports no engine module and no
    engine, parser or report library: engines are imported by name when a database needs
    one (`queryeval.engines` is lazy). Nor does it import asyncio (no system is called), the
    result comparison (no query is compared, the suite sets no `comparison` policy) or the
    viewer's web app (the run's index is written), or read any distribution's entry points
    (the report kinds are built in)."""
    for name in ("cases", "predictions"):
        shutil.copytree(EXAMPLE / name, tmp_path / name)
    shutil.copy(EXAMPLE / "codelists.xml", tmp_path)
    text = (EXAMPLE / "suite.yaml").read_text(encoding="utf-8")
    lines = ["reports: [json]" if line.startswith("reports:") else line
             for line in text.splitlines()]  # fmt: skip
    (tmp_path / "suite.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = ["queryeval", "run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "run"),
            "--no-progress"]  # fmt: skip
    prefixes = ("queryeval.engines.", "duckdb", "sqlglot", "scipy", "pyarrow", "xlsxwriter",
                "jinja2", "sdmx", "pandas", "asyncio", "queryeval.metrics.results",
                "queryeval.viewer._app", "queryeval.viewer._serve")  # fmt: skip
    code = (
        "import importlib.metadata as metadata\nasked = []\nreal = metadata.entry_points\n"
        "def entry_points(**params):\n    asked.append(params.get('group'))\n"
        "    return real(**params)\n"
        "metadata.entry_points = entry_points\n"
        f"import sys, queryeval.cli\nsys.argv = {argv!r}\n"
        "try:\n    queryeval.cli.main()\nexcept SystemExit as exc:\n    assert not exc.code\n"
        "import json\nprint(json.dumps([sorted(m for m in sys.modules if m.startswith("
        f"{prefixes!r})), asked]), file=sys.stderr)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    loaded, asked = json.loads(out.stderr.strip().splitlines()[-1])
    # the engine base class and its guards (queryeval.runner._selftest imports Engine at its
    # top) and the databases' option check (runner._check asks it even with no database)
    light = ("_base", "_cost", "_memory", "_watchdog", "_twin", "_options")
    base = {f"queryeval.engines.{m}" for m in light}
    assert [m for m in loaded if m not in base] == []
    assert asked == []
    assert (tmp_path / "run" / "summary.json").is_file()


def test_collecting_a_runs_columns_loads_no_numpy() -> None:
    """A run's rows are collected (and its scorers' error shares counted) without numpy,
    which only the summary's tables and intervals need."""
    code = (
        "from queryeval.stats import RunColumns\ncolumns = RunColumns(['s'])\n"
        "for i, status in enumerate(['ok', 'error', 'unscored', 'error']):\n"
        "    columns.add({'system': 's', 'case_id': f'c{i}', 'passed': 1, 'latency_s': 0.5,\n"
        "                 'scores': {'m': {'status': status, 'value': 1.0}}})\n"
        "assert columns.system('s').scorers['m'].error_count() == (2, 4)\n"
    )
    assert loaded_after(code) == []


def test_the_command_reads_no_entry_points_for_pydantic() -> None:
    """`queryeval` turns pydantic's plugin search off (a read of every installed
    distribution's metadata before its first model) unless the environment says otherwise."""
    code = (
        "import importlib.metadata as metadata, json, sys\nasked = []\n"
        "real = metadata.entry_points\n"
        "def entry_points(**params):\n    asked.append(params.get('group'))\n"
        "    return real(**params)\n"
        "metadata.entry_points = entry_points\n"
        "import queryeval.cli\nsys.argv = ['queryeval', '--help']\n"
        "try:\n    queryeval.cli.main()\nexcept SystemExit:\n    pass\n"
        "from pydantic import BaseModel\nclass M(BaseModel):\n    x: int\n"
        "print(json.dumps(asked), file=sys.stderr)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    for setting, searched in ((None, False), ("", True)):
        if setting is not None:
            env["PYDANTIC_DISABLE_PLUGINS"] = setting
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        asked = json.loads(out.stderr.strip().splitlines()[-1])
        assert ("pydantic" in asked) is searched
