"""Human review (`queryeval run|report --review FILE`, docs/reports.md): a review file (YAML:
`overrides` and `golds`; or CSV: overrides) read into pydantic models; a gold correction
replaces a case's main gold before scoring (`run`; `report` re-scores nothing and refuses
it); an override replaces a scorer's verdict after, the machine's kept in
`details.review.original`, and gives the judge-human agreement.
"""

from __future__ import annotations

import csv
import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from queryeval._validation import first_problem
from queryeval.cases import Case, Score, Target
from queryeval.errors import InputError

if TYPE_CHECKING:
    from queryeval.log import (
        Record,
        ReviewedRecord,
        ReviewFile,
        ReviewInfo,
        ReviewSummary,
    )
    from queryeval.scorers import Scorer

E = TypeVar("E", bound="_Entry")
_VERDICTS = {"pass": True, "fail": False, "true": True, "false": False, "1": True, "0": False}


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    case_id: str = Field(min_length=1)
    note: str = ""
    reviewer: str = ""
    where: str = ""  # file:line, set by `load_review`

    @field_validator("case_id", "note", "reviewer", "scorer", mode="before", check_fields=False)
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else str(value).strip()


class Override(_Entry):
    """One human verdict on one scorer's score of one case (system None: every system).

    >>> Override(case_id="q1", system="*", scorer="judge", verdict="pass").system is None
    True
    """

    system: str | None = None
    scorer: str = Field(min_length=1)
    verdict: bool

    @field_validator("system", mode="before")
    @classmethod
    def _every(cls, value: Any) -> str | None:
        return None if (text := cls._text(value)) in ("", "*") else text

    @field_validator("verdict", mode="before")
    @classmethod
    def _verdict(cls, value: Any) -> bool:
        if (verdict := _VERDICTS.get(str(value).strip().lower())) is None:
            raise ValueError(f"expected pass or fail, got {value!r}")
        return verdict


class GoldCorrection(_Entry):
    """A case's gold replaced (a text, or a target mapping), with why and by whom."""

    gold: str | dict[str, Any]

    @field_validator("gold")
    @classmethod
    def _target(cls, gold: str | dict[str, Any]) -> str | dict[str, Any]:
        try:
            if isinstance(gold, dict):
                Target.model_validate(gold)
        except ValidationError as exc:
            raise ValueError("not a target: " + " ".join(str(exc).splitlines()[:3])) from None
        return gold


@dataclass
class Review:
    """The contents of one review file."""

    path: Path
    overrides: list[Override] = field(default_factory=list)
    golds: list[GoldCorrection] = field(default_factory=list)

    def describe(self) -> ReviewInfo:
        """What run.json records: the file, its hash and its counts."""
        return {
            "file": str(self.path),
            "sha256": hashlib.sha256(self.path.read_bytes()).hexdigest(),
            "overrides": len(self.overrides),
            "gold_corrections": len(self.golds),
        }


def _entry(model: type[E], entry: Any, path: Path, where: str, line: int | None) -> E:
    """`entry` read as a `model`; InputError at its file, line and place."""
    problem = "expected a mapping"
    if isinstance(entry, Mapping):
        try:
            return model.model_validate({**entry, "where": f"{path}:{line}" if line else str(path)})
        except ValidationError as exc:
            keys = ", ".join(k for k in model.model_fields if k != "where")
            loc, kind, message = first_problem(exc, unknown_first=True)
            name = ".".join(map(str, loc))
            problem = {
                "extra_forbidden": f"unknown key {name}; expected some of {keys}",
                "missing": f"{name} is required",
                "string_too_short": f"{name} is required",
            }.get(kind, f"{name}: " + message.removeprefix("Value error, "))
    raise InputError(problem, path=path, line=line, where=where)


def load_review(path: str | Path) -> Review:
    """Read a review file (YAML, or CSV by its `.csv` suffix); InputError with the file and
    line on anything that is not a well-formed override or gold correction."""
    from queryeval._yaml import load_yaml

    review = Review(path=Path(path))
    path = review.path
    if not path.is_file():
        raise InputError("review file not found", path=path)
    if path.suffix.lower() == ".csv":
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if missing := {"case_id", "scorer", "verdict"} - set(reader.fieldnames or ()):
                raise InputError(f"missing column(s) {', '.join(sorted(missing))}", path=path,
                                 line=1)  # fmt: skip
            for row in reader:
                entry = {k: v for k, v in row.items() if k and v not in (None, "")}
                review.overrides.append(_entry(Override, entry, path, "row", reader.line_num))
        return review
    doc = load_yaml(path)
    data = doc.data or {}
    if not isinstance(data, Mapping) or set(data) - {"overrides", "golds"}:
        raise InputError("expected a mapping with `overrides` and/or `golds`", path=path)

    def entries(key: str, model: type[E]) -> list[E]:
        if not isinstance(items := data.get(key) or [], list):
            raise InputError("expected a list", path=path, line=doc.line_of((key,)), where=key)
        return [_entry(model, e, path, f"{key}[{i}]", doc.line_of((key, i)))
                for i, e in enumerate(items)]  # fmt: skip

    review.overrides, review.golds = (
        entries("overrides", Override),
        entries("golds", GoldCorrection),
    )
    return review


# --- gold corrections -------------------------------------------------------------------


