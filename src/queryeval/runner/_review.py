"""Human review: per-case verdict overrides and gold corrections from a review file,
applied by `queryeval run --review FILE` and `queryeval report --review FILE`.

A review file is YAML:

    overrides:
      - {case_id: q07, system: rag, scorer: judge, verdict: pass, note: "...", reviewer: ana}
    golds:
      - {case_id: q12, gold: "The corrected answer.", note: "...", reviewer: bo}

or CSV with the columns `case_id, system, scorer, verdict, note, reviewer` (one override a
row; `system` empty or `*`: every system). An override replaces the scorer's verdict
(value 1.0 for pass, 0.0 for fail, status ok) and keeps the machine's in
`details.review.original`, so every report can show it as an override; the case verdict is
recomputed. Overrides whose original score had a verdict measure the judge-human agreement
(Cohen's kappa per scorer; a reviewer who also confirms verdicts makes it meaningful).

A gold correction replaces the case's main gold (a text: the query of a query suite, the
answer of a RAG one; or a whole target mapping) before scoring, so it needs scoring: `run`
applies it, `report` refuses it (it re-scores nothing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from queryeval.cases import Case, Score
from queryeval.errors import InputError
from queryeval.metrics import agreement
from queryeval.runner._review_file import GoldCorrection, Override, Review

if TYPE_CHECKING:
    from queryeval.log import (
        Record,
        ReviewedRecord,
        ReviewFile,
        ReviewSummary,
        ScoreRecord,
    )
    from queryeval.scorers import Scorer

# --- gold corrections -------------------------------------------------------------------


def apply_golds(cases: Sequence[Case], review: Review) -> list[Case]:
    """The cases with the review's golds in place (copies of the corrected cases); each
    corrected case records `metadata.gold_correction` (note, reviewer, the gold it had)."""
    by_id = {g.case_id: g for g in review.golds}
    unknown = set(by_id) - {c.id for c in cases}
    if unknown:
        first = next(g for g in review.golds if g.case_id in unknown)
        raise InputError(f"gold correction for unknown case {first.case_id!r}", path=first.where)
    return [_corrected(c, by_id[c.id]) if c.id in by_id else c for c in cases]


def _gold_of(target: Mapping[str, Any]) -> str:
    """The main text of a dumped target (query or answer), else its JSON."""
    for key in ("query", "answer"):
        value = target.get(key)
        if isinstance(value, Mapping) and value.get("text"):
            return str(value["text"])
    import orjson

    return orjson.dumps({k: v for k, v in target.items() if v is not None}).decode()


def _corrected(case: Case, fix: GoldCorrection) -> Case:
    data = case.model_dump(mode="json", exclude_defaults=False)
    turns = data["conversation"]
    index = next((i for i in range(len(turns) - 1, -1, -1) if turns[i].get("target")), None)
    if index is None:
        raise InputError(f"case {case.id!r} has no gold to correct", path=fix.where)
    target = turns[index]["target"]
    main = target[0] if isinstance(target, list) else target
    if isinstance(fix.gold, dict):
        new = dict(fix.gold)
    else:
        new = dict(main)
        if main.get("query"):
            new["query"] = {**main["query"], "text": fix.gold}
        elif main.get("answer"):
            new["answer"] = {**main["answer"], "text": fix.gold}
        else:
            raise InputError(
                f"case {case.id!r}: a text gold replaces a query or an answer; give a target "
                "mapping for this case",
                path=fix.where,
            )
    turns[index]["target"] = [new, *target[1:]] if isinstance(target, list) else new
    data["metadata"] = {
        **data.get("metadata", {}),
        "gold_correction": {
            "note": fix.note,
            "reviewer": fix.reviewer,
            "original": _gold_of(main),
        },
    }
    return Case.model_validate(data)


# --- verdict overrides ------------------------------------------------------------------


def _matches(o: Override, rec: Record) -> bool:
    return o.case_id == str(rec["case_id"]) and o.system in (None, str(rec["system"]))


def apply_overrides(
    records: Sequence[Record], review: Review, scorers: Mapping[str, Scorer]
) -> list[Record]:
    """The records with the review's verdicts in place of the scorers' (copies of the
    records it changes; the others are returned as they are). `scorers` (label -> Scorer)
    decides the case verdict again. InputError for an override that matches no record."""
    from queryeval.runner._pipeline import case_passed

    for o in review.overrides:
        if o.scorer not in scorers:
            raise InputError(
                f"unknown scorer {o.scorer!r}; the run has: {', '.join(scorers)}", path=o.where
            )
        if not any(_matches(o, r) for r in records):
            system = f" and system {o.system!r}" if o.system else ""
            raise InputError(f"no record for case {o.case_id!r}{system}", path=o.where)
    out: list[Record] = []
    for rec in records:
        mine = [o for o in review.overrides if _matches(o, rec)]
        if not mine:
            out.append(rec.copy())
            continue
        scores = {k: v.copy() for k, v in (rec.get("scores") or {}).items()}
        for o in mine:
            scores[o.scorer] = _overridden(scores.get(o.scorer), o)
        built = {k: Score.model_construct(**v) for k, v in scores.items()}
        out.append({**rec, "scores": scores, "passed": case_passed(built, dict(scorers))})
    return out


def _overridden(score: ScoreRecord | None, o: Override) -> ScoreRecord:
    score = score or {"value": None, "status": "ok"}
    details = dict(score.get("details") or {})
    previous = details.pop("review", None)
    original = (previous or {}).get("original") or {
        "status": score.get("status", "ok"),
        "value": score.get("value"),
        "passed": score.get("passed"),
        **({"failure": details["failure"]} if details.get("failure") else {}),
        **({"explanation": score["explanation"]} if score.get("explanation") else {}),
    }
    details.pop("failure", None)  # the human's verdict stands; the reason stays in `original`
    details["review"] = {
        "verdict": "pass" if o.verdict else "fail",
        "note": o.note,
        "reviewer": o.reviewer,
        "original": original,
    }
    by = f" by {o.reviewer}" if o.reviewer else ""
    return {
        "value": 1.0 if o.verdict else 0.0,
        "status": "ok",
        "passed": o.verdict,
        "details": details,
        "explanation": f"overridden{by}: {o.note}" if o.note else f"overridden{by}",
    }


def review_agreement(records: Sequence[Record]) -> dict[str, dict[str, Any]]:
    """Judge-human agreement per scorer from the overridden scores whose original had a
    verdict: n, accuracy, Cohen's kappa (None when undefined), and how many overrides
    changed the verdict. Reads records that `apply_overrides` returned."""
    pairs: dict[str, tuple[list[float], list[float]]] = {}
    counts: dict[str, int] = {}
    for rec in records:
        for label, score in (rec.get("scores") or {}).items():
            review = (score.get("details") or {}).get("review")
            if not review:
                continue
            counts[label] = counts.get(label, 0) + 1
            original = review.get("original") or {}
            if original.get("status") != "ok" or original.get("passed") is None:
                continue
            judge, human = pairs.setdefault(label, ([], []))
            judge.append(1.0 if original["passed"] else 0.0)
            human.append(1.0 if review["verdict"] == "pass" else 0.0)
    out: dict[str, dict[str, Any]] = {}
    for label, n in counts.items():
        judge, human = pairs.get(label, ([], []))
        out[label] = {"overrides": n, "compared": len(judge)}
        if judge:
            got = agreement(judge, human)
            changed = got.judge_only_positive + got.human_only_positive
            out[label].update(accuracy=got.accuracy, kappa=got.kappa, changed=changed)
    return out


def review_section(review: Review, records: Sequence[Record]) -> ReviewSummary:
    """What summary.json holds under `review`: the file, counts and agreement per scorer."""
    return {**review.describe(), "agreement": review_agreement(records)}


def reviewed_scores(review: Review, records: Sequence[Record]) -> ReviewFile:
    """What review.json holds: the file, and for each record a review changed, its case
    verdict and overridden scores (`queryeval.log.read_log` puts them over the stored
    records, so comparisons, the run history and the exporters read what the reports show)."""
    changed: list[ReviewedRecord] = []
    for rec in records:
        scores = rec.get("scores") or {}
        if mine := {k: s for k, s in scores.items() if (s.get("details") or {}).get("review")}:
            system, case_id, passed = rec["system"], rec["case_id"], rec.get("passed")
            changed.append({"system": system, "case_id": case_id, "passed": passed, "scores": mine})
    return {"file": str(review.path), "records": changed}
