"""A small stored run for the exporter tests: a callable system and saved predictions that
record their latency per attempt (as files of predictions do), scored by the report tests'
engine-like and judge-like scorers."""

from __future__ import annotations

import json
from pathlib import Path

from queryeval.config import load_suite
from queryeval.runner import run_suite
from reports_plugin import make_suite

SAVED_LATENCY = {f"case-{i}": 0.5 + i / 10 for i in range(6)}


def small_run(folder: Path, n: int = 6) -> Path:
    """Run the suite into folder/run and return the run directory."""
    suite_file = make_suite(folder / "suite", n=n)
    with (folder / "suite" / "preds.jsonl").open("w") as f:
        for i in range(n):
            answer = f"a{i}" if i % 2 else "wrong"
            f.write(
                json.dumps({"case_id": f"case-{i}", "answer": answer, "latency_s": 0.5 + i / 10})
                + "\n"
            )
    text = suite_file.read_text()
    text = text.replace("reports: [html, excel, junit, markdown, json]", "reports: [json]")
    text = text.replace(
        "    params: {skill: [0.5, 0.9], style: [a, crash]}\n",
        "    params: {skill: 0.5, style: crash}\n  - name: saved\n    predictions: preds.jsonl\n",
    )
    suite_file.write_text(text)
    run_suite(load_suite(suite_file), folder / "run", progress=False)
    return folder / "run"


def records(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
