"""Shared fixtures: paths to the repository and its examples."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent

# Property tests check answers, not speed: no per-example deadline, which a loaded machine
# (a shared CI runner) can miss whatever the code does.
settings.register_profile("queryeval", deadline=None)
settings.load_profile("queryeval")


@pytest.fixture(scope="session")
def root() -> Path:
    """The repository root."""
    return ROOT


@pytest.fixture(scope="session")
def ray_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The folder the Ray tests' clusters use as HOME and TMPDIR, one for the session (Ray
    keeps state there from one cluster to the next); see tests/ray_support.py."""
    from ray_support import ray_folder

    tmp_path_factory.getbasetemp()  # pytest's own folder chosen before TMPDIR changes
    with ray_folder() as folder:
        yield folder


@pytest.fixture(scope="module")
def ray_env(ray_home: Path) -> Iterator[Path]:
    """HOME and TMPDIR in `ray_home` for one module's tests, restored after it."""
    from ray_support import ray_environment

    with ray_environment(ray_home) as folder:
        yield folder


@pytest.fixture(scope="session")
def built_fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache's `fixtures/` folder for the whole session: a database built from a seed (an
    ArcadeDB graph: a JVM) is built once; see tests/graph_support.py."""
    return tmp_path_factory.mktemp("built-fixtures")


@pytest.fixture(scope="session")
def movies_engine(tmp_path_factory: pytest.TempPathFactory, built_fixtures: Path) -> Iterator[Any]:
    """The example movie graph's ArcadeDB (examples/cypher), one server for the session."""
    from graph_support import session_engine, with_built_fixtures

    cache = with_built_fixtures(tmp_path_factory.mktemp("movies") / "cache", built_fixtures)
    with session_engine("movies", cache) as engine:
        yield engine


@pytest.fixture(scope="session")
def graph_scratch(movies_engine: Any) -> Iterator[Any]:
    """One scratch ArcadeDB for the graph variants of the session (queryeval.verify): held
    here, so every Cypher verifier and audit of the session shares its JVM."""
    from queryeval.engines import acquire_graph_scratch, release_graph_scratch

    scratch = acquire_graph_scratch(movies_engine.limits)
    yield scratch
    release_graph_scratch(scratch)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run each test in its own working folder, so caches and runs/ never leak between tests;
    the viewer's run indexes (kept outside run folders) go there too, never to ~/.cache."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("QUERYEVAL_INDEX_DIR", str(tmp_path / ".index"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Let objects frozen by bulk runs go before exit, so DuckDB's bindings report no leaks."""
    import gc

    gc.unfreeze()
    gc.collect()
