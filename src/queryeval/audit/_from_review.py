"""An overlay from a human review (issue 20's review.json, or a review file): each gold
correction becomes an overlay entry with who made it and when (docs/audit.md).

A correction the review only proposed (the viewer's `golds` of review.json: kept for a later
`run --review`) is written `proposed: true`; one the review applied (a review file's
`golds`, which `run --review` puts in place) is not. The reader of the files is the
caller's (the CLI reads them with the runner's `load_review`); this module only converts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from queryeval.errors import InputError


def overlay_gold(gold: Any, *, where: str) -> str | dict[str, Any]:
    """A review's gold (a query text, or a target mapping with `query`) as an overlay's
    `gold`; InputError for a gold with no query (an answer-only target).

    >>> overlay_gold("SELECT 1", where="x")
    'SELECT 1'
    >>> overlay_gold({"query": {"text": "SELECT 2", "database": "db"}}, where="x")
    {'text': 'SELECT 2', 'database': 'db'}
    """
    if isinstance(gold, str) and gold.strip():
        return gold
    query = gold.get("query") if isinstance(gold, Mapping) else None
    if isinstance(query, str) and query.strip():
        return query
    if isinstance(query, Mapping) and isinstance(query.get("text"), str):
        keys = ("text", "database", "language")
        return {k: query[k] for k in keys if query.get(k) is not None}
    raise InputError(
        "expected a query gold (a text, or a target with `query`): an overlay corrects "
        "query golds only",
        where=where,
    )


def review_entries(
    golds: Iterable[Mapping[str, Any]], *, proposed: bool, source: str, at: str | None = None
) -> list[dict[str, Any]]:
    """Overlay entries for a review's gold corrections (`case_id`, `gold`, `note`,
    `reviewer`, `at`); `at` is the time to record where an entry has none.

    >>> review_entries([{"case_id": "q1", "gold": "SELECT 1", "note": "typo",
    ...     "reviewer": "ana", "at": "2026-11-02T10:00:00+00:00"}], proposed=True, source="r")
    ... # doctest: +NORMALIZE_WHITESPACE
    [{'case_id': 'q1', 'gold': 'SELECT 1', 'reason': 'typo', 'source': 'r',
      'reviewer': 'ana', 'at': '2026-11-02T10:00:00+00:00', 'proposed': True}]
    """
    out: list[dict[str, Any]] = []
    for i, g in enumerate(golds):
        case_id = str(g.get("case_id") or "").strip()
        if not case_id:
            raise InputError("case_id is required", where=f"golds[{i}]")
        entry: dict[str, Any] = {
            "case_id": case_id,
            "gold": overlay_gold(g.get("gold"), where=f"golds[{i}] (case {case_id})"),
            "reason": str(g.get("note") or "").strip() or "corrected in a human review",
            "source": source,
        }
        reviewer = str(g.get("reviewer") or "").strip()
        when = g.get("at") or at
        if reviewer:
            entry["reviewer"] = reviewer
        if when:
            entry["at"] = str(when)
        if proposed:
            entry["proposed"] = True
        out.append(entry)
    return out


def merge_entries(
    applied: list[dict[str, Any]], proposals: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One entry per case: a proposal the review also applied (same case, same gold) is the
    applied one; a proposal that differs from what was applied stays a separate draft only
    when its case was not applied (an overlay lists a case once).

    >>> a = [{"case_id": "q1", "gold": "SELECT 1"}]
    >>> p = [{"case_id": "q1", "gold": "SELECT 9", "proposed": True},
    ...      {"case_id": "q2", "gold": "SELECT 2", "proposed": True}]
    >>> [(e["case_id"], e["gold"]) for e in merge_entries(a, p)]
    [('q1', 'SELECT 1'), ('q2', 'SELECT 2')]
    """
    by_case = {e["case_id"]: e for e in applied}
    out = list(applied)
    for entry in proposals:
        if entry["case_id"] not in by_case:
            out.append(entry)
            by_case[entry["case_id"]] = entry
    return out


def write_overlay_file(
    entries: list[dict[str, Any]], path: Path, *, provenance: Mapping[str, Any]
) -> Path:
    """Write an overlay (YAML mapping: `provenance`, `entries`) to `path`.

    >>> import tempfile, pathlib
    >>> from queryeval.config import load_overlay
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "o.yaml"
    >>> _ = write_overlay_file([{"case_id": "q1", "drop": True, "reason": "r", "source": "s"}],
    ...                        p, provenance={"file": "review.json"})
    >>> o = load_overlay(p); o.provenance, o.entries[0].action
    ({'file': 'review.json'}, 'drop')
    """
    import yaml

    data = {"provenance": dict(provenance), "entries": entries}
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def file_provenance(path: Path, **more: Any) -> dict[str, Any]:
    """Where an overlay's entries come from: the file, its sha256, when it was read.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "review.json"
    >>> _ = p.write_text("{}")
    >>> file_provenance(p, made_by="me")["sha256"][:12], file_provenance(p)["file"] == str(p)
    ('44136fa355b3', True)
    """
    return {
        "file": str(path),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **more,
    }
