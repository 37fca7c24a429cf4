"""Export a stored run to MLflow: one MLflow run per system, started and ended when the
evaluation was, with the suite and system configuration as params, the headline figures as
metrics, the run's reports as artifacts, the per-case results as an MLflow table
(`results.json`, read back with `mlflow.load_table`), the suite's cases as its evaluation
dataset, and one trace per case."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from queryeval.exporters._common import (
    REPORT_FILES,
    SuiteCases,
    genai_attributes,
    gold_text,
    missing_extra,
    model_call_attributes,
    prediction_text,
    read_run,
    reason_text,
    score_value,
    suite_cases,
    system_params,
)
from queryeval.stats import headline_metrics, record_latency

if TYPE_CHECKING:
    from queryeval.cases import Case

TABLE = "results.json"  # the per-case table (mlflow.load_table("results.json", run_ids=[id]))

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


def _results_table(
    records: list[Mapping[str, Any]], system: str, cases: SuiteCases
) -> dict[str, list[Any]]:
    """One row per case of the system: case, system, question, gold, prediction, status
    (passed / failed / error / not scored), reason, latency, cost, and per scorer its
    value, status and whether a human review overrode it."""
    rows = [r for r in records if r.get("system") == system]
    labels: list[str] = []
    for r in rows:
        labels.extend(k for k in (r.get("scores") or {}) if k not in labels)
    table: dict[str, list[Any]] = {
        "case": [str(r["case_id"]) for r in rows],
        "system": [system for _ in rows],
        "question": [_question(cases.by_id.get(str(r["case_id"]))) for r in rows],
        "gold": [gold_text(cases.by_id.get(str(r["case_id"]))) for r in rows],
        "prediction": [prediction_text(r) for r in rows],
        "status": [_status(r) for r in rows],
        "reason": [reason_text(r) for r in rows],
        "latency_s": [record_latency(r) for r in rows],
        "cost": [r.get("cost") for r in rows],
    }
    for label in labels:
        scores = [(r.get("scores") or {}).get(label) or {} for r in rows]
        table[label] = [score_value(s) for s in scores]
        table[f"{label}.status"] = [str(s.get("status", "ok")) for s in scores]
        table[f"{label}.overridden"] = [
            bool((s.get("details") or {}).get("review")) for s in scores
        ]
    return table


def _question(case: Case | None) -> str:
    return case.question if case is not None else ""


def _status(record: Mapping[str, Any]) -> str:
    """passed, failed (the system's answer was wrong), error (the system failed), or
    not scored (no verdict could be given)."""
    if record.get("error"):
        return "error"
    passed = record.get("passed")
    return "passed" if passed is True else "failed" if passed is False else "not scored"


def _latency_metrics(records: list[Mapping[str, Any]], system: str) -> dict[str, float]:
    """latency_p50_s and latency_p95_s from the records (saved predictions record their
    latency per attempt), as the summary computes them; {} without a latency."""
    import numpy as np

    times = [
        t for r in records if r.get("system") == system if (t := record_latency(r)) is not None
    ]
    if not times:
        return {}
    return {
        "latency_p50_s": float(np.percentile(times, 50)),
        "latency_p95_s": float(np.percentile(times, 95)),
    }


def export_mlflow(
    run_dir: str | Path,
    *,
    tracking_uri: str | Path | None = None,
    experiment: str | None = None,
    traces: bool = True,
) -> dict[str, str]:
    """Log the stored run in `run_dir` to MLflow (`tracking_uri`: a server URL, a database
    URI or a local folder; default MLFLOW_TRACKING_URI, else the folder mlruns). The
    experiment is `experiment`, else the suite's name. `traces`: one MLflow trace per case
    (where the installed MLflow has tracing). Exporting the same run again finds the runs it
    made (tag `queryeval.run_key`) and makes no new ones. Returns system -> MLflow run id.
    """
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise missing_extra("mlflow", "mlflow") from None

    run = read_run(run_dir)  # not a run directory: said before MLflow is asked anything
    uri = _tracking_uri(tracking_uri)
    with _file_store_allowed(uri), _tracing_to(uri) as tracing:
        client = MlflowClient(tracking_uri=uri)
        exporter = _Exporter(run, Path(run_dir), client, traces and tracing)
        return exporter.export(experiment)


@contextmanager
def _tracing_to(uri: str | None) -> Iterator[bool]:
    """MLflow sends traces to its process-wide tracking URI: point it at `uri` while the
    export runs and put it back after (MLflow's own context manager for this). Yields
    whether the installed MLflow has tracing."""
    try:
        from mlflow.tracking._tracking_service.utils import _use_tracking_uri
    except ImportError:  # an MLflow without it: no traces rather than a changed process
        yield False
        return
    if uri is None:
        yield True
        return
    with _use_tracking_uri(uri):
        yield True


class _Exporter:
    """export_mlflow's work on the read run, with the client made."""

    def __init__(self, run: Any, run_dir: Path, client: Any, traces: bool) -> None:
        self.run, self.run_dir, self.client, self.traces = run, run_dir, client, traces
        self.info: Mapping[str, Any] = run.info or {}
        self.summary: Mapping[str, Any] = run.summary or {}
        self.records: list[Mapping[str, Any]] = list(run.records)
        self.cases = suite_cases(self.info)

    def export(self, experiment: str | None) -> dict[str, str]:
        client, info = self.client, self.info
        name = experiment or str(self.summary.get("suite") or "queryeval")
        found = client.get_experiment_by_name(name)
        experiment_id = found.experiment_id if found is not None else client.create_experiment(name)
        started = str(info.get("started_at") or "")
        out: dict[str, str] = {}
        for system, entry in (self.summary.get("systems") or {}).items():
            key = f"{info.get('config_hash', '')}|{info.get('inputs_hash', '')}|{started}|{system}"
            existing = client.search_runs(
                [experiment_id], filter_string=f"tags.`queryeval.run_key` = '{key}'", max_results=1
            )
            if existing:
                out[system] = existing[0].info.run_id
                continue
            out[system] = self._system(experiment_id, system, entry, key)
        return out

    def _system(self, experiment_id: str, system: str, entry: Mapping[str, Any], key: str) -> str:
        """One MLflow run for `system`, started and ended when the evaluation was."""
        from mlflow.entities import Metric, Param, RunTag

        client, info, summary = self.client, self.info, self.summary
        started = str(info.get("started_at") or "")
        tags = {
            "queryeval.run_key": key,
            "queryeval.run_dir": str(self.run_dir.resolve()),
            "queryeval.suite": str(summary.get("suite", "")),
            "queryeval.system": system,
        }
        begin = _millis(info.get("started_at"))
        stamp = _millis(info.get("finished_at") or info.get("started_at"))
        mlrun = client.create_run(experiment_id, start_time=begin, tags=tags, run_name=system)
        run_id = str(mlrun.info.run_id)
        params = {
            "suite": summary.get("suite"),
            "config_hash": info.get("config_hash"),
            "inputs_hash": info.get("inputs_hash"),
            "seed": info.get("seed"),
            "started_at": started or None,
            "scorers": sorted((info.get("scorers") or {}) or (entry.get("scorers") or {})),
            **{f"system.{k}": v for k, v in system_params(info, system).items()},
        }
        metrics = {**_latency_metrics(self.records, system), **headline_metrics(entry)}
        client.log_batch(
            run_id,
            metrics=[Metric(_key(k), v, stamp, 0) for k, v in metrics.items()],
            params=[Param(_key(k), _param(v)) for k, v in params.items() if v is not None],
            tags=[RunTag(k, v) for k, v in tags.items()],
        )
        for filename in REPORT_FILES:
            path = self.run_dir / filename
            if path.is_file():
                client.log_artifact(run_id, str(path), artifact_path="reports")
        client.log_table(run_id, _results_table(self.records, system, self.cases), TABLE)
        self._dataset(run_id)
        if self.traces:
            self._traces(experiment_id, run_id, system)
        client.set_terminated(run_id, "FINISHED", end_time=stamp)
        return run_id

    def _dataset(self, run_id: str) -> None:
        """The suite's cases as the run's evaluation dataset (what `mlflow.log_input` logs:
        name, digest of the case files, source, schema and profile)."""
        if not self.cases.by_id:
            return
        import pandas as pd
        from mlflow.data.pandas_dataset import from_pandas
        from mlflow.entities import DatasetInput, InputTag

        frame = pd.DataFrame(
            {
                "case": list(self.cases.by_id),
                "question": [c.question for c in self.cases.by_id.values()],
                "gold": [gold_text(c) for c in self.cases.by_id.values()],
                "tags": [", ".join(c.tags) for c in self.cases.by_id.values()],
            }
        )
        source = (
            str(self.cases.files[0])
            if len(self.cases.files) == 1
            else str(self.info.get("suite_file", ""))
        )
        dataset = from_pandas(
            frame,
            source=source,
            name=str(self.summary.get("suite") or "cases"),
            digest=self.cases.digest,
        )
        entity = dataset._to_mlflow_entity()  # what mlflow.log_input logs
        tag = InputTag(key="mlflow.data.context", value="evaluation")
        self.client.log_inputs(run_id, datasets=[DatasetInput(dataset=entity, tags=[tag])])

    def _traces(self, experiment_id: str, run_id: str, system: str) -> None:
        """One trace per case: the case span (question in, prediction out, verdict, scores)
        with its system call and judge calls; times laid end to end from the run's start,
        as in the OpenTelemetry export."""
        import mlflow

        clock = _millis(self.info.get("started_at")) * 1_000_000
        for record in self.records:
            if record.get("system") != system:
                continue
            clock = self._trace(experiment_id, run_id, record, clock)
        flush = getattr(mlflow, "flush_trace_async_logging", None)
        if flush is not None:
            flush()

    def _trace(self, experiment_id: str, run_id: str, record: Mapping[str, Any], clock: int) -> int:
        client = self.client
        case_id = str(record["case_id"])
        case = self.cases.by_id.get(case_id)
        call_ns = int((record_latency(record) or 0.0) * 1e9)
        scores = {
            label: score_value(score)
            for label, score in (record.get("scores") or {}).items()
            if score_value(score) is not None
        }
        root = client.start_trace(
            name="queryeval.case",
            span_type="CHAIN",
            inputs={"case": case_id, "question": _question(case)},
            attributes={"queryeval.case_id": case_id, "queryeval.system": str(record["system"])},
            tags={"queryeval.case_id": case_id, "queryeval.system": str(record["system"])},
            experiment_id=experiment_id,
            start_time_ns=clock,
            run_id=run_id,
        )
        trace_id = root.trace_id
        call = client.start_span(
            "system_call",
            trace_id=trace_id,
            parent_id=root.span_id,
            span_type="LLM",
            inputs={"question": _question(case)},
            attributes=_drop_none(
                {
                    "queryeval.latency_s": call_ns / 1e9,
                    "queryeval.cost": record.get("cost"),
                    **model_call_attributes(record),
                }
            ),
            start_time_ns=clock,
        )
        client.end_span(
            trace_id, call.span_id, outputs={"prediction": prediction_text(record)},
            end_time_ns=clock + call_ns,
        )  # fmt: skip
        end = clock + call_ns
        for label, score in (record.get("scores") or {}).items():
            details = (score or {}).get("details") or {}
            judged = details.get("judge")
            if "reasoning" not in details and "verdict" not in details and not judged:
                continue
            attributes = {"queryeval.scorer": label, "queryeval.judge.cost": details.get("cost")}
            if isinstance(judged, Mapping):  # an LLM judge's call: GenAI attributes
                usage = judged.get("usage") or {}
                attributes.update(
                    genai_attributes(judged.get("model"), judged.get("provider"),
                                     usage.get("prompt_tokens"), usage.get("completion_tokens"),
                                     judged.get("cost_usd"))
                )  # fmt: skip
            judge = client.start_span(
                f"judge {label}", trace_id=trace_id, parent_id=root.span_id, span_type="LLM",
                attributes=_drop_none(attributes), start_time_ns=end,
            )  # fmt: skip
            client.end_span(
                trace_id, judge.span_id,
                outputs=_drop_none({"verdict": details.get("verdict"), "value": score_value(score),
                                    "reasoning": details.get("reasoning")}),
                end_time_ns=end,
            )  # fmt: skip
        client.end_trace(
            trace_id,
            outputs={
                "prediction": prediction_text(record),
                "status": _status(record),
                "reason": reason_text(record),
                "scores": scores,
            },
            attributes=_drop_none({"queryeval.passed": record.get("passed")}),
            status="ERROR" if record.get("error") else "OK",
            end_time_ns=end,
        )
        return end


def _drop_none(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
