"""Reviews written from the viewer: a verdict overridden or a gold correction proposed, with
a reason, who and when, stored in the run's review.json in the format the runner writes
(`records`: each changed record's case verdict and overridden scores, the machine's score
kept in `details.review.original`), so every reader of the run (`queryeval.log.read_log`,
compare, history, the exporters) sees the override as one.

Gold corrections need scoring again; they are kept under `golds` of review.json, and
`review_file()` gives both as a review file for `queryeval run --review FILE`.

Writers are serialised by an exclusive lock on `<run>/.review.lock` (a run's own lock,
`.lock`, is held for the whole run and would refuse a review while it resumes); review.json
is replaced atomically, and a run appending to results.jsonl is never touched, so a review
written while a run resumes loses neither.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from queryeval.errors import InputError
from queryeval.log import REVIEW, REVIEWED_IN_VIEWER, RUN, LogWriter, overridden_score, read_json

SOURCE = REVIEWED_IN_VIEWER
_LOCK = ".review.lock"


@contextlib.contextmanager
def review_lock(run_dir: Path) -> Iterator[None]:
    """Hold the run's review lock (blocking: reviews are short)."""
    import fcntl

    fd = os.open(run_dir / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def scorer_rules(run_dir: Path) -> dict[str, tuple[bool, bool]]:
    """label -> (required, informational) of the run's scorers, from run.json."""
    info = read_json(run_dir, RUN) or {}
    labels = list((info.get("scorers") or {}).keys())
    rules = {label: (False, False) for label in labels}
    for spec in (info.get("config") or {}).get("scorers") or []:
        if not isinstance(spec, Mapping):
            continue
        label = spec.get("id") or spec.get("name")
        if label in rules:
            rules[label] = (bool(spec.get("required")), spec.get("weight") == 0)
    return rules


def case_verdict(
    scores: Mapping[str, Mapping[str, Any]], rules: Mapping[str, tuple[bool, bool]]
) -> bool | None:
    """The case verdict from its scores, by the runner's rule: a required scorer that did not
    pass or any fail fails it; a pass passes it; else none. Informational scorers (weight 0)
    do not decide.

    >>> case_verdict({"a": {"passed": True}, "b": {"passed": False}},
    ...              {"a": (False, False), "b": (False, True)})
    True
    """
    verdict: bool | None = None
    for label, (required, informational) in (rules or {k: (False, False) for k in scores}).items():
        passed = (scores.get(label) or {}).get("passed")
        if required and passed is not True:
            return False
        if passed is not None and not informational:
            if not passed:
                verdict = False
            elif verdict is None:
                verdict = True
    return verdict


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _check(text: str, what: str) -> str:
    text = (text or "").strip()
    if not text:
        raise InputError(f"{what} is required", where=what)
    return text


def add_override(
    run_dir: Path,
    record: Mapping[str, Any],
    *,
    scorer: str,
    verdict: bool,
    note: str,
    reviewer: str,
) -> dict[str, Any]:
    """Override one scorer's verdict of a stored record (as stored: without a previous
    override from review.json) and store it in review.json; returns the changed record's
    entry. InputError for an unknown scorer or a missing reason or reviewer."""
    note, reviewer = _check(note, "reason"), _check(reviewer, "reviewer")
    scores = record.get("scores") or {}
    if scorer not in scores:
        raise InputError(
            f"the record has no score {scorer!r}; it has: {', '.join(scores) or 'none'}",
            where="scorer",
        )
    system, case_id = str(record["system"]), str(record["case_id"])
    with review_lock(run_dir):
        review = read_json(run_dir, REVIEW) or {}
        entries = [e for e in review.get("records") or [] if isinstance(e, Mapping)]
        mine = next(
            (
                e
                for e in entries
                if (str(e.get("system")), str(e.get("case_id"))) == (system, case_id)
            ),
            None,
        )
        current = {k: dict(v) for k, v in scores.items()}
        if mine is not None:
            current.update({k: dict(v) for k, v in (mine.get("scores") or {}).items()})
        current[scorer] = overridden_score(
            scores.get(scorer), verdict, note, reviewer, at=_now(), source=SOURCE
        )
        changed = {k: v for k, v in current.items() if (v.get("details") or {}).get("review")}
        entry = {
            "system": system,
            "case_id": case_id,
            "passed": case_verdict(current, scorer_rules(run_dir)),
            "scores": changed,
        }
        entries = [e for e in entries if e is not mine] + [entry]
        LogWriter(run_dir).write_json(
            REVIEW, {**review, "file": review.get("file") or SOURCE, "records": entries}
        )
    return entry


def add_gold(run_dir: Path, case_id: str, gold: str, *, note: str, reviewer: str) -> dict[str, Any]:
    """Propose a gold correction for a case (kept under `golds` of review.json; a run with
    `--review` applies it)."""
    entry = {
        "case_id": _check(case_id, "case_id"),
        "gold": _check(gold, "gold"),
        "note": _check(note, "reason"),
        "reviewer": _check(reviewer, "reviewer"),
        "at": _now(),
    }
    with review_lock(run_dir):
        review = read_json(run_dir, REVIEW) or {}
        golds = [g for g in review.get("golds") or [] if g.get("case_id") != entry["case_id"]]
        LogWriter(run_dir).write_json(
            REVIEW,
            {**review, "file": review.get("file") or SOURCE, "records": review.get("records") or [],
             "golds": [*golds, entry]},
        )  # fmt: skip
    return entry


def review_file(review: Mapping[str, Any] | None) -> dict[str, Any]:
    """The review as a review file's content (`overrides`, `golds`) for `queryeval run
    --review`.

    >>> out = review_file({"records": [{"system": "s", "case_id": "c", "scores": {"em": {
    ...     "details": {"review": {"verdict": "pass", "note": "n", "reviewer": "r"}}}}}]})
    >>> out["overrides"][0]["scorer"], out["overrides"][0]["verdict"], out["golds"]
    ('em', 'pass', [])
    """
    overrides = []
    for entry in (review or {}).get("records") or []:
        for label, score in (entry.get("scores") or {}).items():
            done = (score.get("details") or {}).get("review") or {}
            if done:
                overrides.append(
                    {
                        "case_id": entry["case_id"],
                        "system": entry["system"],
                        "scorer": label,
                        "verdict": done.get("verdict"),
                        "note": done.get("note", ""),
                        "reviewer": done.get("reviewer", ""),
                    }
                )
    golds = [
        {k: g[k] for k in ("case_id", "gold", "note", "reviewer") if k in g}
        for g in (review or {}).get("golds") or []
    ]
    return {"overrides": overrides, "golds": golds}
