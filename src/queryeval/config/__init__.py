"""Suite configuration: the model and its YAML loader."""

# ruff: noqa: F401 - names imported here and left out of `__all__` are for queryeval's own
# packages (the private-modules contract has them import through here), not a public interface

from __future__ import annotations

from typing import TYPE_CHECKING

from queryeval._registry import lazy_attributes, names_by_module
from queryeval.config._llm import ChatEndpoint, Price, import_litellm
from queryeval.config._load import load_suite
from queryeval.config._model import (
    BaselineConfig,
    DatabaseConfig,
    RaySettings,
    ReportConfig,
    ScorerConfig,
    SuiteConfig,
    SystemConfig,
)
from queryeval.config._presets import PRESETS
from queryeval.config._systems import EndpointSpec, ExamplesSpec, ModelSpec, ReplySpec

if TYPE_CHECKING:
    from queryeval.config._overlays import (
        Overlay,
        OverlayEntry,
        OverlayGold,
        load_overlay,
        load_overlays,
    )

# a suite's overlays (queryeval audit, --review files) are loaded on first use: a run without
# them does not import their models (issue 31)
__getattr__, __dir__ = lazy_attributes(
    __name__,
    names_by_module(
        {"_overlays": "Overlay OverlayEntry OverlayGold load_overlay load_overlays"}, __name__
    ),
)

# What users call; the package's other names are for queryeval's own packages.
__all__ = [
    "DatabaseConfig",
    "ScorerConfig",
    "SuiteConfig",
    "SystemConfig",
    "load_suite",
]
