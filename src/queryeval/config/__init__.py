"""Suite configuration: the model and its YAML loader."""

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
from queryeval.config._overlays import (
    Overlay,
    OverlayEntry,
    OverlayGold,
    load_overlay,
    load_overlays,
)
from queryeval.config._presets import PRESETS
from queryeval.config._systems import EndpointSpec, ExamplesSpec, ModelSpec, ReplySpec

__all__ = [
    "PRESETS",
    "BaselineConfig",
    "ChatEndpoint",
    "DatabaseConfig",
    "EndpointSpec",
    "ExamplesSpec",
    "ModelSpec",
    "Overlay",
    "OverlayEntry",
    "OverlayGold",
    "Price",
    "RaySettings",
    "ReplySpec",
    "ReportConfig",
    "ScorerConfig",
    "SuiteConfig",
    "SystemConfig",
    "import_litellm",
    "load_overlay",
    "load_overlays",
    "load_suite",
]
