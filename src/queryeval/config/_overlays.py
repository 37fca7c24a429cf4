"""Correction overlays (issue 32; docs/audit.md): a file of corrections to a suite's golds,
kept apart from the suite so a run reports its figures on the original golds and on the
corrected ones side by side.

An overlay is a YAML list (or a mapping with `entries:`) or a JSONL file, one entry per
case: `case_id`, then either `gold` (the corrected query: its text, or a mapping with
`text`, `database`, `language`) or `drop: true`, and `reason` and `source` (who says so).
An entry with `proposed: true` is a draft (`queryeval audit --write-overlay`): loaded and
shown, but applied only once a person removes the mark. `reviewer` and `at` (an ISO time)
say who made a correction and when (`queryeval overlay --from-review` fills them in); a
mapping file may carry `provenance:` (where an imported set of corrections comes from:
repository, file, its sha256). Every problem is an InputError naming the file and the line.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from queryeval.errors import InputError


class OverlayGold(BaseModel):
    """A corrected gold query; `database` and `language` default to the original's."""

    model_config = ConfigDict(extra="forbid")

    text: str
    database: str | None = None
    language: str | None = None


class OverlayEntry(BaseModel):
    """One correction: the case, the corrected gold or `drop`, why, and who says so."""

    model_config = ConfigDict(extra="forbid")

    case_id: str
    gold: OverlayGold | None = None
    drop: bool = False
    reason: str
    source: str
    proposed: bool = False
    kind: str | None = None  # the audit finding it came from (a draft's)
    reviewer: str | None = None  # who made the correction
    at: str | None = None  # when (ISO 8601)
    line: int | None = None  # where it is written (not from the file)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, dict):
            gold = data.get("gold")
            if isinstance(gold, str):
                data = {**data, "gold": {"text": gold}}
            if isinstance(data.get("case_id"), int):
                data = {**data, "case_id": str(data["case_id"])}
            if hasattr(data.get("at"), "isoformat"):  # YAML reads an unquoted time as one
                data = {**data, "at": data["at"].isoformat()}
        return data

    @model_validator(mode="after")
    def _one_of(self) -> OverlayEntry:
        if self.drop == (self.gold is not None):
            raise ValueError("expected exactly one of `gold` (the corrected query) or `drop: true`")
        if not self.gold and not self.drop:
            raise ValueError("expected `gold` or `drop: true`")
        return self

    @property
    def action(self) -> Literal["drop", "correct"]:
        """What the entry does to its case."""
        return "drop" if self.drop else "correct"


@dataclass
class Overlay:
    """A loaded overlay: its name (the file's stem), the sha256 of its bytes, its entries
    (every one; `applied` those not `proposed`)."""

    name: str
    path: Path
    sha256: str
    entries: list[OverlayEntry] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def applied(self) -> dict[str, OverlayEntry]:
        """{case id: entry} for the entries a run applies (not `proposed`)."""
        return {e.case_id: e for e in self.entries if not e.proposed}


def load_overlay(path: str | Path, *, name: str | None = None) -> Overlay:
    """Read an overlay file (YAML, or JSONL when its name ends in .jsonl); an InputError
    names the file and line of the first problem (a case listed twice included).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "fix.yaml"
    >>> _ = p.write_text("- {case_id: c1, drop: true, reason: typo, source: me}\\n")
    >>> o = load_overlay(p); o.name, o.entries[0].action, o.entries[0].line
    ('fix', 'drop', 1)
    """
    path = Path(path)
    if not path.is_file():
        raise InputError("no such overlay file", path=path)
    raw = path.read_bytes()
    provenance: dict[str, Any] = {}
    if path.suffix.lower() == ".jsonl":
        items = _jsonl(path, raw)
    else:
        items, provenance = _yaml(path)
    entries: list[OverlayEntry] = []
    seen: dict[str, int | None] = {}
    for data, line in items:
        if not isinstance(data, dict):
            raise InputError(
                "expected an entry: case_id, gold or drop, reason, source", path=path, line=line
            )
        try:
            entry = OverlayEntry.model_validate({k: v for k, v in data.items() if k != "line"})
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"]) or None
            raise InputError(f"{first['msg']}", path=path, line=line, where=where) from None
        if entry.case_id in seen:
            raise InputError(
                f"case {entry.case_id!r} is listed twice (first at line {seen[entry.case_id]})",
                path=path,
                line=line,
            )
        seen[entry.case_id] = line
        entry.line = line
        entries.append(entry)
    digest = hashlib.sha256(raw).hexdigest()
    return Overlay(name or path.stem, path, digest, entries, provenance)


def _jsonl(path: Path, raw: bytes) -> list[tuple[Any, int]]:
    import orjson

    out: list[tuple[Any, int]] = []
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((orjson.loads(line), n))
        except orjson.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc}", path=path, line=n) from None
    return out


def _yaml(path: Path) -> tuple[list[tuple[Any, int]], dict[str, Any]]:
    from queryeval._yaml import load_yaml

    doc = load_yaml(path)
    data = doc.data
    base: tuple[Any, ...] = ()
    provenance: dict[str, Any] = {}
    if isinstance(data, dict) and set(data) <= {"entries", "name", "description", "provenance"}:
        provenance = data.get("provenance") or {}
        if not isinstance(provenance, dict):
            raise InputError(
                "expected a mapping (repository, file, sha256, ...)",
                path=path,
                line=doc.line_of(("provenance",)),
                where="provenance",
            )
        data, base = data.get("entries"), ("entries",)
    if data is None:
        return [], provenance
    if not isinstance(data, list):
        raise InputError(
            "expected a list of entries (case_id, gold or drop, reason, source)",
            path=path,
            line=doc.line_of(()),
        )
    return [(item, doc.line_of((*base, i)) or 1) for i, item in enumerate(data)], provenance


def load_overlays(suite: Any) -> list[Overlay]:
    """The overlays a suite lists (`overlays:`, paths relative to the suite's folder); a
    missing or bad file is an InputError at its line of the suite."""
    out: list[Overlay] = []
    names: set[str] = set()
    for i, rel in enumerate(getattr(suite, "overlays", []) or []):
        path = Path(rel)
        if not path.is_absolute():
            path = suite.base_dir / path
        if not path.is_file():
            raise suite.entry_error(("overlays", i), f"no such overlay file: {path}")
        overlay = load_overlay(path)
        if overlay.name in names:
            raise suite.entry_error(
                ("overlays", i), f"two overlays named {overlay.name!r} (the file's stem names it)"
            )
        names.add(overlay.name)
        out.append(overlay)
    return out
