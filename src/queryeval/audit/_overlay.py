"""A correction overlay applied to a finished run (docs/audit.md): the run's stored
outputs re-scored against the corrected golds for the cases the overlay corrects, its
dropped cases left out, every other case's stored scores kept as they are; the figures on
the original golds and on the overlay's, per system, side by side in
`overlay-<name>.json` (with the overlay's name, file and sha256, and the changed cases) and
`overlay-<name>.html` (the same, one self-contained page).

Nothing the run wrote is touched (results.jsonl, summary.json stay byte-identical), so an
overlay cannot change a figure on the original golds; and a stored score that is the
system's failure (no prediction, a crash, a query that does not run ...) is kept as it is
for a corrected case: a failed prediction stays failed under every overlay that keeps it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from queryeval.cases import Case, Output, Score, Target
from queryeval.config import Overlay, OverlayEntry, SuiteConfig
from queryeval.log import RESULTS, SUMMARY, overlay_file
from queryeval.scorers import Scorer, ScoringContext, case_passed


def read_records(run_dir: Path) -> list[dict[str, Any]]:
    """The run's stored records (results.jsonl)."""
    import orjson

    path = run_dir / RESULTS
    with path.open("rb") as fh:
        return [orjson.loads(line) for line in fh if line.strip()]


def corrected_case(case: Case, entry: OverlayEntry) -> Case:
    """`case` with its gold replaced by the entry's (one target: the corrected query, on
    the original gold's database and language unless the entry says otherwise)."""
    from queryeval.cases import Query
    from queryeval.scorers.execution import target_query

    assert entry.gold is not None
    old = next((q for t in case.targets if (q := target_query(t)) is not None), None)
    query = Query(
        text=entry.gold.text,
        database=entry.gold.database or (old.database if old else None),
        language=entry.gold.language or (old.language if old else "sql"),
    )
    turns = [t.model_copy() for t in case.conversation]
    for i in range(len(turns) - 1, -1, -1):
        if turns[i].target is not None:
            base = turns[i].main_target
            target = (
                base.model_copy(update={"query": query})
                if base is not None
                else Target(query=query)
            )
            turns[i] = turns[i].model_copy(update={"target": target, "alternatives": []})
            break
    return case.model_copy(update={"conversation": turns})


def system_failed(record: Mapping[str, Any]) -> bool:
    """Whether a stored record holds the system's failure (a score with a failure reason,
    or the output's error).

    >>> system_failed({"scores": {"x": {"value": 0.0, "details": {"failure": "syntax"}}}})
    True
    >>> system_failed({"scores": {"x": {"value": 0.0}}, "error": None})
    False
    """
    if record.get("error"):
        return True
    for score in (record.get("scores") or {}).values():
        details = score.get("details") or {}
        if isinstance(details, dict) and isinstance(details.get("failure"), str):
            return True
    return False


def _rescored(
    record: dict[str, Any], case: Case, scorers: Mapping[str, Scorer], ctx: ScoringContext
) -> dict[str, Any]:
    from queryeval.scorers import score_case

    output = Output.model_validate(record.get("output") or {})
    scores = {label: score_case(s, case, output, ctx) for label, s in scorers.items()}
    out = dict(record)
    out["scores"] = {k: _score_json(s) for k, s in scores.items()}
    out["passed"] = case_passed(scores, scorers)
    return out


def _score_json(score: Score) -> dict[str, Any]:
    out: dict[str, Any] = {"value": score.value, "status": score.status}
    if score.passed is not None:
        out["passed"] = score.passed
    if score.details:
        out["details"] = score.details
    if score.explanation:
        out["explanation"] = score.explanation
    return out


def _figures(summary: Mapping[str, Any], system: str) -> dict[str, Any]:
    s = (summary.get("systems") or {}).get(system) or {}
    means = {label: sc.get("mean") for label, sc in (s.get("scorers") or {}).items()}
    return {
        "cases": s.get("cases"),
        "passed": s.get("passed"),
        "pass_rate": s.get("pass_rate"),
        "means": means,
    }


