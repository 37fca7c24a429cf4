"""`verified_match`: execution match, then the same comparison on database variants derived
from the case's database and both queries; a difference found there is a failure with a
minimal, replayable counterexample (docs/verified.md).

Tiers, the deciding one in ``details.tier``:

- ``ex``: `execution_match` itself (its options, comparison policies, legacy rules and
  test-suite variants); EX = 0 ends here. A case the variants cannot check (an engine
  other than DuckDB or SQLite, expected rows instead of a gold query, a database whose
  values no script can write) also ends here, with ``details.unverified`` saying why.
- ``variants``: EX = 1 and the variants ran: 0 with ``details.counterexample`` when the
  prediction differs from the gold on one, else 1.

``details.metrics`` holds ``ex`` and ``verified`` for every scored case, so reports show the
two figures side by side per system. No counterexample found is not a proof of
equivalence: the search is bounded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from queryeval.cases import Case, Score
from queryeval.scorers._base import ScoringContext
from queryeval.scorers.execution import ExecutionMatchScorer, ExecutionOptions, Gold, Prediction

NOT_PROOF = ("no counterexample found is not a proof of equivalence: the variants are a "
             "bounded search (docs/verified.md)")  # fmt: skip


class VerifiedOptions(ExecutionOptions):
    """`execution_match`'s options, and the bounds of the search on variants."""

    seed: int = Field(default=0, description="the variants' seed (same seed, same witnesses)")
    variants: int = Field(default=40, ge=1, le=1000, description="variants tried a case")
    rows_per_table: int = Field(
        default=200, ge=1, le=100_000, description="rows of each table the variants start from"
    )
    shrink_steps: int = Field(default=200, ge=0, le=10_000,
                              description="databases tried while shrinking a witness")  # fmt: skip
    observed_only: bool = Field(
        default=False,
        description="variants hold only values the database holds (no NULL where it has "
        "none, no value it never shows): witnesses then assume nothing",
    )


class VerifiedMatchScorer(ExecutionMatchScorer):
    """EX, then variants: 1 only when the prediction matches the gold on the database and
    on every variant tried; a difference is shown as a minimal witness."""

    Options: ClassVar[type[BaseModel]] = VerifiedOptions
    options: VerifiedOptions
    metric_names = ("ex", "verified")  # type: ignore[assignment]

    def from_comparisons(
        self,
        pred: Prediction,
        golds: list[Gold],
        policy: dict[str, Any],
        dialect: str,
        details: dict[str, Any],
        case: Case | None = None,
        ctx: ScoringContext | None = None,
    ) -> Score:
        score = super().from_comparisons(pred, golds, policy, dialect, details, case, ctx)
        ex = 1.0 if score.value == 1.0 else 0.0
        score.details["metrics"] = {"ex": ex, "verified": ex}
        score.details["tier"] = "ex"
        if ex == 0.0 or ctx is None:
            return score
        matched = next(g for g in golds if g.index == score.details.get("matched_gold"))
        why = self._unverifiable(pred, matched, ctx)
        if why is not None:
            score.details["unverified"] = why
            return score
        assert matched.query is not None
        try:
            verifier = self._verifier(pred.database, ctx)
            outcome = verifier.check(
                matched.query, pred.query, self._differs(matched, policy, dialect, case, ctx)
            )
        except Exception as exc:  # the evaluator could not search: EX stands, said so
            score.details["unverified"] = (
                f"variants could not be built: {type(exc).__name__}: {exc}"
            )
            return score
        score.details["tier"] = "variants"
        score.details["variants"] = {**outcome.details(), "seed": self.options.seed}
        if outcome.counterexample is None:
            score.details["note"] = NOT_PROOF
            return score
        witness = outcome.counterexample
        score.details["counterexample"] = witness
        score.details["metrics"] = {"ex": 1.0, "verified": 0.0}
        score.value = 0.0
        score.passed = None
        score.explanation = (f"differs from the gold on a database variant "
                             f"({witness['variant']}, {witness['rows']} row(s)): "
                             f"{witness.get('reason') or 'results differ'}")  # fmt: skip
        return score

    def _unverifiable(self, pred: Prediction, gold: Gold, ctx: ScoringContext) -> str | None:
        from queryeval.verify import supported

        if gold.query is None:
            return "the gold is expected rows, not a query: nothing to run on variants"
        if gold.database not in (None, pred.database):
            return "the gold ran on another database than the prediction"
        return supported(ctx.engine(pred.database))

    def _verifier(self, database: str, ctx: ScoringContext) -> Any:
        from queryeval.verify import Settings, Verifier

        o = self.options
        settings = Settings(seed=o.seed, variants=o.variants, rows=o.rows_per_table,
                            steps=o.shrink_steps, observed_only=o.observed_only)  # fmt: skip
        key = f"verify:{database}:{settings!r}"
        return ctx.resource(key, lambda: Verifier(ctx.engine(database), settings))

    def _differs(self, gold: Gold, policy: dict[str, Any], dialect: str, case: Case | None,
                 ctx: ScoringContext) -> Any:  # fmt: skip
        """Why a prediction's execution differs from the gold's on a variant (None: equal),
        by the same comparison (policy, legacy rule) as on the database."""

        def differs(pred_run: Any, gold_run: Any) -> str | None:
            on_variant = Gold(gold.index, "query", gold_run.result, gold.query,
                              database=gold.database)  # fmt: skip
            result = self._compare(pred_run, on_variant, policy, dialect, case, ctx)
            return None if result.exact else (result.reason or "results differ")

        return differs

    def aggregate(self, cases: Sequence[Case], scores: Sequence[Score]) -> dict[str, Any]:
        """EX's counts, and: cases per deciding tier, EX and verified counts and their
        difference, why cases stayed unverified, the counterexamples' variant kinds and
        assumptions."""
        out = super().aggregate(cases, scores)
        scored = [s for s in scores if s.status == "ok" and "metrics" in s.details]
        tiers = Counter(str(s.details.get("tier", "ex")) for s in scored)
        ex = sum(1 for s in scored if s.details["metrics"].get("ex") == 1.0)
        verified = sum(1 for s in scored if s.details["metrics"].get("verified") == 1.0)
        witnesses = [s.details["counterexample"] for s in scored if "counterexample" in s.details]
        kinds = Counter(_kind(w.get("variant", "")) for w in witnesses)
        assumed = Counter(a["kind"] for w in witnesses for a in w.get("assumptions", []))
        unverified = Counter(str(s.details["unverified"]).split(":")[0]
                             for s in scored if "unverified" in s.details)  # fmt: skip
        out["verified"] = {
            "cases": len(scored),
            "ex": ex,
            "verified": verified,
            "difference": ex - verified,
            "tiers": dict(sorted(tiers.items())),
            "counterexamples": len(witnesses),
            "counterexample_kinds": dict(sorted(kinds.items())),
            "assumptions": dict(sorted(assumed.items())),
            "witnesses_without_assumptions": sum(1 for w in witnesses if not w.get("assumptions")),
            "unverified": dict(sorted(unverified.items())),
            "note": NOT_PROOF,
        }
        return out

    def report_columns(self, score: Score) -> dict[str, Any]:
        """The deciding tier and, for a counterexample, its witness as text (its rows, both
        results, what it assumes): shown per case in the HTML and Excel reports."""
        details = score.details or {}
        if "tier" not in details:
            return {}
        out: dict[str, Any] = {"tier": details["tier"]}
        if details.get("unverified"):
            out["unverified"] = details["unverified"]
        witness = details.get("counterexample")
        if isinstance(witness, dict):
            out["counterexample"] = witness_text(witness)
        return out

    @classmethod
    def report_tables(cls, aggregate: dict[str, Any]) -> list[tuple[str, list[list[Any]]]]:
        """EX beside verified, the difference, the deciding tiers and the counterexample
        kinds (console)."""
        v = aggregate.get("verified")
        if not v:
            return []
        rows: list[list[Any]] = [["figure", "cases"], ["EX = 1", v["ex"]],
                                 ["verified = 1", v["verified"]],
                                 ["difference (counterexamples)", v["difference"]]]  # fmt: skip
        rows += [[f"tier {t}", n] for t, n in v["tiers"].items()]
        rows += [[f"counterexample: {k}", n] for k, n in v["counterexample_kinds"].items()]
        rows += [[f"assumes: {k}", n] for k, n in v["assumptions"].items()]
        rows += [[f"unverified: {k}", n] for k, n in v["unverified"].items()]
        return [(f"verified verdicts ({v['note']})", rows)]


