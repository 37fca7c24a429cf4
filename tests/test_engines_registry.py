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

    monkeypatch.setattr(_registry.ENGINES, "_registered", dict(_registry.ENGINES._registered))
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


def test_a_registered_engine_types_its_own_options_with_a_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A kind registered with a pydantic model has its options checked by it before anything
    runs (a wrong value named at its place), and gets them as given."""
    from pydantic import BaseModel, ConfigDict, Field

    from queryeval.engines import _registry

    monkeypatch.setattr(_registry.ENGINES, "_registered", dict(_registry.ENGINES._registered))

    class ToyOptions(BaseModel):
        model_config = ConfigDict(extra="forbid")
        pool: int = Field(default=4, ge=1)
        mode: str = "fast"

    @register_engine("typed_toy", options=ToyOptions)
    def build_toy(spec: EngineSpec) -> Any:
        return spec

    good = DatabaseConfig(engine="typed_toy", url="toy://", options={"pool": 2, "timeout_s": 3})
    assert database_problem(good, tmp_path) is None
    bad = DatabaseConfig(engine="typed_toy", url="toy://", options={"pool": 0})
    loc, message = database_problem(bad, tmp_path) or ((), "")
    assert loc == ("options", "pool") and "greater than or equal to 1" in message
    wrong_type = DatabaseConfig(engine="typed_toy", url="toy://", options={"mode": ["x"]})
    assert (database_problem(wrong_type, tmp_path) or ((),))[0] == ("options", "mode")
    common = DatabaseConfig(engine="typed_toy", url="toy://", options={"timeout_s": -1})
    assert (database_problem(common, tmp_path) or ((),))[0] == ("options", "timeout_s")
    typo = DatabaseConfig(engine="typed_toy", url="toy://", options={"pools": 2})
    loc, message = database_problem(typo, tmp_path) or ((), "")
    assert loc == ("options", "pools") and "mode" in message and "pool" in message
