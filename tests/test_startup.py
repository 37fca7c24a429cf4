"""Starting queryeval imports nothing heavy before it is needed (issue 31): `import
queryeval`, `queryeval --help` and reading a suite's SDMX codelists are checked in fresh
interpreters, by the modules they leave in `sys.modules`."""

from __future__ import annotations

import json
import os
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
