"""The run directory: its schema (typed records, run info, summary, gate results), its one
writer and its one reader. Below stats and reports, which read runs, and the runner, which
writes them.

```
results.jsonl    one Record per (system, case), appended as each finishes
run.json         RunInfo: what ran, with which inputs and versions, how far it got
summary.json     Summary: every system's figures, with the GateResults
comparison.json  the comparison with a baseline run, when there is one
review.json      a human review's overridden scores, put over the records when read
overlay-<name>.json  a correction overlay's figures beside the original ones (queryeval.audit)
overlay-<name>.html  its page
.lock            held while a run writes here (one run per directory; `run_lock`)
```
"""

from queryeval.log._lock import lock_holder, run_lock
from queryeval.log._override import overridden_score
from queryeval.log._read import (
    RunLog,
    as_log,
    iter_records,
    overlay_review,
    read_comparison,
    read_json,
    read_log,
    read_overlays,
    read_review,
    read_run_info,
    read_summary,
)
from queryeval.log._rows import RecordColumns, cut_text
from queryeval.log._schema import (
    COMPARISON,
    LOCK,
    OVERLAY_PAGES,
    OVERLAYS,
    RESULTS,
    REVIEW,
    REVIEWED_IN_VIEWER,
    RUN,
    RUN_FILES,
    SUMMARY,
    GateResult,
    Interval,
    Latency,
    MetricSummary,
    OverlayInfo,
    Record,
    ReviewedRecord,
    ReviewFile,
    ReviewInfo,
    ReviewSummary,
    RunInfo,
    ScoreRecord,
    ScorerInfo,
    ScorerSummary,
    SelectionInfo,
    Summary,
    SystemCalls,
    SystemInfo,
    SystemSummary,
    TagSummary,
    overlay_file,
)
from queryeval.log._write import LogWriter, encode_record, json_default, without_surrogates

__all__ = [
    "COMPARISON",
    "LOCK",
    "OVERLAYS",
    "OVERLAY_PAGES",
    "RESULTS",
    "REVIEW",
    "REVIEWED_IN_VIEWER",
    "RUN",
    "RUN_FILES",
    "SUMMARY",
    "GateResult",
    "Interval",
    "Latency",
    "LogWriter",
    "MetricSummary",
    "OverlayInfo",
    "Record",
    "RecordColumns",
    "ReviewFile",
    "ReviewInfo",
    "ReviewSummary",
    "ReviewedRecord",
    "RunInfo",
    "RunLog",
    "ScoreRecord",
    "ScorerInfo",
    "ScorerSummary",
    "SelectionInfo",
    "Summary",
    "SystemCalls",
    "SystemInfo",
    "SystemSummary",
    "TagSummary",
    "as_log",
    "cut_text",
    "encode_record",
    "iter_records",
    "json_default",
    "lock_holder",
    "overlay_file",
    "overlay_review",
    "overridden_score",
    "read_comparison",
    "read_json",
    "read_log",
    "read_overlays",
    "read_review",
    "read_run_info",
    "read_summary",
    "run_lock",
    "without_surrogates",
]
