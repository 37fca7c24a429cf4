"""Reading a human review file (YAML or CSV) into overrides and gold corrections; see
`queryeval.runner._review` for the format and what applying it does."""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queryeval._yaml import load_yaml
from queryeval.cases import Target
from queryeval.errors import InputError

_VERDICTS = {"pass": True, "fail": False, "true": True, "false": False, "1": True, "0": False}
_OVERRIDE_KEYS = {"case_id", "system", "scorer", "verdict", "note", "reviewer"}
_GOLD_KEYS = {"case_id", "gold", "note", "reviewer"}


@dataclass(frozen=True)
class Override:
    """One human verdict on one scorer's score of one case (system None: every system)."""

    case_id: str
    system: str | None
    scorer: str
    verdict: bool
    note: str = ""
    reviewer: str = ""
    where: str = ""


@dataclass(frozen=True)
class GoldCorrection:
    """A case's gold replaced, with why and by whom."""

    case_id: str
    gold: str | dict[str, Any]
    note: str = ""
    reviewer: str = ""
    where: str = ""


@dataclass
class Review:
    """The contents of one review file."""

    path: Path
    overrides: list[Override] = field(default_factory=list)
    golds: list[GoldCorrection] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        """What run.json records: the file, its hash and its counts."""
        return {
            "file": str(self.path),
            "sha256": hashlib.sha256(self.path.read_bytes()).hexdigest(),
            "overrides": len(self.overrides),
            "gold_corrections": len(self.golds),
        }


def _verdict(value: Any, path: Path, where: str, line: int | None) -> bool:
    if isinstance(value, bool):
        return value
    key = str(value).strip().lower()
    if key not in _VERDICTS:
        raise InputError(
            f"verdict must be pass or fail, got {value!r}", path=path, line=line, where=where
        )
    return _VERDICTS[key]


def _text(entry: Mapping[str, Any], key: str) -> str:
    value = entry.get(key)
    return "" if value is None else str(value).strip()


def _override(entry: Any, path: Path, where: str, line: int | None) -> Override:
    if not isinstance(entry, Mapping):
        raise InputError("expected a mapping", path=path, line=line, where=where)
    unknown = set(entry) - _OVERRIDE_KEYS
    if unknown:
        raise InputError(
            f"unknown key(s) {', '.join(sorted(map(str, unknown)))}; expected "
            f"{', '.join(sorted(_OVERRIDE_KEYS))}",
            path=path,
            line=line,
            where=where,
        )
    for key in ("case_id", "scorer", "verdict"):
        if not _text(entry, key):
            raise InputError(f"{key} is required", path=path, line=line, where=where)
    system = _text(entry, "system")
    return Override(
        case_id=_text(entry, "case_id"),
        system=None if system in ("", "*") else system,
        scorer=_text(entry, "scorer"),
        verdict=_verdict(entry["verdict"], path, where, line),
        note=_text(entry, "note"),
        reviewer=_text(entry, "reviewer"),
        where=f"{path}:{line}" if line else str(path),
    )


def _gold(entry: Any, path: Path, where: str, line: int | None) -> GoldCorrection:
    if not isinstance(entry, Mapping) or set(entry) - _GOLD_KEYS:
        raise InputError(
            f"expected a mapping with {', '.join(sorted(_GOLD_KEYS))}",
            path=path,
            line=line,
            where=where,
        )
    gold = entry.get("gold")
    if not _text(entry, "case_id") or not (isinstance(gold, str | dict) and gold):
        raise InputError(
            "case_id and gold (a text or a target mapping) are required",
            path=path,
            line=line,
            where=where,
        )
    if isinstance(gold, dict):
        try:
            Target.model_validate(gold)
        except ValueError as exc:
            first = str(exc).splitlines()[:3]
            raise InputError(
                f"gold is not a target: {' '.join(first)}", path=path, line=line, where=where
            ) from None
    return GoldCorrection(
        case_id=_text(entry, "case_id"),
        gold=gold,
        note=_text(entry, "note"),
        reviewer=_text(entry, "reviewer"),
        where=f"{path}:{line}" if line else str(path),
    )


def load_review(path: str | Path) -> Review:
    """Read a review file (YAML, or CSV by its `.csv` suffix); InputError with the file and
    line on anything that is not a well-formed override or gold correction."""
    path = Path(path)
    if not path.is_file():
        raise InputError("review file not found", path=path)
    review = Review(path=path)
    if path.suffix.lower() == ".csv":
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = {"case_id", "scorer", "verdict"} - set(reader.fieldnames or ())
            if missing:
                raise InputError(
                    f"missing column(s) {', '.join(sorted(missing))}", path=path, line=1
                )
            for row in reader:
                line = reader.line_num
                entry = {k: v for k, v in row.items() if k and v not in (None, "")}
                review.overrides.append(_override(entry, path, "row", line))
        return review
    doc = load_yaml(path)
    data = doc.data or {}
    if not isinstance(data, Mapping) or set(data) - {"overrides", "golds"}:
        raise InputError("expected a mapping with `overrides` and/or `golds`", path=path)

    def entries(key: str) -> list[tuple[Any, str, int | None]]:
        items = data.get(key) or []
        if not isinstance(items, list):
            raise InputError("expected a list", path=path, line=doc.line_of((key,)), where=key)
        return [(e, f"{key}[{i}]", doc.line_of((key, i))) for i, e in enumerate(items)]

    review.overrides = [_override(e, path, w, line) for e, w, line in entries("overrides")]
    review.golds = [_gold(e, path, w, line) for e, w, line in entries("golds")]
    return review
