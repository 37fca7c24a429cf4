"""`queryeval NAME ...` is run by an app of only the command NAME (`cli._app.app_for`: typer
builds every command's parameters before it parses, issue 31); every command line must
behave as it does with the whole app."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from queryeval.cli._app import _command_name, app, app_for

NAMES = [str(_command_name(c)) for c in app.registered_commands] + [
    str(g.name) for g in app.registered_groups
]
LINES = [
    *([name, "--help"] for name in NAMES),
    *([name, "--no-such-option"] for name in ("run", "import", "compare")),
    ["run"],  # a missing argument
    ["run", "suite.yaml", "--limit", "many"],  # a value of the wrong type
    ["run", "suite.yaml", "extra"],
    ["export"],
    ["export", "mlflow", "--help"],
    ["export", "no-such-exporter"],
]


def test_every_command_is_found() -> None:
    assert len(NAMES) == 15 and "None" not in NAMES
    for name in NAMES:
        one = app_for([name, "--help"])
        assert one is not app
        assert len(one.registered_commands) + len(one.registered_groups) == 1
    assert app_for([]) is app and app_for(["--help"]) is app and app_for(["runs"]) is app


@pytest.mark.parametrize("args", LINES, ids=" ".join)
def test_a_command_line_behaves_as_with_the_whole_app(args: list[str]) -> None:
    runner = CliRunner()
    whole = runner.invoke(app, args, terminal_width=100)
    one = runner.invoke(app_for(args), args, terminal_width=100)
    assert (one.exit_code, one.output) == (whole.exit_code, whole.output)
    assert whole.exit_code in (0, 2) and whole.output
