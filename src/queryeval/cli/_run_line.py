"""`queryeval run SUITE [options]` read without typer (issue 31).

Typer is imported and builds a pydantic adapter for each of the command's parameters
before it parses a line: 0.08-0.14 s of CPU of every run (about a sixth of a small run's).
Most run lines are a suite and a few plain options, so `parse` reads exactly those: the
suite, each option spelled in full (`--out DIR`, `--out=DIR`, `-o DIR`, `--filter` again
and again, `--no-progress`...) and values that typer takes as they are. Any other line
(`--help`, an unknown or repeated option, a missing value, a value starting with `-`, a
count that is not plain digits, `--`, a second suite...) is None, and typer reads it, so
its help, errors and exit codes are typer's. tests/test_cli_run_line.py checks every
accepted line against typer's own parse of it.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

# option -> (parameter, kind); kind: path, text, count, many (repeatable text)
_VALUES = {
    "--out": ("out", "path"),
    "-o": ("out", "path"),
    "--baseline": ("baseline", "path"),
    "--junit": ("junit", "path"),
    "--review": ("review", "path"),
    "--filter": ("filter_", "many"),
    "--limit": ("limit", "count"),
    "--executor": ("executor", "text"),
    "--address": ("address", "text"),
    "--shards": ("shards", "count"),
}
# --name / --no-name -> parameter
_FLAGS = {
    "resume": "resume",
    "overwrite": "overwrite",
    "progress": "progress",
    "cache": "cache",
    "strict": "strict",
    "retry-errors": "retry_errors",
}
_COUNT = re.compile(r"0|[1-9][0-9]*")


def parse(args: list[str]) -> dict[str, Any] | None:
    """The parameters of `run_command` for the command line `args` (after `queryeval`),
    or None where typer should read it.

    >>> parse(["run", "suite.yaml", "-o", "runs/x", "--no-progress", "--filter", "a*"])
    {'suite': PosixPath('suite.yaml'), 'out': PosixPath('runs/x'), 'progress': False, 'filter_': ['a*']}
    >>> parse(["run", "suite.yaml", "--help"]) is None
    True
    """  # noqa: E501
    if args[:1] != ["run"]:
        return None
    params: dict[str, Any] = {}
    rest = args[1:]
    i = 0
    while i < len(rest):
        token = rest[i]
        i += 1
        if not token.startswith("-"):
            if "suite" in params or not _plain(token):
                return None
            params["suite"] = Path(token)
            continue
        name, eq, value = token.partition("=")
        if name in _VALUES:
            if not eq:
                if i == len(rest):
                    return None
                value = rest[i]
                i += 1
            if not _plain(value) or (eq and name == "-o"):
                return None
            param, kind = _VALUES[name]
            if kind == "many":
                params.setdefault(param, []).append(value)
                continue
            if param in params:
                return None
            if kind == "count":
                if not _COUNT.fullmatch(value):
                    return None
                params[param] = int(value)
            else:
                params[param] = Path(value) if kind == "path" else value
            continue
        flag = token[5:] if token.startswith("--no-") else token[2:]
        if eq or not token.startswith("--") or flag not in _FLAGS or _FLAGS[flag] in params:
            return None
        params[_FLAGS[flag]] = not token.startswith("--no-")
    return params if "suite" in params else None


def _plain(value: str) -> bool:
    """A value typer takes as it is: not empty, not an option, no NUL."""
    return bool(value) and not value.startswith("-") and "\0" not in value


def plain_streams() -> bool:
    """stdout and stderr encode UTF-8 (click re-wraps others), and no shell completion is
    asked for (typer answers `_QUERYEVAL_COMPLETE`-style variables)."""
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None) or ""
        if encoding.lower().replace("-", "").replace("_", "") != "utf8":
            return False
    return not any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ)


def run(params: dict[str, Any]) -> None:
    """Run `params` (from `parse`) and exit as typer would: the command's exit code, 2
    with `error: ...` for bad input, 130 on Ctrl-C, 1 with `Aborted!` at the end of input,
    1 when a stream is closed under it."""
    import contextlib
    import errno

    from queryeval.cli._run import echo, run_command
    from queryeval.errors import InputError

    try:
        code = run_command(**params)
    except InputError as exc:
        echo(f"error: {exc.render()}", err=True)
        code = 2
    except KeyboardInterrupt:
        code = 130
    except EOFError:
        echo("", err=True)
        echo("Aborted!", err=True)
        code = 1
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        devnull = os.open(os.devnull, os.O_WRONLY)  # nothing more reaches the closed pipe
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                os.dup2(devnull, stream.fileno())
        code = 1
    if code:
        sys.exit(code)
