"""What a run directory holds: the file names and the shape of every record in them.

The records stay plain dicts (a 100,000-case run writes and reads them at full speed); these
`TypedDict`s say which keys they have, down to the figures, for readers, writers and mypy
alike. Every name of a file in a run directory is here (`RUN_FILES`, `overlay_file`); the
typed readers are in `_read` (`read_summary`, `read_run_info`, ...).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

RESULTS = "results.jsonl"  # one Record per line, appended as each (system, case) finishes
RUN = "run.json"  # RunInfo
SUMMARY = "summary.json"  # Summary, with its GateResults under "gates"
OVERLAYS = "overlay-*.json"  # a correction overlay's figures, one file per overlay
OVERLAY_PAGES = "overlay-*.html"  # a correction overlay's page, beside its figures
COMPARISON = "comparison.json"  # the comparison with a baseline run (stats.RunComparison)
REVIEW = "review.json"  # a human review's overridden scores (read_log puts them over RESULTS)
REVIEWED_IN_VIEWER = "queryeval view"  # review.json's "file" when the viewer wrote it
LOCK = ".lock"  # held while a run writes the directory (`run_lock`)
RUN_FILES = (RESULTS, RUN, SUMMARY, COMPARISON, REVIEW)  # what a new run replaces


def overlay_file(name: str, suffix: str = ".json") -> str:
    """The file of correction overlay `name` in a run directory (its figures, or with
    ``suffix=".html"`` its page).

    >>> overlay_file("bird-fixes"), overlay_file("bird-fixes", ".html")
    ('overlay-bird-fixes.json', 'overlay-bird-fixes.html')
    """
    return f"overlay-{name}{suffix}"


JSON = Any  # a JSON value as orjson reads it (a user's option, a scorer's own figure)
JSONObject = dict[str, Any]

Status = Literal["ok", "unscored", "error"]


# -- results.jsonl ----------------------------------------------------------------------------


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


# -- run.json ---------------------------------------------------------------------------------


class _ScorerInfoBase(TypedDict):
    name: str
    label: str
    options: JSONObject  # the scorer's options model as JSON (its own keys)
    threshold: float | None


class ScorerInfo(_ScorerInfoBase, total=False):
    """A scorer as run.json (and summary.json beside its figures) records it: enough to
    re-create it; some scorers add what the run resolved."""

    evaluation_method: str  # answer scorers: exact, semantic, ...
    semantic_threshold: float | None
    threshold_source: str | None
    embedding_model: str | None
    components: list[ScorerInfo]  # a composite scorer's components


class _SystemInfoBase(TypedDict):
    name: str
    params: JSONObject


class SystemInfo(_SystemInfoBase, total=False):
    """A system as run.json records it: its name and parameters, and what a model or
    endpoint system describes of itself."""

    kind: str
    model: str
    endpoint: str
    prompt: str | None
    temperature: float | None
    max_tokens: int | None
    seed: int | None
    samples: int
    refine: JSON
    cache: JSON


class SystemCalls(TypedDict, total=False):
    """A model or endpoint system's calls in one run (every worker's counters added up)."""

    calls: int
    requests: int
    cache_hits: int
    deduplicated: int
    failed: int
    retries: int
    rate_limited: int
    spend_cap_refusals: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    cache: JSONObject  # the response cache file: path, bytes, max_bytes


class ReviewInfo(TypedDict, total=False):
    """The review file a run applied (run.json `review`): its path, hash and counts."""

    file: str
    sha256: str
    overrides: int
    gold_corrections: int


class SelectionInfo(TypedDict, total=False):
    """The subset of cases a run ran (`--filter`, `--limit`)."""

    filter: list[str]
    limit: int | None


class OverlayInfo(TypedDict, total=False):
    """A correction overlay a run applied (run.json `overlays`)."""

    name: str
    sha256: str
    file: str


class RunInfo(TypedDict, total=False):
    """run.json: what ran (suite, hashes of config and inputs, scorers, systems, versions)
    and how far it got (`status`: running or complete)."""

    suite: str
    suite_file: str | None
    config_hash: str
    inputs_hash: str
    input_files: list[str]
    config: JSONObject  # the SuiteConfig as JSON (`SuiteConfig.model_validate` reads it)
    scorers: dict[str, ScorerInfo]
    systems: list[SystemInfo]
    seed: int
    versions: dict[str, str]
    status: str
    started_at: str
    updated_at: str
    finished_at: str
    system_calls: dict[str, SystemCalls]
    baseline: str
    review: ReviewInfo
    selection: SelectionInfo
    cluster: JSONObject  # an `executor: ray` run: workers and what each actor did
    overlays: list[OverlayInfo]


# -- summary.json -----------------------------------------------------------------------------


class Interval(TypedDict):
    """A confidence interval as stored (`stats.Interval.as_dict`)."""

    estimate: float
    low: float
    high: float
    n: int
    method: str


class _PassCounts(TypedDict):
    passed: int
    failed: int
    no_verdict: int
    pass_rate: float | None


class MetricSummary(TypedDict, total=False):
    """A sub-metric's mean over the scored cases (a flagged scorer's: `mean_scored`)."""

    mean: float | None
    n: int
    ci95: Interval | None
    mean_scored: float


class _ScorerSummaryBase(_PassCounts):
    n: int
    ok: int
    unscored: int
    error: int
    mean: float | None
    ci95: Interval | None
    metrics: dict[str, MetricSummary]


class ScorerSummary(_ScorerSummaryBase, total=False):
    """One scorer's figures for one system: counts by status, mean with CI, pass rate,
    sub-metrics; a flagged one's figures over what was scored and the bounds over all.
    (`failed_outputs`, `unscored_share` and `flagged` are absent from older runs.)"""

    failed_outputs: int
    unscored_share: float
    flagged: bool
    mean_scored: float | None
    bounds: list[float] | None  # [low, high]: the unscored counted as 0, then as 1
    pass_rate_scored: float | None
    failures: dict[str, int]  # failure reason: cases
    not_scored_reasons: dict[str, int]
    scorer: ScorerInfo
    aggregate: JSONObject  # the scorer's own dataset-level figures


class TagSummary(_PassCounts):
    """One tag's cases: counts, pass rate, and each scorer's mean."""

    cases: int
    means: dict[str, float | None]


class Latency(TypedDict):
    """A system's latency in seconds over its cases."""

    mean: float
    p50: float
    p95: float
    max: float


