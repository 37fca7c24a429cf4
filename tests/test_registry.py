"""The one registry (queryeval._registry) and its users: scorers, engines, reports, validity
checkers and languages each found by name, an unknown name naming the choices, a missing
library naming the extra that installs it, registered plugins and entry points."""

from __future__ import annotations

import importlib
import sys
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from queryeval._registry import MissingExtra, Registry, UnknownName, import_module_from


def test_an_unknown_name_is_a_key_error_naming_the_choices() -> None:
    reg: Registry[Any] = Registry("widget", builtins={"b": "json:dumps", "a": "json:loads"})
    reg.register("c", len)
    with pytest.raises(KeyError) as caught:
        reg.get("d")
    assert isinstance(caught.value, UnknownName)
    assert str(caught.value) == "unknown widget 'd'; expected one of b, a, c"
    assert caught.value.choices == ["b", "a", "c"]


def test_builtins_load_on_first_use_and_registrations_win(tmp_path: Path) -> None:
    (tmp_path / "qe_reg_lazy.py").write_text("LOADS = []\ndef thing():\n    return 1\n")
    reg: Registry[Any] = Registry("thing", builtins={"t": "qe_reg_lazy:thing"})
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(tmp_path))
        assert "qe_reg_lazy" not in sys.modules and "t" in reg  # listed without importing
        assert "qe_reg_lazy" not in sys.modules
        assert reg.get("t")() == 1 and "qe_reg_lazy" in sys.modules
    reg.register("t", len)
    assert reg.get("t") is len
    reg.unregister("t")
    assert reg.get("t")() == 1
    del sys.modules["qe_reg_lazy"]


def test_a_missing_library_names_the_extra_to_install(tmp_path: Path) -> None:
    (tmp_path / "qe_reg_needs.py").write_text("import qe_not_installed_anywhere\nX = 1\n")
    reg: Registry[Any] = Registry("report kind", builtins={"x": "qe_reg_needs:X [fancy]"})
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(tmp_path))
        with pytest.raises(MissingExtra, match=r"pip install 'queryeval\[fancy\]'") as caught:
            reg.get("x")
    assert "qe_not_installed_anywhere" in str(caught.value)
    assert isinstance(caught.value, ImportError)
    # without an extra declared, the ImportError is the library's own
    plain: Registry[Any] = Registry("report kind", builtins={"x": "qe_reg_needs:X"})
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(tmp_path))
        with pytest.raises(ImportError) as caught_plain:
            plain.get("x")
    assert not isinstance(caught_plain.value, MissingExtra)


def test_entry_points_are_found_and_adapted(monkeypatch: pytest.MonkeyPatch) -> None:
    published = [EntryPoint("dumper", "json:dumps", "queryeval.widgets")]

    def entry_points(*, group: str) -> list[EntryPoint]:
        return [ep for ep in published if ep.group == group]

    monkeypatch.setattr("importlib.metadata.entry_points", entry_points)
    reg: Registry[Any] = Registry(
        "widget", builtins={"a": "json:loads"}, group="queryeval.widgets",
        adapt=lambda name, obj: (name, obj),
    )  # fmt: skip
    assert reg.names() == ["a", "dumper"]
    import json

    assert reg.get("dumper") == ("dumper", json.dumps)


def test_a_plugin_module_that_registers_on_import_is_used(tmp_path: Path) -> None:
    """An entry point naming a module whose import registers the name: the registration."""
    reg: Registry[Any] = Registry("engine", builtins={})
    (tmp_path / "qe_reg_plugin.py").write_text(
        "from tests_registry_target import REG\nREG.register('mine', 'registered')\n"
        "def build():\n    return 'entry point object'\n"
    )
    sys.modules["tests_registry_target"] = type(sys)("tests_registry_target")
    sys.modules["tests_registry_target"].REG = reg  # type: ignore[attr-defined]
    reg._entry_points = {"mine": "qe_reg_plugin:build"}
    try:
        assert import_module_from("qe_reg_plugin", [tmp_path]) is not None
        assert str(tmp_path) not in sys.path
        assert reg.get("mine") == "registered"
    finally:
        sys.modules.pop("tests_registry_target", None)
        sys.modules.pop("qe_reg_plugin", None)


