"""Exporters of a stored run to the tools a team already uses (docs/integrations.md):
MLflow (`export_mlflow`: a run per system) and OpenTelemetry (`export_otel`: spans per
case). Each library is imported only inside its exporter, from the optional extras
`queryeval[mlflow]` and `queryeval[otel]`.
"""

from queryeval.exporters._mlflow import export_mlflow
from queryeval.exporters._otel import (
    export_otel,
    otlp_json,
    tracer_provider,
    write_otlp_json,
    write_spans_jsonl,
)

__all__ = [
    "export_mlflow",
    "export_otel",
    "otlp_json",
    "tracer_provider",
    "write_otlp_json",
    "write_spans_jsonl",
]
