"""Each package's `__all__` is its public interface (issue 30): every name listed resolves,
and is documented: a function, class or module by its own docstring (not one inherited or
a dataclass's generated signature), a constant or type alias by a comment above its
assignment or at its end, a string below it or its name in the package's docstring. Names
left out of `__all__` stay importable for queryeval's own packages."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

import queryeval

# names owned by other work, listed here until they are documented (none now)
_NOT_YET: set[str] = set()


def _packages() -> list[str]:
    return ["queryeval"] + [
        f"queryeval.{info.name}"
        for info in pkgutil.iter_modules(queryeval.__path__)
        if not info.name.startswith("_")
    ]


def _own_docstring(value: object) -> str:
    if inspect.isclass(value):
        doc = vars(value).get("__doc__") or ""
        if dataclasses.is_dataclass(value) and doc.startswith(f"{value.__name__}("):
            return ""  # the signature dataclasses writes where the class has no docstring
        return str(doc).strip()
    return (getattr(value, "__doc__", None) or "").strip()


@cache
def _documented_assignments(folder: Path) -> frozenset[str]:
    """Names assigned at the top of a module under `folder` with a comment right above or
    at the end of the assignment, or a string right below."""
    found: set[str] = set()
    for path in folder.rglob("*.py") if folder.is_dir() else [folder]:
        source = path.read_text()
        lines = source.splitlines()
        body = ast.parse(source).body
        for i, node in enumerate(body):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            after = body[i + 1] if i + 1 < len(body) else None
            below = (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            )
            above = node.lineno >= 2 and lines[node.lineno - 2].lstrip().startswith("#")
            beside = "  # " in lines[(node.end_lineno or node.lineno) - 1]
            if below or above or beside:
                found.update(t.id for t in targets if isinstance(t, ast.Name))
    return frozenset(found)


def _is_documented(module: ModuleType, name: str, value: object) -> bool:
    if inspect.ismodule(value) or inspect.isclass(value) or inspect.isroutine(value):
        return bool(_own_docstring(value))
    file = Path(module.__file__ or "")
    folder = file.parent if file.name == "__init__.py" else file
    # a name the package loads lazily under another name (engines' `_LAZY`): that name
    lazy = getattr(module, "_LAZY", {}).get(name)
    names = {name, lazy[1]} if lazy and lazy[1] else {name}
    mentioned = f"`{name}`" in (module.__doc__ or "")  # or named in the package's docstring
    return mentioned or bool(names & _documented_assignments(folder))


@pytest.mark.parametrize("package", _packages())
def test_every_public_name_resolves_and_is_documented(package: str) -> None:
    module = importlib.import_module(package)
    names = getattr(module, "__all__", None)
    assert names is not None, f"{package} has no __all__"
    assert len(names) == len(set(names)), f"{package}.__all__ repeats a name"
    undocumented = []
    for name in names:
        value = getattr(module, name)  # AttributeError: listed but not there
        if name.startswith("__") or f"{package}.{name}" in _NOT_YET:
            continue
        if not _is_documented(module, name, value):
            undocumented.append(name)
    assert undocumented == [], f"{package}: no docstring or comment for {undocumented}"