def test_two_suites_same_named_plugins_each_import_their_own_file(tmp_path: Path) -> None:
    """Two suites' folders each with a plugin `qe_reg_same` (a module, and a package with a
    submodule): each import gives that folder's file, not the module the other cached; a
    module imported some other way is left alone; sys.path is as it was."""
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, word in ((first, "one"), (second, "two")):
        (folder / "qe_reg_pkg").mkdir(parents=True)
        (folder / "qe_reg_same.py").write_text(f"WORD = {word!r}\n")
        (folder / "qe_reg_pkg" / "__init__.py").write_text("")
        (folder / "qe_reg_pkg" / "scorers.py").write_text(f"WORD = {word!r}\n")
    path_before = list(sys.path)
    try:
        assert import_module_from("qe_reg_same", [first]).WORD == "one"
        assert import_module_from("qe_reg_same", [second]).WORD == "two"
        assert import_module_from("qe_reg_same", [first]).WORD == "one"
        assert import_module_from("qe_reg_same", [first]) is sys.modules["qe_reg_same"]
        assert import_module_from("qe_reg_pkg.scorers", [first]).WORD == "one"
        assert import_module_from("qe_reg_pkg.scorers", [second]).WORD == "two"
        assert Path(sys.modules["qe_reg_pkg"].__file__ or "").parent.parent == second
        assert sys.path == path_before
        # imported another way (the folder on sys.path): queryeval leaves it as it is
        for name in ("qe_reg_same", "qe_reg_pkg", "qe_reg_pkg.scorers"):
            sys.modules.pop(name, None)
        with pytest.MonkeyPatch.context() as mp:
            mp.syspath_prepend(str(first))
            own = importlib.import_module("qe_reg_same")
        assert import_module_from("qe_reg_same", [second]) is own
        assert own.WORD == "one"
    finally:
        for name in ("qe_reg_same", "qe_reg_pkg", "qe_reg_pkg.scorers"):
            sys.modules.pop(name, None)


def test_the_five_kinds_use_it() -> None:
    from queryeval.engines import engine_language, validity_checker
    from queryeval.engines._registry import ENGINES
    from queryeval.languages import LANGUAGES, language_module
    from queryeval.reports._registry import REPORTS, report_writer
    from queryeval.scorers._registry import SCORERS, scorer_class

    for reg in (ENGINES, LANGUAGES, REPORTS, SCORERS):
        assert isinstance(reg, Registry)
    with pytest.raises(KeyError, match=r"unknown scorer 'blue'; expected one of .*bleu"):
        scorer_class("blue")
    with pytest.raises(KeyError, match=r"unknown report kind 'pdf'; expected one of .*html"):
        report_writer("pdf")
    with pytest.raises(KeyError, match="unknown engine 'oracle'; expected one of duckdb"):
        ENGINES.get("oracle")
    with pytest.raises(ValueError, match="unknown query language 'cobol': expected sql, kql"):
        language_module("cobol")
    assert engine_language("duckdb-kql") == "kql" and engine_language("neo4j") == "cypher"
    assert validity_checker("KQL") is not None and validity_checker("sql") is None


def test_a_registered_language_is_dispatched_to(monkeypatch: pytest.MonkeyPatch) -> None:
    from queryeval.languages import LANGUAGES, OrderInfo, read_only_refusal, top_level_order

    toy = type(sys)("toy_language")
    toy.NAMES = frozenset({"toyql", "tql"})  # type: ignore[attr-defined]
    toy.read_only_refusal = lambda q, d=None: "no" if "drop" in q else None  # type: ignore[attr-defined]
    toy.top_level_order = lambda q, d=None: OrderInfo(True, ())  # type: ignore[attr-defined]
    monkeypatch.setattr(LANGUAGES, "_registered", {"toyql": toy})
    assert read_only_refusal("drop it", "tql") == "no"
    assert read_only_refusal("keep it", "toyql") is None
    assert top_level_order("x", "TQL") == OrderInfo(True, ())