class _SystemSummaryBase(_PassCounts):
    cases: int
    system_errors: int
    pass_rate_ci95: Interval | None
    scorers: dict[str, ScorerSummary]
    by_tag: dict[str, TagSummary]


class SystemSummary(_SystemSummaryBase, total=False):
    """One system's figures: case verdicts and pass rate with CI, latency, cost, each
    scorer's figures and the figures by tag. (`no_verdict_share` and `flagged` are absent
    from older runs.)"""

    no_verdict_share: float
    flagged: bool
    pass_rate_scored: float | None  # flagged: the rate of what could be judged
    latency_s: Latency
    system_cost: float


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


class ReviewSummary(ReviewInfo, total=False):
    """summary.json `review`: the review file applied, and per scorer the judge-human
    agreement."""

    agreement: dict[str, JSONObject]


class _SummaryBase(TypedDict):
    suite: str
    n_cases: int
    systems: dict[str, SystemSummary]


class Summary(_SummaryBase, total=False):
    """summary.json: every system's figures, the gates' results once checked, and a human
    review's counts and judge-human agreement when one was applied."""

    gates: list[GateResult]
    review: ReviewSummary


# -- review.json ------------------------------------------------------------------------------


class ReviewedRecord(TypedDict):
    """A record a human review changed: its verdict and the overridden scores."""

    system: str
    case_id: str
    passed: bool | None
    scores: dict[str, ScoreRecord]


class ReviewFile(TypedDict, total=False):
    """review.json: the review file applied and the records it changed (`read_log` puts
    them over the stored records); a review made in `queryeval view` adds `golds`."""

    file: str
    records: list[ReviewedRecord]
    golds: list[JSONObject]
