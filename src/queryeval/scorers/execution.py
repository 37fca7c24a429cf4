"""Execution scorers: `executes`, `execution_match` (EX), `results_f1`, `results_match_legacy`.

The predicted query runs once per case on the sandboxed engine, whichever of these scorers
ask for it; each gold runs once ever (cached on disk). A case may accept several golds
(`case.targets`, any-of): the best comparison counts and the matching gold is recorded.

A prediction that did not run is judged by `queryeval.engines.blame`: the query's fault is
a failure (0, reason kept); a valid query the engine cannot run is unscored. A gold that
fails is the suite's problem, never the system's: the case is unscored, with the reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from queryeval.cases import Case, Output, Query, Score, Target
from queryeval.errors import InputError
from queryeval.scorers._base import Scorer, ScoringContext
from queryeval.scorers._comparisons import comparison_memo
from queryeval.scorers._policy import comparison_policy, policy_problem


class ExecutionOptions(BaseModel):
    """Options shared by the execution scorers."""

    model_config = ConfigDict(extra="forbid")

    database: str | None = Field(
        default=None, description="database when the case names none (gold query's "
        "database, metadata.database); default: the suite's only database"
    )  # fmt: skip
    attempt: Literal["final", "first"] = "final"
    comparison: dict[str, Any] = Field(
        default_factory=dict, description="compare_results policy; overrides suite.comparison"
    )
    rule: Literal["queryeval", "spider_legacy", "bird_legacy", "spider2_legacy"] = Field(
        default="queryeval",
        description="the verdict's rule: queryeval's comparison, or a published benchmark "
        "script reproduced with its quirks (docs/benchmarks.md)",
    )
    keep_distinct: bool = Field(
        default=False,
        description="spider_legacy: keep DISTINCT (the official --keep_distinct flag)",
    )

    @field_validator("comparison")
    @classmethod
    def _typed_policy(cls, v: dict[str, Any]) -> dict[str, Any]:
        return comparison_policy(v)


def target_query(target: Target) -> Query | None:
    """The target's gold query as a model (a bare string is shorthand for its text)."""
    query = target.query
    if isinstance(query, str):
        return Query(text=query)
    return query


def check_comparison(policy: Any, where: str) -> None:
    """An InputError for a policy `compare_results` cannot honour (an unknown key, a value
    of the wrong type or out of range), naming the key and what it expects."""
    problem = policy_problem(policy)
    if problem is not None:
        loc, message = problem
        raise InputError(message, where=".".join([where, *map(str, loc)]))


def case_database(case: Case, fallback: str | None, ctx: ScoringContext) -> str | None:
    """The database of a case: the gold query's, else ``metadata.database``, else
    ``fallback`` (a scorer's option), else the suite's only database."""
    for target in case.targets:
        query = target_query(target)
        if query is not None and query.database:
            return query.database
    if case.metadata.get("database"):
        return str(case.metadata["database"])
    if fallback:
        return fallback
    names = list(ctx.suite.databases) if ctx.suite is not None else []
    return names[0] if len(names) == 1 else None


@dataclass
class Gold:
    """One accepted answer: its rows (when it ran) or why it could not be used."""

    index: int
    source: str  # "query" | "result"
    result: Any = None
    query: str | None = None
    problem: str | None = None
    database: str | None = None  # where the gold query ran


@dataclass
class Prediction:
    """The executed prediction of a case."""

    database: str
    query: str
    execution: Any