def witness_text(witness: dict[str, Any]) -> str:
    """A counterexample as readable text: the variant, its rows per table, both results,
    its assumptions.

    >>> print(witness_text({"variant": "boundary t.a > 30", "rows": 1, "minimal": True,
    ...     "tables": {"t": {"columns": ["a"], "rows": [[30]]}},
    ...     "gold": {"columns": ["a"], "rows": [[30]]},
    ...     "prediction": {"columns": ["a"], "rows": []},
    ...     "assumptions": []}))
    variant boundary t.a > 30: 1 row (minimal)
    t(a):
      (30)
    gold -> a:
      (30)
    prediction -> a:
      (no rows)
    """
    size = witness.get("rows", 0)
    lines = [
        f"variant {witness.get('variant')}: {size} row{'s' if size != 1 else ''}"
        + (" (minimal)" if witness.get("minimal") else " (shrinking stopped at its bound)")
    ]
    for table, content in (witness.get("tables") or {}).items():
        lines.append(f"{table}({', '.join(map(str, content.get('columns', [])))}):")
        lines += [f"  ({', '.join(_show(v) for v in row)})" for row in content.get("rows", [])]
    for side in ("gold", "prediction"):
        result = witness.get(side) or {}
        if "error" in result:
            lines.append(f"{side} -> {result['error']}")
            continue
        lines.append(f"{side} -> {', '.join(map(str, result.get('columns', [])))}:")
        rows = result.get("rows") or []
        lines += [f"  ({', '.join(_show(v) for v in row)})" for row in rows[:20]]
        if len(rows) > 20:
            lines.append(f"  ... {result.get('row_count', len(rows)) - 20} more")
        if not rows:
            lines.append("  (no rows)")
    lines += [f"assumes: {a.get('text')}" for a in witness.get("assumptions") or []]
    return "\n".join(lines)


def _show(value: Any) -> str:
    return "NULL" if value is None else repr(value)


def _kind(variant: str) -> str:
    """A variant's kind: its name's first words ('boundary', 'NULLs in', 'random')."""
    for prefix in ("sample", "boundary", "ties", "NULLs", "duplicates", "one row", "random"):
        if variant.startswith(prefix):
            return prefix.lower()
    return "empty table" if variant.endswith(" empty") else variant.split(" ")[0]
