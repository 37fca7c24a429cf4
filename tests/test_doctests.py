"""The `>>>` examples in the docstrings of every queryeval module run (`make test` collects
them all; `queryeval.__main__` aside, which runs the command line), and every public
function of queryeval.metrics, queryeval.languages, queryeval.log and queryeval.resources
has one."""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import queryeval
import queryeval.languages
import queryeval.log
import queryeval.metrics
import queryeval.resources

PACKAGES = (queryeval.metrics, queryeval.languages, queryeval.log, queryeval.resources)
NOT_IMPORTED = {"queryeval.__main__"}  # importing it runs the command line


def _all_modules() -> list[str]:
    """Every module of queryeval."""
    prefix = queryeval.__name__ + "."
    found = [m.name for m in pkgutil.walk_packages(queryeval.__path__, prefix)]
    return sorted({queryeval.__name__, *found} - NOT_IMPORTED)


def _modules(packages: tuple[ModuleType, ...] = PACKAGES) -> list[str]:
    names = []
    for package in packages:
        names.append(package.__name__)
        if hasattr(package, "__path__"):  # a package, not a single module
            prefix = package.__name__ + "."
            names.extend(m.name for m in pkgutil.walk_packages(package.__path__, prefix))
    return sorted(names)


def _public_modules() -> list[ModuleType]:
    """The packages and modules a user imports (no underscore in their dotted name)."""
    return [
        importlib.import_module(name)
        for name in _modules()
        if not any(part.startswith("_") for part in name.split("."))
    ]


@pytest.mark.parametrize("name", _all_modules())
def test_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    flags = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
    failed, _ = doctest.testmod(module, optionflags=flags, report=True)
    assert failed == 0, f"{failed} example(s) failed in {name}"


def _public_functions() -> list[tuple[str, object]]:
    seen: dict[int, tuple[str, object]] = {}
    for module in _public_modules():
        for attr in getattr(module, "__all__", ()):
            value = getattr(module, attr)
            if inspect.isfunction(value):
                seen.setdefault(id(value), (f"{module.__name__}.{attr}", value))
    return sorted(seen.values(), key=lambda item: item[0])


@pytest.mark.parametrize(("name", "function"), _public_functions())
def test_every_public_function_has_an_example(name: str, function: object) -> None:
    assert ">>>" in (inspect.getdoc(function) or ""), f"{name} has no runnable example"


def test_the_top_level_exports_about_25_functions() -> None:
    functions = [
        n for n in queryeval.metrics.__all__ if inspect.isfunction(getattr(queryeval.metrics, n))
    ]
    assert 20 <= len(functions) <= 30, functions