class _ExecutionScorer(Scorer):
    """Shared plumbing: find the database, run the prediction once, run the golds."""

    forks = True  # pure per case: see Scorer.forks

    Options: ClassVar[type[BaseModel]] = ExecutionOptions
    options: ExecutionOptions
    default_threshold = 1.0
    reads = "query"
    needs_database = True
    needs_gold: ClassVar[bool] = True
    metric_names: ClassVar[tuple[str, ...]] = ()  # the sub-metrics this scorer reports
    uses_variants: ClassVar[bool] = False  # test-suite accuracy: exact on every variant

    def sub_metrics(self) -> frozenset[str]:
        """`exact`, `f1` ...: what `details["metrics"]` holds."""
        return frozenset(self.metric_names)

    def not_applicable(self, case: Case) -> str | None:
        """A case with no gold query and no expected rows cannot be compared."""
        if not self.needs_gold:
            return None
        if any(target_query(t) is not None or t.result is not None for t in case.targets):
            return None
        return "the case has no gold query or expected result"

    def check_inputs(self, cases: Sequence[Case], ctx: ScoringContext) -> None:
        """The comparison policies (suite, cases) can be honoured (the scorer's own option
        is typed when the scorer is built)."""
        if ctx.suite is not None:
            check_comparison(ctx.suite.comparison, "comparison")
        known = set(ctx.suite.databases) if ctx.suite is not None else None
        for case in cases:
            policy = case.metadata.get("comparison")
            if policy is not None:
                check_comparison(policy, f"case {case.id}: metadata.comparison")
            variants = case.metadata.get("variants")
            if variants is None:
                continue
            if not isinstance(variants, list) or not all(isinstance(v, str) for v in variants):
                raise InputError("expected a list of database names",
                                 where=f"case {case.id}: metadata.variants")  # fmt: skip
            unknown = sorted(set(variants) - known) if known is not None else []
            if unknown:
                raise InputError(f"unknown database(s) {', '.join(unknown)}; the suite has "
                                 f"{', '.join(sorted(known or ())) or 'none'}",
                                 where=f"case {case.id}: metadata.variants")  # fmt: skip

    def prepare(self, cases: Sequence[Case], ctx: ScoringContext) -> None:
        """Check the comparison policies before anything runs."""
        self.check_inputs(cases, ctx)

    # -- locating things -----------------------------------------------------------------

    def _database(self, case: Case, ctx: ScoringContext) -> str | None:
        return case_database(case, self.options.database, ctx)

    def _predict(self, case: Case, output: Output, ctx: ScoringContext) -> Prediction | Score:
        from queryeval.scorers._produced import check_output

        attempt = output.final if self.options.attempt == "final" else output.first
        if attempt is None or not (attempt.query or "").strip():  # reached only when called
            failed = check_output(self, case, output, ctx)  # without `score_case`
            assert failed is not None
            return failed
        database = getattr(attempt, "database", None) or self._database(case, ctx)
        if database is None:
            return Score.unscored("no database for this case: set the scorer's 'database', "
                                  "the gold query's 'database' or metadata.database")  # fmt: skip
        query = self._executed(str(attempt.query), role="pred")
        return Prediction(database, query, ctx.execute(database, query))

    def _executed(self, query: str, *, role: Literal["pred", "gold"]) -> str:
        """The text that runs: the query itself, or the legacy rule's rewrite of it."""
        if self.options.rule != "spider_legacy":
            return query
        from queryeval.metrics.benchmarks import spider_legacy_queries

        pred, gold = spider_legacy_queries(
            query if role == "pred" else "",
            query if role == "gold" else "",
            keep_distinct=self.options.keep_distinct,
        )
        return pred if role == "pred" else gold

    def _golds(self, case: Case, ctx: ScoringContext, database: str) -> list[Gold]:
        from queryeval.metrics import ResultSet

        golds: list[Gold] = []
        for i, target in enumerate(case.targets):
            query = target_query(target)
            if query is not None:
                text = self._executed(query.text, role="gold")
                where = query.database or database
                execution = ctx.gold_execution(where, text)
                if execution.ok:
                    golds.append(Gold(i, "query", execution.result, text, database=where))
                else:
                    o = execution.outcome
                    problem = f"gold failed: {o.kind}: {o.message}"
                    golds.append(Gold(i, "query", query=text, problem=problem))
            elif target.result is not None:
                rows = ResultSet(target.result.columns, target.result.rows)
                golds.append(Gold(i, "result", rows))
        return golds

    def _policy(self, case: Case, ctx: ScoringContext) -> dict[str, Any]:
        policy: dict[str, Any] = dict(ctx.suite.comparison) if ctx.suite is not None else {}
        policy.update(self.options.comparison)
        override = case.metadata.get("comparison")
        if isinstance(override, dict):
            policy.update(override)
        return comparison_policy(policy)  # typed: "1e-9" from a case file is a number

    @staticmethod
    def _execution_details(pred: Prediction) -> dict[str, Any]:
        o = pred.execution.outcome
        return {
            "database": pred.database,
            "kind": o.kind,
            "message": o.message,
            "elapsed_s": o.elapsed_s,
            "row_count": o.row_count,
            "truncated": o.truncated,
        }

    # -- scoring -------------------------------------------------------------------------

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:

        pred = self._predict(case, output, ctx)
        if isinstance(pred, Score):
            return pred
        details: dict[str, Any] = {"execution": self._execution_details(pred)}
        if not pred.execution.ok:
            _, fault = ctx.run_prediction(pred.database, pred.query)
            if fault.party == "evaluator":
                return Score.unscored(fault.message, **details)
            why = f"the prediction did not execute ({fault.reason}): {fault.message}"
            return Score.failure(fault.reason, why, **details)  # type: ignore[arg-type]
        if not self.needs_gold:
            return self.from_execution(pred, details)
        golds = self._golds(case, ctx, pred.database)
        if not golds:
            return Score.unscored("the case has no gold query or expected result", **details)
        usable = [g for g in golds if g.problem is None]
        details["gold_problems"] = [{"gold": g.index, "problem": g.problem}
                                    for g in golds if g.problem]  # fmt: skip
        if not usable:
            return Score.unscored("; ".join(str(g.problem) for g in golds), **details)
        dialect = ctx.engine(pred.database).dialect
        return self.from_comparisons(
            pred, usable, self._policy(case, ctx), dialect, details, case, ctx
        )

    def from_execution(self, pred: Prediction, details: dict[str, Any]) -> Score:
        raise NotImplementedError

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
        comparisons = [(gold, self._compare(pred.execution, gold, policy, dialect, case, ctx))
                       for gold in golds]  # fmt: skip
        best_gold, best = max(comparisons, key=lambda c: self.rank(c[1]))
        variants = self._variants(case) if case is not None and self.uses_variants else []
        if variants and ctx is not None:
            outcome = self._on_variants(pred, comparisons, variants, policy, dialect, ctx, case)
            if isinstance(outcome, Score):
                outcome.details = {**details, **outcome.details}
                return outcome
            best_gold, best, details["variants"] = outcome
        every = {
            "exact": 1.0 if best.exact else 0.0,
            "precision": best.precision,
            "recall": best.recall,
            "f1": best.f1,
            "legacy_recall": best.legacy_recall,
        }
        details["metrics"] = {k: v for k, v in every.items() if k in self.metric_names}
        details["matched_gold"] = best_gold.index
        details["gold_source"] = best_gold.source
        details["comparisons"] = [
            {"gold": g.index, "exact": r.exact, "f1": r.f1, "precision": r.precision,
             "recall": r.recall, "legacy_recall": r.legacy_recall, "rows": r.rows,
             "columns": r.columns, "reason": r.reason, "notes": list(r.notes),
             "gold_rows": r.gold_rows, "pred_rows": r.pred_rows}
            for g, r in comparisons
        ]  # fmt: skip
        for entry in details["comparisons"]:  # no scorer of the run reports it: not computed
            if entry["legacy_recall"] is None:
                del entry["legacy_recall"]
        if self.options.rule != "queryeval":
            details["rule"] = self.options.rule
        value = self.value_of(best)
        explanation = "" if best.exact else (best.reason or "results differ")
        return Score(value=value, details=details, explanation=explanation)

    def _compare(self, execution: Any, gold: Gold, policy: dict[str, Any], dialect: str,
                 case: Case | None = None, ctx: ScoringContext | None = None) -> Any:  # fmt: skip
        """compare_results under the policy (made once per run for the scorers that share
        it: see `queryeval.scorers._comparisons`); a legacy rule then decides ``exact``."""
        from queryeval.metrics import compare_results

        extra: dict[str, Any] = (
            {"gold_query": gold.query, "language": dialect} if gold.query else {}
        )
        if ctx is None:
            legacy = "legacy_recall" in self.metric_names  # computed only when reported
            result = compare_results(execution.result, gold.result, **policy, **extra,
                                     legacy=legacy)  # fmt: skip
        else:
            policy, extra = _known_order(policy, extra, gold, ctx)
            memo = comparison_memo(ctx)
            legacy = memo.legacy_wanted or "legacy_recall" in self.metric_names
            result = memo.compare(execution.result, gold.result, policy, extra, legacy)
        if self.options.rule == "queryeval":
            return result
        from queryeval.metrics.benchmarks import (
            bird_legacy_equal,
            spider_legacy_equal,
            spider_legacy_order_matters,
        )

        pred_rows = list(execution.result.rows)
        gold_rows = list(gold.result.rows)
        if self.options.rule == "bird_legacy":
            exact = bird_legacy_equal(pred_rows, gold_rows)
        elif self.options.rule == "spider2_legacy":
            exact = _spider2_verdict(execution.result, gold.result, case)
        else:
            ordered = gold.query is not None and spider_legacy_order_matters(
                gold.query,
                keep_distinct=True,  # the executed gold is already rewritten
            )
            exact = spider_legacy_equal(pred_rows, gold_rows, order_matters=ordered)
        reason = None if exact else (result.reason or f"results differ under {self.options.rule}")
        return replace(result, exact=exact, reason=reason,
                       notes=(*result.notes, f"verdict by {self.options.rule}"))  # fmt: skip

    # -- test-suite accuracy: the same verdict on every database variant -------------------

    @staticmethod
    def _variants(case: Case) -> list[str]:
        variants = case.metadata.get("variants") or []
        return [str(v) for v in variants] if isinstance(variants, list) else []

    def _on_variants(
        self,
        pred: Prediction,
        comparisons: list[tuple[Gold, Any]],
        variants: list[str],
        policy: dict[str, Any],
        dialect: str,
        ctx: ScoringContext,
        case: Case | None = None,
    ) -> tuple[Gold, Any, dict[str, Any]] | Score:
        """The best gold that the prediction matches on the main database and on every
        variant (test-suite accuracy); otherwise the best comparison with ``exact`` False
        and the variant where it failed. A gold failing on a variant is the suite's
        problem: an ``error`` score."""
        ranked = sorted(comparisons, key=lambda c: self.rank(c[1]), reverse=True)
        first_failure: tuple[str, str] | None = None
        for gold, result in ranked:
            if not result.exact:
                continue
            if gold.query is None:  # expected rows: nothing to run on a variant
                return gold, result, {"checked": 0, "note": "expected rows: variants skipped"}
            for name in variants:
                run = ctx.execute(name, pred.query)
                if not run.ok:
                    o = run.outcome
                    first_failure = first_failure or (
                        name,
                        f"did not execute ({o.kind}): {o.message}",
                    )
                    break
                gold_run = ctx.gold_execution(name, gold.query)
                if not gold_run.ok:
                    o = gold_run.outcome
                    return Score.failed(f"gold failed on variant {name}: {o.kind}: {o.message}")
                variant = Gold(gold.index, "query", gold_run.result, gold.query, database=name)
                other = self._compare(run, variant, policy, dialect, case, ctx)
                if not other.exact:
                    first_failure = first_failure or (name, other.reason or "results differ")
                    break
            else:
                return gold, result, {"checked": len(variants)}
        best_gold, best = ranked[0]
        if first_failure is None:
            return best_gold, best, {"checked": 0}
        name, why = first_failure
        failed = replace(best, exact=False, reason=f"on database variant {name}: {why}")
        return best_gold, failed, {"checked": len(variants), "failed_on": name, "reason": why}

    def rank(self, result: Any) -> tuple[float, ...]:
        """Which gold counts when several are accepted: the best by this scorer's value."""
        return (self.value_of(result), 1.0 if result.exact else 0.0, result.f1)

    def value_of(self, result: Any) -> float:
        raise NotImplementedError

    def aggregate(self, cases: Sequence[Case], scores: Sequence[Score]) -> dict[str, Any]:
        """Counts of execution outcome kinds, gold problems, and which gold matched."""
        outcomes = Counter(
            s.details["execution"]["kind"] for s in scores if "execution" in s.details
        )
        matched = Counter(
            str(s.details["matched_gold"]) for s in scores if "matched_gold" in s.details
        )
        gold_problems = sum(1 for s in scores if s.details.get("gold_problems"))
        return {
            "outcomes": dict(sorted(outcomes.items())),
            "gold_problem_cases": gold_problems,
            "matched_gold": dict(sorted(matched.items())),
        }


