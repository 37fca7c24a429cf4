"""`verified_match`: execution match, then the same comparison on database variants derived
from the case's database and both queries; a difference found there is a failure with a
minimal, replayable counterexample (docs/verified.md).

Tiers, the deciding one in ``details.tier``:

- ``ex``: `execution_match` itself (its options, comparison policies, legacy rules and
  test-suite variants); EX = 0 ends here. Variants are built for DuckDB, SQLite, the
  embedded KQL engine, Cypher on the embedded ArcadeDB and a server reached by a
  SQLAlchemy URL (a sample copied locally). A case they cannot check (another engine,
  expected rows instead of a gold query, a database whose values no script can write, a
  witness found only on a copy not proven faithful, kept in
  ``details.unverified_witness``) also ends here, with ``details.unverified`` saying why.
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
    judge: bool = Field(
        default=False,
        description="the optional judge tier: EX = 0 cases whose results differ only by "
        "extra columns, row order or rounding go to the suite's judge, which may restore "
        "them in the separate `with_judge` figure (never the headline)",
    )
    judge_rubric: str = Field(default="verified_equivalence",
                              description="the judge tier's rubric")  # fmt: skip
    judge_threshold: float = Field(
        default=0.5, ge=0, le=1, description="a judge score >= this restores the case"
    )


class VerifiedMatchScorer(ExecutionMatchScorer):
    """EX, then variants: 1 only when the prediction matches the gold on the database and
    on every variant tried; a difference is shown as a minimal witness."""

    Options: ClassVar[type[BaseModel]] = VerifiedOptions
    options: VerifiedOptions
    metric_names = ("ex", "verified", "with_judge")  # type: ignore[assignment]

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
        score.details["metrics"] = {"ex": ex, "verified": ex, "with_judge": ex}
        score.details["tier"] = "ex"
        if ex == 0.0 and ctx is not None and self.options.judge:
            self._judge_tier(score, pred, golds, policy, dialect, case, ctx)
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
        if outcome.unverified is not None:  # a witness only the evaluator's copy may hold
            score.details["unverified"] = outcome.unverified
            score.details["unverified_witness"] = outcome.unverified_witness
            return score
        score.details["tier"] = "variants"
        score.details["variants"] = {**outcome.details(), "seed": self.options.seed}
        if outcome.counterexample is None:
            score.details["note"] = NOT_PROOF
            return score
        witness = outcome.counterexample
        score.details["counterexample"] = witness
        score.details["metrics"] = {"ex": 1.0, "verified": 0.0, "with_judge": 0.0}
        score.value = 0.0
        score.passed = None
        score.explanation = (f"differs from the gold on a database variant "
                             f"({witness['variant']}, {witness['rows']} row(s)): "
                             f"{witness.get('reason') or 'results differ'}")  # fmt: skip
        return score

    def _judge_tier(self, score: Score, pred: Prediction, golds: list[Gold],
                    policy: dict[str, Any], dialect: str, case: Case | None,
                    ctx: ScoringContext) -> None:  # fmt: skip
        """EX = 0: when the results differ only in ways a question may not care about
        (`forgivable`), the judge sees the evidence and may restore the case in
        `with_judge` (tier `judge`). The headline (`value`, `verified`) never changes; a
        judge that is missing, down or unreadable leaves the tier unscored."""
        from queryeval.judges import HOW_TO_CONFIGURE

        run = pred.execution
        if case is None or run is None or not run.ok or run.result is None:
            return
        found = [(g, forgivable(run.result, g, policy, dialect))
                 for g in golds if g.result is not None]  # fmt: skip
        found = [(g, d) for g, d in found if d]
        if not found:
            return
        gold, differences = found[0]
        record: dict[str, Any] = {"differences": differences, "status": "unscored"}
        score.details["judge_tier"] = record
        judge = ctx.judge()
        if judge is None:
            record["reason"] = HOW_TO_CONFIGURE
            return
        inputs = {
            "question": case.question,
            "schema": _schema_text(ctx, pred.database),
            "gold_query": gold.query or "(expected rows, no query)",
            "generated_query": pred.query,
            "gold_result": _result_text(gold.result),
            "generated_result": _result_text(run.result),
            "differences": "; ".join(differences),
        }
        verdict = _await(judge.judge(self.options.judge_rubric, inputs))
        record["judge"] = verdict.details()
        if verdict.status != "ok" or verdict.score is None:
            record["reason"] = verdict.reasoning or "the judge gave no verdict"
            return
        record["status"] = "ok"
        record["score"] = verdict.score
        if verdict.score >= self.options.judge_threshold:
            score.details["tier"] = "judge"
            score.details["metrics"]["with_judge"] = 1.0

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
        judged = [s.details["judge_tier"] for s in scored if "judge_tier" in s.details]
        with_judge = sum(1 for s in scored if s.details["metrics"].get("with_judge") == 1.0)
        out["verified"] = {
            "cases": len(scored),
            "ex": ex,
            "verified": verified,
            "difference": ex - verified,
            "with_judge": with_judge,
            "judge_tier": {
                "sent": sum(1 for j in judged if "judge" in j),
                "restored": with_judge - verified,
                "kept": sum(1 for j in judged if j["status"] == "ok") - (with_judge - verified),
                "unscored": sum(1 for j in judged if j["status"] != "ok"),
                "note": "with_judge is verified plus the EX = 0 cases the judge restored; "
                "it is never the headline",
            },
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
        judged = v.get("judge_tier") or {}
        if judged.get("sent") or judged.get("unscored"):
            rows += [["with_judge = 1 (not the headline)", v["with_judge"]],
                     ["judge tier: restored", judged["restored"]],
                     ["judge tier: unscored", judged["unscored"]]]  # fmt: skip
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


def forgivable(result: Any, gold: Gold, policy: dict[str, Any], dialect: str) -> list[str]:
    """How a prediction's `result` differs from the gold's, when it differs only in ways a
    question may not care about: extra columns, row order, rounding (each tried alone,
    then all together); [] when it differs otherwise (or not at all).

    >>> g = Gold(0, "query", (["a"], [(1.0,), (2.0,)]), "SELECT a FROM t ORDER BY a")
    >>> forgivable((["a", "b"], [(2.0, 0), (1.0, 0)]), g, {}, "sqlite")
    ['extra columns', 'row order']
    >>> forgivable((["a"], [(1.004,), (2.0,)]), g, {}, "sqlite")
    ['rounding']
    >>> forgivable((["a"], [(3.0,), (2.0,)]), g, {}, "sqlite")
    []
    """
    from queryeval.metrics import compare_results

    base: dict[str, Any] = {k: v for k, v in policy.items()
            if k in ("null_equals_null", "naive_timezone", "date_equals_midnight")}  # fmt: skip
    base.update(gold_query=gold.query, language=_language(dialect))
    relax: dict[str, dict[str, Any]] = {
        "extra columns": {"columns": "gold_subset"},
        "row order": {"rows": "multiset"},
        "rounding": {"abs_tol": 0.005, "rel_tol": 0.005},
    }

    def same(**extra: Any) -> bool:
        try:
            return bool(compare_results(result, gold.result, **{**base, **extra}).exact)
        except Exception:  # a comparison that cannot be made forgives nothing
            return False

    if same():
        return []
    alone = [name for name, extra in relax.items() if same(**extra)]
    if alone:
        return alone
    together: dict[str, Any] = {k: v for extra in relax.values() for k, v in extra.items()}
    if not same(**together):
        return []
    return [name for name, extra in relax.items()
            if not same(**{k: v for k, v in together.items() if k not in extra})]  # fmt: skip


def _language(dialect: str) -> str:
    return dialect if dialect in ("kql", "cypher") else "sql"


def _result_text(result: Any, rows: int = 20) -> str:
    """A result as the judge reads it: columns, then the first rows."""
    from queryeval.metrics import ResultSet

    try:
        if not isinstance(result, ResultSet):
            result = ResultSet(*result) if isinstance(result, tuple) else result
        lines = [" | ".join(map(str, result.columns))]
        lines += [" | ".join(_show(v) for v in row) for row in list(result.rows)[:rows]]
        if result.num_rows > rows:
            lines.append(f"... {result.num_rows - rows} more rows")
        return "\n".join(lines)
    except Exception:
        return str(result)[:2000]


def _schema_text(ctx: ScoringContext, database: str) -> str:
    """The database's schema for the judge ('(no schema given)' when none can be read)."""
    try:
        return str(ctx.resource(f"judge-schema:{database}",
                                lambda: ctx.engine(database).schema()))  # fmt: skip
    except Exception:
        return "(no schema given)"


def _await(coroutine: Any) -> Any:
    """Run a judge's coroutine from this synchronous scorer: on its own event loop in a
    worker thread (the scorer may be called on the runner's running loop)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _show(value: Any) -> str:
    return "NULL" if value is None else repr(value)


def _kind(variant: str) -> str:
    """A variant's kind: its name's first words ('boundary', 'NULLs in', 'random')."""
    for prefix in ("sample", "boundary", "ties", "NULLs", "duplicates", "one row", "random"):
        if variant.startswith(prefix):
            return prefix.lower()
    return "empty table" if variant.endswith(" empty") else variant.split(" ")[0]
