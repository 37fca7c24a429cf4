"""The private-modules contract of `make lint` (scripts/importlinter_contracts.py) finds a
private module imported from outside its package, and only that."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import grimp
import pytest

_PATH = Path(__file__).resolve().parent.parent / "scripts" / "importlinter_contracts.py"
_SPEC = importlib.util.spec_from_file_location("importlinter_contracts", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
contracts = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = contracts  # dataclasses look their module up there
_SPEC.loader.exec_module(contracts)
PrivateModulesContract = contracts.PrivateModulesContract
private_owner = contracts.private_owner


@pytest.mark.parametrize(
    ("module", "owner"),
    [
        ("queryeval.engines._base", "queryeval.engines"),
        ("queryeval.metrics.results._compare", "queryeval.metrics.results"),
        ("queryeval._gc", "queryeval"),
        ("queryeval.metrics.results", None),
        ("queryeval.__main__", None),
    ],
)
def test_private_owner(module: str, owner: str | None) -> None:
    assert private_owner(module) == owner


def _package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> grimp.ImportGraph:
    _package(
        tmp_path,
        {
            "toypkg/__init__.py": "",
            "toypkg/a/__init__.py": "from toypkg.a._impl import thing\n",
            "toypkg/a/_impl.py": "thing = 1\n",
            "toypkg/a/inner.py": "from toypkg.a._impl import thing\n",  # inside: fine
            "toypkg/b/__init__.py": "from toypkg.a import thing\n",  # the export: fine
            "toypkg/c.py": "from toypkg.a._impl import thing\n",  # outside: illegal
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return grimp.build_graph("toypkg", cache_dir=None)


def _check(graph: grimp.ImportGraph, ignore: list[str]) -> tuple[bool, list[str]]:
    contract = PrivateModulesContract("private", {}, {"ignore_imports": ignore})
    result = contract.check(graph, verbose=False)
    return result.kept, [f"{i.importer} -> {i.imported}" for i in result.metadata["illegal"]]


def test_a_private_module_imported_from_outside_breaks_the_contract(
    graph: grimp.ImportGraph,
) -> None:
    assert _check(graph, []) == (False, ["toypkg.c -> toypkg.a._impl"])


def test_an_ignored_import_keeps_it(graph: grimp.ImportGraph) -> None:
    assert _check(graph, ["toypkg.c -> toypkg.a._impl"]) == (True, [])
