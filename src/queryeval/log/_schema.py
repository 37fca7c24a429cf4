"""What a run directory holds: the file names and the shape of every record in them.

The records stay plain dicts (a 100,000-case run writes and reads them at full speed); these
`TypedDict`s say which keys they have, for readers, writers and mypy alike.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

RESULTS = "results.jsonl"  # one Record per line, appended as each (system, case) finishes
RUN = "run.json"  # RunInfo
SUMMARY = "summary.json"  # Summary, with its GateResults under "gates"
OVERLAYS = "overlay-*.json"  # a correction overlay's figures, one file per overlay
COMPARISON = "comparison.json"  # the comparison with a baseline run (stats.RunComparison)
REVIEW = "review.json"  # a human review's overridden scores (read_log puts them over RESULTS)

Status = Literal["ok", "unscored", "error"]


class _ScoreRecordBase(TypedDict):
    value: float | None
    status: Status


class ScoreRecord(_ScoreRecordBase, total=False):
    """One scorer's score of one case as stored: what is set, and always its status."""

    passed: bool
    details: dict[str, Any]
    explanation: str


class Record(TypedDict):
    """One (system, case) of results.jsonl: the output, every score, the case's verdict."""

    system: str
    case_id: str
    output: Any  # the Output's JSON (without defaults)
    scores: dict[str, ScoreRecord]
    passed: bool | None
    error: str | None
    latency_s: float | None
    cost: float | None


class RunInfo(TypedDict, total=False):
    """run.json: what ran (suite, hashes of config and inputs, scorers, systems, versions)
    and how far it got (`status`: running or complete)."""

    suite: str
    suite_file: str | None
    config_hash: str
    inputs_hash: str
    input_files: list[str]
    config: dict[str, Any]
    scorers: dict[str, dict[str, Any]]
    systems: list[dict[str, Any]]
    seed: int
    versions: dict[str, str]
    status: str
    started_at: str
    updated_at: str
    finished_at: str
    system_calls: dict[str, dict[str, Any]]
    baseline: str
    review: dict[str, Any]  # the review file applied: its path, sha256 and counts
    selection: dict[str, Any]  # the subset run (--filter, --limit), when not every case
    cluster: dict[str, Any]  # an `executor: ray` run: workers and what each actor did


class _GateResultBase(TypedDict):
    gate: str
    system: str
    value: float | None
    passed: bool


class GateResult(_GateResultBase, total=False):
    """One gate for one system; gates relative to a baseline add its value and the bound."""

    baseline_value: float | None
    bound: float | None
    note: str


class _SummaryBase(TypedDict):
    suite: str
    n_cases: int
    systems: dict[str, dict[str, Any]]  # per system: pass rate, scorers' means and CIs


class Summary(_SummaryBase, total=False):
    """summary.json: every system's figures, the gates' results once checked, and a human
    review's counts and judge-human agreement when one was applied."""

    gates: list[GateResult]
    review: dict[str, Any]
