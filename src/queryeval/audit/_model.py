"""What an audit finds: one `Finding` per (case, gold, kind), with its evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# every kind of finding an audit reports, in the order its report lists them
KINDS = (
    "gold_fails",
    "nondeterministic",
    "non_discriminating",
    "unknown_literal",
    "disputed",
    "conflicting_golds",
)


@dataclass
class Finding:
    """A problem with one gold of one case: its `kind` (one of `KINDS`), a one-line
    `message`, and the `evidence` that lets anyone re-check it (the query, the database,
    the rows)."""

    case_id: str
    kind: str
    message: str
    gold: int = 0
    evidence: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The finding as audit.json stores it.

        >>> Finding("c1", "gold_fails", "no such table").record()["kind"]
        'gold_fails'
        """
        return {
            "case_id": self.case_id,
            "gold": self.gold,
            "kind": self.kind,
            "message": self.message,
            "evidence": self.evidence,
        }


@dataclass
class AuditReport:
    """Every finding of an audit, and what it covered: golds checked, golds it could not
    run (no database), the checks not made and why."""

    suite: str
    findings: list[Finding] = field(default_factory=list)
    golds: int = 0
    cases: int = 0
    not_executable: int = 0
    systems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unusable: list[str] = field(default_factory=list)  # databases the evaluator cannot use

    def counts(self) -> dict[str, int]:
        """Findings by kind (every kind, 0 included).

        >>> AuditReport("s", [Finding("a", "disputed", "")]).counts()["disputed"]
        1
        """
        out = dict.fromkeys(KINDS, 0)
        for f in self.findings:
            out[f.kind] = out.get(f.kind, 0) + 1
        return out

    def summary(self) -> dict[str, Any]:
        """The audit's header in audit.json's companion file."""
        return {
            "suite": self.suite,
            "cases": self.cases,
            "golds": self.golds,
            "not_executable": self.not_executable,
            "unusable_databases": self.unusable,
            "systems": self.systems,
            "counts": self.counts(),
            "notes": self.notes,
        }
