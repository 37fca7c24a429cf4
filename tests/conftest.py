"""Shared fixtures: paths to the repository and its examples."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def root() -> Path:
    """The repository root."""
    return ROOT


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run each test in its own working folder, so caches and runs/ never leak between tests."""
    monkeypatch.chdir(tmp_path)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Let objects frozen by bulk runs go before exit, so DuckDB's bindings report no leaks."""
    import gc

    gc.unfreeze()
    gc.collect()