def apply_overlay(
    run_dir: Path, suite: SuiteConfig, cases: Sequence[Case], overlay: Overlay, ctx: ScoringContext
) -> dict[str, Any]:
    """Re-score the run in `run_dir` under `overlay` (see the module docstring); write and
    return `overlay-<name>.json`'s content."""
    from queryeval.scorers import build_scorers
    from queryeval.stats import summarize

    records = read_records(run_dir)
    present = {str(r.get("case_id")) for r in records}
    cases = [c for c in cases if c.id in present]  # a --filter/--limit run: its cases only
    scorers = build_scorers(suite)
    applied = overlay.applied
    by_id = {c.id: c for c in cases}
    unknown = sorted(set(applied) - set(by_id))
    kept_cases = [
        corrected_case(c, applied[c.id]) if c.id in applied and applied[c.id].gold else c
        for c in cases
        if not (c.id in applied and applied[c.id].drop)
    ]
    kept = {c.id: c for c in kept_cases}
    systems = list(dict.fromkeys(str(r.get("system")) for r in records))
    new_records: list[dict[str, Any]] = []
    changed: dict[str, dict[str, Any]] = {}
    for record in records:
        case_id = str(record.get("case_id"))
        entry = applied.get(case_id)
        if entry is None:
            if case_id in kept:
                new_records.append(record)
            continue
        info = changed.setdefault(
            case_id,
            {
                "case_id": case_id,
                "action": entry.action,
                "reason": entry.reason,
                "source": entry.source,
                **({"reviewer": entry.reviewer} if entry.reviewer else {}),
                **({"at": entry.at} if entry.at else {}),
                "systems": {},
            },
        )
        if entry.drop:
            info["systems"][record["system"]] = {"original": record.get("passed"), "overlay": None}
            continue
        # the system's failure is kept as it is, whatever the gold
        failed = system_failed(record)
        new = record if failed else _rescored(record, kept[case_id], scorers, ctx)
        info["systems"][record["system"]] = {
            "original": record.get("passed"),
            "overlay": new.get("passed"),
        }
        new_records.append(new)
    original = json.loads((run_dir / SUMMARY).read_text())
    corrected = summarize(suite.name, kept_cases, new_records, scorers, systems, suite.seed)
    corrected = json.loads(json.dumps(corrected, default=str))
    content = {
        "overlay": {
            "name": overlay.name,
            "file": str(overlay.path),
            "sha256": overlay.sha256,
            "entries": len(overlay.entries),
            "applied": len(applied),
            "proposed": len(overlay.entries) - len(applied),
            "unknown_cases": unknown,
            **({"provenance": overlay.provenance} if overlay.provenance else {}),
        },
        "cases": {
            "original": len(cases),
            "overlay": len(kept_cases),
            "dropped": sum(1 for e in applied.values() if e.drop and e.case_id in by_id),
            "corrected": sum(1 for e in applied.values() if e.gold and e.case_id in by_id),
        },
        "systems": {
            s: {"original": _figures(original, s), "overlay": _figures(corrected, s)}
            for s in systems
        },
        "changed": list(changed.values()),
    }
    (run_dir / overlay_file(overlay.name)).write_text(
        json.dumps(content, indent=1, ensure_ascii=False, default=str) + "\n"
    )
    from queryeval.audit._report import overlay_html

    (run_dir / overlay_file(overlay.name, ".html")).write_text(overlay_html(content))
    return content


def apply_overlays(
    run_dir: Path, suite: SuiteConfig, cases: Sequence[Case], ctx: ScoringContext
) -> list[dict[str, Any]]:
    """Every overlay the suite lists applied to the run in `run_dir` (the one call a run
    makes at its end; nothing when the suite lists none)."""
    from queryeval.config import load_overlays

    return [apply_overlay(run_dir, suite, cases, o, ctx) for o in load_overlays(suite)]


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def overlay_lines(content: Mapping[str, Any]) -> list[str]:
    """Console lines: per system, the pass rate and each scorer's mean on the original golds
    and under the overlay, side by side, then the changed cases."""
    o = content["overlay"]
    c = content["cases"]
    lines = [
        f"overlay {o['name']} (sha256 {o['sha256'][:12]}): {c['corrected']} corrected, "
        f"{c['dropped']} dropped, {o['proposed']} proposed (not applied); "
        f"{c['overlay']} of {c['original']} cases kept"
    ]
    for system, figs in content["systems"].items():
        a, b = figs["original"], figs["overlay"]
        parts = [f"pass rate {_fmt(a['pass_rate'])} -> {_fmt(b['pass_rate'])}"]
        for label, mean in a["means"].items():
            parts.append(f"{label} {_fmt(mean)} -> {_fmt(b['means'].get(label))}")
        lines.append(f"  {system}: " + "; ".join(parts))
    for case in content["changed"][:20]:
        verdicts = ", ".join(
            f"{s} {v['original']}->{v['overlay']}" for s, v in case["systems"].items()
        )
        lines.append(f"  {case['case_id']}: {case['action']} ({case['reason']}): {verdicts}")
    return lines
