"""Exporters of a stored run to the tools a team already uses (docs/integrations.md):
MLflow (`export_mlflow`: a run per system) and OpenTelemetry (`export_otel`: spans per
case). Each library is imported only inside its exporter, from the optional extras
`queryeval[mlflow]` and `queryeval[otel]`.
"""

# ruff: noqa: F401 - names imported here and left out of `__all__` are for queryeval's own
# packages (the private-modules contract has them import through here), not a public interface

from queryeval.exporters._mlflow import export_mlflow
from queryeval.exporters._otel import (
    export_otel,
    otlp_json,
    tracer_provider,
    write_otlp_json,
    write_spans_jsonl,
)

# What users call; the package's other names are for queryeval's own packages.
__all__ = [
    "export_mlflow",
    "export_otel",
    "otlp_json",
    "tracer_provider",
    "write_otlp_json",
]
