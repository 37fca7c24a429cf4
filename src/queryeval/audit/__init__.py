"""Golds you can trust (issue 32; docs/audit.md): an audit that finds broken golds
(`audit_suite`), and correction overlays re-scoring a finished run (`apply_overlays`).

>>> from queryeval.audit import KINDS
>>> KINDS[0]
'gold_fails'
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from queryeval.audit._checks import Auditor, golds_of  # noqa: F401 (golds_of: the runner's)
from queryeval.audit._from_review import (
    file_provenance,
    merge_entries,
    review_entries,
    write_overlay_file,
)
from queryeval.audit._model import KINDS, AuditReport, Finding
from queryeval.audit._overlay import apply_overlay, apply_overlays, overlay_lines
from queryeval.audit._report import (
    console_lines,
    draft_overlay,
    html_page,
    proposed_entries,
    write_report,
)
from queryeval.cases import Case
from queryeval.config import SuiteConfig
from queryeval.scorers import ScoringContext


def audit_suite(
    suite: SuiteConfig,
    cases: Sequence[Case],
    ctx: ScoringContext,
    *,
    predictions: Sequence[Path] = (),
    systems: list[str] | None = None,
    agree: int = 3,
    variants: int = 12,
    seed: int = 0,
) -> AuditReport:
    """Audit every gold of `cases` (see docs/audit.md): the findings and what was covered.
    `predictions` (run folders or JSONL files) and `systems` (suite systems with saved
    predictions) feed `disputed`: `agree` systems agreeing against the gold."""
    from queryeval.audit._predictions import read_predictions

    found = read_predictions(list(predictions), suite, systems)
    return Auditor(suite, cases, ctx, variants=variants, seed=seed).run(found, agree)


__all__ = [
    "KINDS",
    "AuditReport",
    "Finding",
    "apply_overlay",
    "apply_overlays",
    "audit_suite",
    "console_lines",
    "draft_overlay",
    "file_provenance",
    "html_page",
    "merge_entries",
    "overlay_lines",
    "proposed_entries",
    "review_entries",
    "write_overlay_file",
    "write_report",
]