def apply_golds(cases: Sequence[Case], review: Review) -> list[Case]:
    """The cases with the review's golds in place (copies of the corrected cases); each
    corrected case records `metadata.gold_correction` (note, reviewer, the gold it had)."""
    by_id = {g.case_id: g for g in review.golds}
    if unknown := [g for g in review.golds if g.case_id not in {c.id for c in cases}]:
        raise InputError(f"gold correction for unknown case {unknown[0].case_id!r}",
                         path=unknown[0].where)  # fmt: skip
    return [_corrected(c, by_id[c.id]) if c.id in by_id else c for c in cases]


def _corrected(case: Case, fix: GoldCorrection) -> Case:
    import orjson

    data = case.model_dump(mode="json", exclude_defaults=False)
    turns = data["conversation"]
    index = next((i for i in range(len(turns) - 1, -1, -1) if turns[i].get("target")), None)
    if index is None:
        raise InputError(f"case {case.id!r} has no gold to correct", path=fix.where)
    target = turns[index]["target"]
    main = target[0] if isinstance(target, list) else target
    key = next((k for k in ("query", "answer") if main.get(k)), None)
    if isinstance(fix.gold, dict):
        new = dict(fix.gold)
    elif key is not None:
        new = {**main, key: {**main[key], "text": fix.gold}}
    else:
        raise InputError(f"case {case.id!r}: a text gold replaces a query or an answer; give "
                         "a target mapping for this case", path=fix.where)  # fmt: skip
    turns[index]["target"] = [new, *target[1:]] if isinstance(target, list) else new
    text = (main.get(key) or {}).get("text") if key else None
    original = text or orjson.dumps({k: v for k, v in main.items() if v is not None}).decode()
    correction = {"note": fix.note, "reviewer": fix.reviewer, "original": str(original)}
    data["metadata"] = {**data.get("metadata", {}), "gold_correction": correction}
    return Case.model_validate(data)


# --- verdict overrides ------------------------------------------------------------------


def _matches(o: Override, rec: Record) -> bool:
    return o.case_id == str(rec["case_id"]) and o.system in (None, str(rec["system"]))


def apply_overrides(
    records: Sequence[Record], review: Review, scorers: Mapping[str, Scorer]
) -> list[Record]:
    """The records with the review's verdicts in place of the scorers' (copies), the case
    verdict decided again; InputError for an override that matches no record."""
    from queryeval.log import overridden_score
    from queryeval.scorers import case_passed

    for o in review.overrides:
        if o.scorer not in scorers:
            raise InputError(f"unknown scorer {o.scorer!r}; the run has: {', '.join(scorers)}",
                             path=o.where)  # fmt: skip
        if not any(_matches(o, r) for r in records):
            system = f" and system {o.system!r}" if o.system else ""
            raise InputError(f"no record for case {o.case_id!r}{system}", path=o.where)
    out: list[Record] = []
    for rec in records:
        if not (mine := [o for o in review.overrides if _matches(o, rec)]):
            out.append(rec.copy())
            continue
        scores: dict[str, Any] = {k: v.copy() for k, v in (rec.get("scores") or {}).items()}
        for o in mine:
            scores[o.scorer] = overridden_score(scores.get(o.scorer), o.verdict, o.note, o.reviewer)
        built = {k: Score.model_construct(**v) for k, v in scores.items()}
        out.append({**rec, "scores": scores, "passed": case_passed(built, dict(scorers))})
    return out


def reviewed(review: Review, records: Sequence[Record]) -> tuple[ReviewSummary, ReviewFile]:
    """summary.json's `review` (the file, its counts, and per scorer the judge-human
    agreement of the overrides whose original had a verdict: n, accuracy, Cohen's kappa,
    verdicts changed) and review.json (each changed record's case verdict and overridden
    scores, which `queryeval.log.read_log` puts over the stored records)."""
    from queryeval.metrics import agreement

    changed: list[ReviewedRecord] = []
    pairs: dict[str, tuple[list[float], list[float]]] = {}  # scorer -> judge's, human's
    for rec in records:
        scores = rec.get("scores") or {}
        if not (
            mine := {k: s for k, s in scores.items() if (s.get("details") or {}).get("review")}
        ):
            continue
        system, case_id, passed = rec["system"], rec["case_id"], rec.get("passed")
        changed.append({"system": system, "case_id": case_id, "passed": passed, "scores": mine})
        for label, score in mine.items():
            verdict = score["details"]["review"]
            judge, human = pairs.setdefault(label, ([], []))
            original = verdict.get("original") or {}
            if original.get("status") == "ok" and original.get("passed") is not None:
                judge.append(1.0 if original["passed"] else 0.0)
                human.append(1.0 if verdict["verdict"] == "pass" else 0.0)
    counts = Counter(label for r in changed for label in r["scores"])
    out: dict[str, dict[str, Any]] = {}
    for label, (judge, human) in pairs.items():
        out[label] = {"overrides": counts[label], "compared": len(judge)}
        if judge:
            got = agreement(judge, human)
            changed_verdicts = got.judge_only_positive + got.human_only_positive
            out[label].update(accuracy=got.accuracy, kappa=got.kappa, changed=changed_verdicts)
    return {**review.describe(), "agreement": out}, {"file": str(review.path), "records": changed}
