"""Errors that reach the user: bad input (exit 2) and failed quality gates (exit 1)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["GateFailure", "InputError"]


class InputError(Exception):
    """Bad input: names the file, the place in it and what was expected. Exit code 2."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        where: str | None = None,
    ) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.where = where
        super().__init__(self.render())

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled whole (a worker process's error reaches the driver with its place)."""
        return _input_error, (self.message, self.path, self.line, self.where)

    def render(self) -> str:
        """One line: `file:line: where: message`, leaving out what is unknown."""
        place = self.path or ""
        if self.line is not None:
            place = f"{place}:{self.line}" if place else f"line {self.line}"
        parts = [p for p in (place, self.where) if p]
        prefix = ": ".join(parts)
        return f"{prefix}: {self.message}" if prefix else self.message


def _input_error(message: str, path: str | None, line: int | None, where: str | None) -> InputError:
    return InputError(message, path=path, line=line, where=where)


class GateFailure(Exception):
    """One or more quality gates failed. Exit code 1."""

    exit_code = 1

    def __init__(self, failures: list[str]) -> None:
        self.failures = failures
        super().__init__("; ".join(failures))
