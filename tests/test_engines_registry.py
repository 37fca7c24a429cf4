"""Engines register like scorers and reports: a new kind needs no edit of a central table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from queryeval.config import DatabaseConfig
from queryeval.engines import (
    ENGINES,
    EngineSpec,
    build_engine,
    database_problem,
    engine_kinds,
    register_engine,
)
from queryeval.errors import InputError


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> list[EngineSpec]:
    """A registered engine kind `toy` (its own option `flavour`, a URL), undone afterwards."""
    from queryeval.engines import _registry

    monkeypatch.setattr(_registry, "_REGISTERED", dict(_registry._REGISTERED))
    built: list[EngineSpec] = []

    @register_engine("toy", options={"flavour"}, places=("url",))
    def build_toy(spec: EngineSpec) -> Any:
        built.append(spec)
        return spec

    return built


def test_a_registered_engine_is_listed_checked_and_built(
    toy: list[EngineSpec], tmp_path: Path
) -> None:
    assert engine_kinds()[: len(ENGINES)] == list(ENGINES)
    assert "toy" in engine_kinds()
    good = DatabaseConfig(engine="toy", url="toy://here", options={"flavour": "sweet"})
    assert database_problem(good, tmp_path) is None
    typo = DatabaseConfig(engine="toy", url="toy://here", options={"flavor": "sweet"})
    loc, message = database_problem(typo, tmp_path) or ((), "")
    assert loc == ("options", "flavor") and "flavour" in message
    wrong_place = DatabaseConfig(engine="toy", path="db.file")
    assert database_problem(wrong_place, tmp_path) == (
        ("path",),
        "engine 'toy' takes url, not path",
    )
    engine = build_engine("mine", good, tmp_path, tmp_path / "cache")
    assert engine is toy[0] and toy[0].name == "mine" and toy[0].options == {"flavour": "sweet"}


def test_an_unknown_engine_is_named_with_the_known_ones(tmp_path: Path) -> None:
    bad = DatabaseConfig(engine="oracle", url="x")
    loc, message = database_problem(bad, tmp_path) or ((), "")
    assert loc == ("engine",) and "unknown engine 'oracle'" in message and "duckdb" in message
    with pytest.raises(InputError, match="unknown engine 'oracle'"):
        build_engine("db", bad, tmp_path, tmp_path)
