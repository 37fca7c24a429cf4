"""`queryeval export mlflow|otel RUN_DIR`: send a stored run to an experiment tracker or a
tracing backend (the libraries come from the extras `mlflow` and `otel`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from queryeval.errors import InputError

export_app = typer.Typer(
    help="Export a stored run to MLflow or OpenTelemetry.",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help, as the root command's (no rich import)
)

RunDir = Annotated[Path, typer.Argument(help="a run directory", show_default=False)]


@export_app.command("mlflow")
def export_mlflow_command(
    run_dir: RunDir,
    tracking_uri: Annotated[
        str | None,
        typer.Option(
            help="MLflow tracking URI or local folder (default: MLFLOW_TRACKING_URI, else ./mlruns)"
        ),
    ] = None,
    experiment: Annotated[
        str | None, typer.Option(help="experiment name (default: the suite's name)")
    ] = None,
) -> None:
    """One MLflow run per system: params, headline metrics, reports, results table."""
    from queryeval.cli._app import fail_input
    from queryeval.exporters import export_mlflow

    try:
        runs = export_mlflow(run_dir, tracking_uri=tracking_uri, experiment=experiment)
    except InputError as exc:
        raise fail_input(exc) from None
    for system, run_id in runs.items():
        typer.echo(f"{system}: mlflow run {run_id}")


@export_app.command("otel")
def export_otel_command(
    run_dir: RunDir,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="write the spans here as OTLP/JSON")
    ] = None,
    endpoint: Annotated[
        str | None,
        typer.Option(
            help="OTLP/HTTP traces endpoint (needs opentelemetry-exporter-otlp-proto-http)"
        ),
    ] = None,
    service_name: Annotated[
        str | None,
        typer.Option(
            help="the resource's service.name (default: OTEL_SERVICE_NAME, else queryeval)"
        ),
    ] = None,
) -> None:
    """Spans per case (system call, execution, judge) to a file or an OTLP endpoint."""
    from queryeval.cli._app import fail_input
    from queryeval.exporters import export_otel, tracer_provider, write_otlp_json

    if (out is None) == (endpoint is None):
        raise fail_input(InputError("give exactly one of --out and --endpoint", where="otel"))
    try:
        if out is not None:
            n = write_otlp_json(run_dir, out, service_name=service_name)
            typer.echo(f"{n} spans written to {out}")
            return
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            raise InputError(
                "--endpoint needs: pip install opentelemetry-exporter-otlp-proto-http"
            ) from None
        provider = tracer_provider(service_name)
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        n = export_otel(run_dir, tracer_provider=provider)
        provider.shutdown()
        typer.echo(f"{n} spans sent to {endpoint}")
    except InputError as exc:
        raise fail_input(exc) from None