class ExecutesScorer(_ExecutionScorer):
    """1 when the predicted query runs (outcome `ok`), else a failure (0); a valid query the
    engine cannot run is unscored (see `queryeval.engines.blame`)."""

    needs_gold = False
    metric_names = ("executes",)

    def from_execution(self, pred: Prediction, details: dict[str, Any]) -> Score:
        details["metrics"] = {"executes": 1.0}
        return Score(value=1.0, details=details)


class ExecutionMatchScorer(_ExecutionScorer):
    """Execution accuracy (Spider/BIRD EX, seed 003): 1 when the result equals a gold's
    under the comparison policy, else 0."""

    metric_names = ("exact",)
    uses_variants = True

    def aggregate(self, cases: Sequence[Case], scores: Sequence[Score]) -> dict[str, Any]:
        """The shared counts, plus for interactions (SParC/CoSQL: ``metadata.interaction``)
        the share whose every turn matched (the official ``joint_all``); an interaction
        with an unscored turn is left out."""
        out = super().aggregate(cases, scores)
        turns: dict[str, list[Score]] = {}
        for case, score in zip(cases, scores, strict=True):
            key = case.metadata.get("interaction")
            if key is not None:
                turns.setdefault(str(key), []).append(score)
        judged = [t for t in turns.values() if all(s.status == "ok" for s in t)]
        if judged:
            right = sum(all(s.value == 1.0 for s in t) for t in judged)
            out["interactions"] = {"count": len(judged), "all_turns_exact": right / len(judged),
                                   "left_out": len(turns) - len(judged)}  # fmt: skip
        return out

    def value_of(self, result: Any) -> float:
        return 1.0 if result.exact else 0.0


