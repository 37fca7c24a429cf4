"""Export a stored run to MLflow: one MLflow run per system, with the suite and system
configuration as params, the headline figures as metrics, the run's reports as artifacts
and the per-case results as an MLflow table (`results.json`)."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from queryeval.exporters._common import REPORT_FILES, missing_extra, read_run, system_params
from queryeval.stats import headline_metrics

_KEY = re.compile(r"[^\w\-. /]")  # MLflow's allowed key characters
_MAX_PARAM = 500  # MLflow's limit is larger; long values are cut, saying so


def _key(name: str) -> str:
    return _KEY.sub("_", name)


def _param(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
    return text if len(text) <= _MAX_PARAM else text[: _MAX_PARAM - 12] + "... (cut)"


def _tracking_uri(uri: str | Path | None) -> str | None:
    """None: `MLFLOW_TRACKING_URI` when set, else the folder `mlruns`. A local folder
    becomes a `file:` URI (MLflow's file store, in maintenance mode since MLflow 3, which
    refuses it unless `MLFLOW_ALLOW_FILE_STORE` is set: see `_file_store_allowed`)."""
    if uri is None:
        if os.environ.get("MLFLOW_TRACKING_URI"):
            return None  # MLflow reads it itself
        uri = "mlruns"  # MLflow's classic default; its newer one needs a database driver
    text = str(uri)
    if "://" in text or text.startswith("file:"):
        return text
    return Path(text).resolve().as_uri()


@contextmanager
def _file_store_allowed(uri: str | None) -> Iterator[None]:
    """Allow MLflow's file store for a `file:` URI (the one store needing no server or
    database) while the export runs, then put the environment back as it was."""
    name = "MLFLOW_ALLOW_FILE_STORE"
    before = os.environ.get(name)
    if uri is not None and uri.startswith("file:") and before is None:
        os.environ[name] = "true"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)


def _millis(stamp: Any) -> int:
    """An ISO time as milliseconds since the epoch (MLflow's metric timestamps); now when
    the run recorded none."""
    from datetime import UTC, datetime

    try:
        when = datetime.fromisoformat(str(stamp))
    except ValueError:
        when = datetime.now(UTC)
    return int(when.timestamp() * 1000)


def _results_table(records: list[Mapping[str, Any]], system: str) -> dict[str, list[Any]]:
    """One row per case of the system: id, verdict, error, latency, cost, every scorer's
    status and value, and whether a human review overrode it."""
    rows = [r for r in records if r.get("system") == system]
    labels: list[str] = []
    for r in rows:
        labels.extend(k for k in (r.get("scores") or {}) if k not in labels)
    table: dict[str, list[Any]] = {
        "case_id": [r["case_id"] for r in rows],
        "passed": [r.get("passed") for r in rows],
        "error": [r.get("error") for r in rows],
        "latency_s": [r.get("latency_s") for r in rows],
        "cost": [r.get("cost") for r in rows],
    }
    for label in labels:
        scores = [(r.get("scores") or {}).get(label) or {} for r in rows]
        table[f"{label}.status"] = [s.get("status") for s in scores]
        table[f"{label}.value"] = [s.get("value") for s in scores]
        table[f"{label}.overridden"] = [
            bool((s.get("details") or {}).get("review")) for s in scores
        ]
    return table


def export_mlflow(
    run_dir: str | Path,
    *,
    tracking_uri: str | Path | None = None,
    experiment: str | None = None,
) -> dict[str, str]:
    """Log the stored run in `run_dir` to MLflow (`tracking_uri`: a server URL, a database
    URI or a local folder; default MLFLOW_TRACKING_URI, else the folder mlruns). The
    experiment is `experiment`, else the suite's name. Exporting the same run again finds
    the runs it made (tag `queryeval.run_key`) and makes no new ones. Returns system ->
    MLflow run id.
    """
    try:
        from mlflow.entities import Metric, Param, RunTag
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise missing_extra("mlflow", "mlflow") from None

    run = read_run(run_dir)  # not a run directory: said before MLflow is asked anything
    uri = _tracking_uri(tracking_uri)
    with _file_store_allowed(uri):
        client = MlflowClient(tracking_uri=uri)
        return _export(run, run_dir, client, experiment, Metric, Param, RunTag)


def _export(
    run: Any,
    run_dir: str | Path,
    client: Any,
    experiment: str | None,
    Metric: Any,
    Param: Any,
    RunTag: Any,
) -> dict[str, str]:
    """export_mlflow's work on the read run, with the client made and MLflow's entity
    classes given."""
    summary = run.summary or {}
    info = run.info or {}
    name = experiment or str(summary.get("suite") or "queryeval")
    found = client.get_experiment_by_name(name)
    experiment_id = found.experiment_id if found is not None else client.create_experiment(name)
    started = str(info.get("started_at") or "")
    stamp = _millis(info.get("finished_at") or info.get("started_at"))
    records = list(run.records)
    out: dict[str, str] = {}
    for system, entry in (summary.get("systems") or {}).items():
        key = f"{info.get('config_hash', '')}|{info.get('inputs_hash', '')}|{started}|{system}"
        existing = client.search_runs(
            [experiment_id], filter_string=f"tags.`queryeval.run_key` = '{key}'", max_results=1
        )
        if existing:
            out[system] = existing[0].info.run_id
            continue
        tags = {
            "queryeval.run_key": key,
            "queryeval.run_dir": str(Path(run_dir).resolve()),
            "queryeval.suite": str(summary.get("suite", "")),
            "queryeval.system": system,
        }
        mlrun = client.create_run(experiment_id, run_name=system, tags=tags)
        run_id = mlrun.info.run_id
        params = {
            "suite": summary.get("suite"),
            "config_hash": info.get("config_hash"),
            "inputs_hash": info.get("inputs_hash"),
            "seed": info.get("seed"),
            "started_at": started or None,
            "scorers": sorted((info.get("scorers") or {}) or (entry.get("scorers") or {})),
            **{f"system.{k}": v for k, v in system_params(info, system).items()},
        }
        client.log_batch(
            run_id,
            metrics=[Metric(_key(k), v, stamp, 0) for k, v in headline_metrics(entry).items()],
            params=[Param(_key(k), _param(v)) for k, v in params.items() if v is not None],
            tags=[RunTag(k, v) for k, v in tags.items()],
        )
        for filename in REPORT_FILES:
            path = Path(run_dir) / filename
            if path.is_file():
                client.log_artifact(run_id, str(path), artifact_path="reports")
        table = _results_table(records, system)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "results.json"
            columns = list(table)
            rows = list(zip(*table.values(), strict=True))
            path.write_bytes(orjson.dumps({"columns": columns, "data": rows}))
            client.log_artifact(run_id, str(path))
        client.set_terminated(run_id, "FINISHED")
        out[system] = run_id
    return out
