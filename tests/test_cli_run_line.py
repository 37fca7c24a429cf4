"""`queryeval run` lines read without typer (`cli._run_line`, issue 31): every line it
accepts gives `run_command` exactly the parameters typer gives it, and lines it leaves to
typer are read by typer (help, errors, repeated or unusual options)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from queryeval.cli import _run, _run_line
from queryeval.cli._app import app

ACCEPTED = [
    ["run", "suite.yaml"],
    ["run", "s.yaml", "--out", "runs/x", "--no-progress"],
    ["run", "s.yaml", "-o", "runs/x", "--overwrite", "--progress"],
    ["run", "--out=runs/x", "s.yaml", "--resume", "--no-cache", "--strict"],
    ["run", "s.yaml", "--filter", "a*", "--filter", "tag:b", "--limit", "3"],
    ["run", "s.yaml", "--limit", "0", "--retry-errors", "--no-strict", "--no-resume"],
    ["run", "s.yaml", "--baseline", "runs/old", "--junit", "j.xml", "--review", "r.yaml"],
    ["run", "s.yaml", "--executor", "ray", "--address", "ray://h:10001", "--shards", "4"],
    ["run", "s.yaml", "--executor=local", "--filter=x=y", "--cache", "--no-overwrite"],
    ["run", "dir with space/s.yaml", "--out", "é/ü", "--no-retry-errors"],
]
LEFT_TO_TYPER = [
    ["run"],
    ["run", "--help"],
    ["run", "s.yaml", "--help"],
    ["run", "a.yaml", "b.yaml"],
    ["run", "s.yaml", "--out"],
    ["run", "s.yaml", "--out", "--no-progress"],
    ["run", "s.yaml", "--out="],
    ["run", "s.yaml", "-o=x"],
    ["run", "s.yaml", "-ox"],
    ["run", "s.yaml", "--out", "a", "--out", "b"],
    ["run", "s.yaml", "--progress", "--no-progress"],
    ["run", "s.yaml", "--progress=yes"],
    ["run", "s.yaml", "--limit", "-1"],
    ["run", "s.yaml", "--limit", "03"],
    ["run", "s.yaml", "--limit", "+3"],
    ["run", "s.yaml", "--limit", "3x"],
    ["run", "s.yaml", "--shards", " 2"],
    ["run", "s.yaml", "--no-such-option"],
    ["run", "s.yaml", "-x"],
    ["run", "s.yaml", "--"],
    ["run", "-", "--no-progress"],
    ["run", ""],
    ["validate", "s.yaml"],
]


def typer_parameters(args: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The parameters typer's `run` command passes to `run_command` for `args`."""
    seen: list[dict[str, Any]] = []
    real = inspect.signature(_run.run_command)

    def record(*params: Any, **named: Any) -> int:
        bound = real.bind(*params, **named)
        bound.apply_defaults()
        seen.append({k: v for k, v in bound.arguments.items() if k != "echo"})
        return 0

    monkeypatch.setattr(_run, "run_command", record)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert len(seen) == 1
    return seen[0]


def with_defaults(params: dict[str, Any]) -> dict[str, Any]:
    bound = inspect.signature(_run.run_command).bind(**params)
    bound.apply_defaults()
    return {k: v for k, v in bound.arguments.items() if k != "echo"}


@pytest.mark.parametrize("args", ACCEPTED, ids=" ".join)
def test_an_accepted_line_gives_what_typer_gives(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    params = _run_line.parse(args)
    assert params is not None
    assert with_defaults(params) == typer_parameters(args, monkeypatch)


@pytest.mark.parametrize("args", LEFT_TO_TYPER, ids=" ".join)
def test_other_lines_are_left_to_typer(args: list[str]) -> None:
    assert _run_line.parse(args) is None


KINDS = {Path: "path", int: "count", str: "text", list[str]: "many"}


def test_the_reader_mirrors_every_parameter_of_typers_run_command() -> None:
    """Walks the click command typer builds for `run` (names, spellings, flags, defaults,
    types, no environment variable, prompt or callback): a parameter added to or changed
    in `_app.run` and not mirrored in `_run_line` (or `run_command`'s defaults) fails
    here, so the two readers cannot drift apart."""
    import typing

    import typer

    from queryeval.cli._app import app_for, run

    command = typer.main.get_command(app_for(["run"])).commands["run"]  # type: ignore[attr-defined]
    hints = typing.get_type_hints(run)
    ours = inspect.signature(_run.run_command).parameters
    seen_values, seen_flags = set(), set()
    for param in command.params:
        assert param.envvar is None and param.callback is None and param.nargs == 1
        assert not getattr(param, "prompt", None) and not param.is_eager
        bare = typing.get_args(hints[param.name])
        kind = hints[param.name] if not bare else next(t for t in bare if t is not type(None))
        if param.name == "suite":
            assert param.opts == ["suite"] and kind is Path and param.required
            continue
        assert ours[param.name].default == param.default, param.name
        if kind is bool:
            assert param.is_flag and not param.multiple
            flag = param.opts[0].removeprefix("--")
            assert param.opts == [f"--{flag}"] and param.secondary_opts == [f"--no-{flag}"]
            assert _run_line._FLAGS[flag] == param.name
            seen_flags.add(flag)
        else:
            assert not param.is_flag and param.multiple == (KINDS[kind] == "many")
            for spelling in param.opts:
                assert _run_line._VALUES[spelling] == (param.name, KINDS[kind]), spelling
                seen_values.add(spelling)
    assert seen_values == set(_run_line._VALUES) and seen_flags == set(_run_line._FLAGS)
    assert set(ours) - {"echo"} == {param.name for param in command.params}


def test_the_fast_path_exits_as_typer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad input: `error: ...` on stderr and exit 2, as `fail_input`; a gate failure: its
    code; Ctrl-C: 130 (typer's Exit(130))."""
    from queryeval.errors import InputError

    outcomes: list[BaseException | int] = [InputError("suite.yaml: expected x"), 1,
                                           KeyboardInterrupt()]  # fmt: skip

    def fake(**params: Any) -> int:
        outcome = outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    monkeypatch.setattr(_run, "run_command", fake)
    for code in (2, 1, 130):
        with pytest.raises(SystemExit) as exited:
            _run_line.run({"suite": tmp_path / "suite.yaml"})
        assert exited.value.code == code
    assert capsys.readouterr().err == "error: suite.yaml: expected x\n"


def test_echo_strips_style_codes_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    """As typer.echo (click): the same text, ANSI codes removed when not a terminal."""
    import typer

    line = "gate failed: \x1b[31mbad\x1b[0m: x (value 0.1)"
    _run.echo(line, err=True)
    ours = capsys.readouterr().err
    typer.echo(line, err=True)
    assert ours == capsys.readouterr().err == "gate failed: bad: x (value 0.1)\n"


def test_streams_not_in_utf8_are_left_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    """click re-wraps a stream that does not encode UTF-8; typer then prints the line."""
    import io

    assert _run_line.plain_streams() in (True, False)
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(io.BytesIO(), encoding="latin-1"))
    assert not _run_line.plain_streams()
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    monkeypatch.setattr("sys.stderr", io.TextIOWrapper(io.BytesIO(), encoding="UTF-8"))
    assert _run_line.plain_streams()
    monkeypatch.setenv("_QUERYEVAL_COMPLETE", "bash_complete")
    assert not _run_line.plain_streams()
