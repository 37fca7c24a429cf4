"""Reading a human review file (YAML or CSV) into overrides and gold corrections; see
`queryeval.runner._review` for the format and what applying it does."""

from __future__ import annotations

import csv
import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval._yaml import load_yaml
from queryeval.cases import Target
from queryeval.errors import InputError

if TYPE_CHECKING:
    from queryeval.log import ReviewInfo

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

    def describe(self) -> ReviewInfo:
        """What run.json records: the file, its hash and its counts."""
        return {
            "file": str(self.path),
            "sha256": hashlib.sha256(self.path.read_bytes()).hexdigest(),
            "overrides": len(self.overrides),
            "gold_corrections": len(self.golds),
        }


def _fields(
    entry: Any, keys: set[str], required: tuple[str, ...], path: Path, where: str, line: int | None
) -> dict[str, Any]:
    """An entry's keys as texts (a gold as given), its `where` (file:line) added; InputError
    at its file, line and place when it is not a mapping, or a key is unknown or missing."""
    err = functools.partial(InputError, path=path, line=line, where=where)
    if not isinstance(entry, Mapping):
        raise err("expected a mapping")
    if unknown := set(entry) - keys:
        names = ", ".join(sorted(map(str, unknown)))
        raise err(f"unknown key(s) {names}; expected {', '.join(sorted(keys))}")
    out = {k: v if k == "gold" else "" if v is None else str(v).strip() for k, v in entry.items()}
    for key in required:
        if not out.get(key):
            raise err(f"{key} is required")
    return {**out, "where": f"{path}:{line}" if line else str(path)}


def _override(entry: Any, path: Path, where: str, line: int | None) -> Override:
    fields = _fields(entry, _OVERRIDE_KEYS, ("case_id", "scorer", "verdict"), path, where, line)
    verdict = entry["verdict"]
    fields["verdict"] = _VERDICTS.get(str(verdict).strip().lower(), verdict)
    if not isinstance(fields["verdict"], bool):
        raise InputError(f"verdict must be pass or fail, got {verdict!r}", path=path,
                         line=line, where=where)  # fmt: skip
    fields["system"] = fields.get("system") if fields.get("system") not in ("", "*") else None
    return Override(**fields)


def _gold(entry: Any, path: Path, where: str, line: int | None) -> GoldCorrection:
    fields = _fields(entry, _GOLD_KEYS, ("case_id", "gold"), path, where, line)
    if not isinstance(fields["gold"], str | dict):
        raise InputError("gold must be a text or a target mapping", path=path, line=line,
                         where=where)  # fmt: skip
    try:
        if isinstance(fields["gold"], dict):
            Target.model_validate(fields["gold"])
    except ValueError as exc:
        first = " ".join(str(exc).splitlines()[:3])
        raise InputError(f"gold is not a target: {first}", path=path, line=line,
                         where=where) from None  # fmt: skip
    return GoldCorrection(**fields)


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