class ResultsF1Scorer(_ExecutionScorer):
    """Row-level F1 of the predicted result against the best gold (partial credit)."""

    default_threshold = 1.0
    metric_names = ("precision", "recall", "f1")

    def value_of(self, result: Any) -> float:
        return float(result.f1)


class ResultsMatchLegacyScorer(_ExecutionScorer):
    """Seed 002's "results match": expected rows found / expected rows (keys lower-cased,
    values as strings, first 100 rows, extra rows never penalised). Kept to compare with
    old numbers; `results_f1` is the default."""

    default_threshold = 0.9
    metric_names = ("legacy_recall",)

    def prepare(self, cases: Sequence[Case], ctx: ScoringContext) -> None:
        """Check the policies, and have the run's comparisons carry `legacy_recall`
        (the other execution scorers then report it too, as one comparison serves all)."""
        super().prepare(cases, ctx)
        comparison_memo(ctx).legacy_wanted = True

    def value_of(self, result: Any) -> float:
        return float(result.legacy_recall)


def _known_order(policy: dict[str, Any], extra: dict[str, Any], gold: Gold,
                 ctx: ScoringContext) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """The policy and keywords that give compare_results the gold's ordering as it would
    find it by parsing `gold_query` (the same row policy and sort keys, no note), read once
    per gold (`ScoringContext.gold_order`, kept with the gold cache); unchanged when the
    policy does not ask for it or the gold query cannot be parsed (compare_results notes
    why)."""
    rows = policy.get("rows", "auto")
    if "gold_query" not in extra or "order_keys" in policy or rows not in ("auto", "ordered"):
        return policy, extra
    order = ctx.gold_order(gold.database, extra["gold_query"], extra["language"])
    if order is None:
        return policy, extra
    if order.ordered or rows == "ordered":
        return policy, {"order_keys": order.keys}
    return {**policy, "rows": "multiset"}, {}


def _spider2_verdict(pred: Any, gold: Any, case: Case | None) -> bool:
    """Spider 2.0-lite's column-vector rule, with the case's ``metadata.spider2``
    (``condition_cols``, ``ignore_order``)."""
    from queryeval.metrics.benchmarks import spider2_column_value, spider2_legacy_equal

    settings = case.metadata.get("spider2", {}) if case is not None else {}
    settings = settings if isinstance(settings, dict) else {}

    def columns(result: Any) -> list[list[Any]]:
        out = []
        for i in range(result.num_columns):
            data = result.column_data(i)
            values = data.to_pylist() if hasattr(data, "to_pylist") else list(data)
            out.append(spider2_column_value(values))
        return out

    return spider2_legacy_equal(
        columns(pred),
        columns(gold),
        condition_cols=[int(i) for i in settings.get("condition_cols") or []],
        ignore_order=bool(settings.get("ignore_order", False)),
    )
