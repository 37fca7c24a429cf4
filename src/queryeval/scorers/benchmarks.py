"""Benchmark-specific scorers: Spider's exact-set-match (`spider_exact_match`) and BIRD's
valid efficiency score (`bird_ves`, opt-in: it times every query many times)."""

from __future__ import annotations

import math
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from queryeval.cases import Case, Output, Score
from queryeval.errors import InputError
from queryeval.scorers._base import Scorer, ScoringContext
from queryeval.scorers.execution import ExecutionMatchScorer, case_database, target_query


class SpiderExactMatchOptions(BaseModel):
    """Options of `spider_exact_match`."""

    model_config = ConfigDict(extra="forbid")

    tables: str | None = Field(
        default=None, description="Spider's tables.json (foreign keys); without it no folding"
    )
    database: str | None = Field(default=None, description="database when the case names none")
    attempt: Literal["final", "first"] = "final"
    legacy: bool = Field(
        default=False,
        description="read both queries with the official process_sql reader, its failures "
        "included (a prediction it cannot read scores as the empty query): the official "
        "evaluation.py verdict",
    )


def _schema(ctx: ScoringContext, database: str) -> dict[str, list[str]]:
    """The database's tables and columns, lower-cased, read once per run."""

    def load() -> dict[str, list[str]]:
        from queryeval.metrics.benchmarks import sqlite_schema

        engine = ctx.engine(database)
        path = getattr(engine, "path", None)
        if engine.dialect == "sqlite" and isinstance(path, Path):
            return sqlite_schema(path)  # tables only, as the original reads them
        tables = engine.schema().get("tables", {})
        return {str(t).lower(): [str(c).lower() for c in cols] for t, cols in tables.items()}

    return ctx.resource(f"spider_schema:{database}", load)


class SpiderExactMatchScorer(Scorer):
    """Spider's exact-set-match (EM) with its per-clause scores and the gold's hardness:
    1 when every clause matches as a set (values ignored, foreign keys folded)."""

    forks = True  # pure per case: see Scorer.forks

    Options: ClassVar[type[BaseModel]] = SpiderExactMatchOptions
    options: SpiderExactMatchOptions
    default_threshold = 1.0
    reads = "query"
    # a static comparison, as Spider's script makes it: the rule's checks that need no
    # engine apply (empty, fenced, a write), the prediction is not executed for it
    judged_by_execution = False

    def sub_metrics(self) -> frozenset[str]:
        """`exact`."""
        return frozenset({"exact"})

    def prepare(self, cases: Sequence[Case], ctx: ScoringContext) -> None:
        """Read tables.json's foreign keys once (by db_id)."""
        from queryeval.importers import expect_list_of_objects, read_json
        from queryeval.metrics.benchmarks import foreign_key_map

        self._kmaps: dict[str, dict[str, str]] = {}
        if self.options.tables is None:
            return
        path = Path(self.options.tables)
        if ctx.suite is not None and not path.is_absolute():
            path = ctx.suite.resolve(self.options.tables)
        for i, entry in enumerate(expect_list_of_objects(read_json(path), path, "schemas")):
            try:
                self._kmaps[str(entry["db_id"])] = foreign_key_map(entry)
            except (KeyError, IndexError, TypeError, ValueError) as error:
                raise InputError(
                    f"not a Spider schema entry ({error!r})", path=path, where=f"item {i}"
                ) from None

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        from queryeval.metrics.benchmarks import SpiderParseError, spider_exact_match

        gold = next((q for q in map(target_query, case.targets) if q is not None), None)
        if gold is None:
            return Score.unscored("the case has no gold query")
        database = case_database(case, self.options.database, ctx)
        if database is None:
            return Score.unscored("no database for this case (the schema resolves columns)")
        attempt = output.final if self.options.attempt == "final" else output.first
        assert attempt is not None and attempt.query  # `score_case` failed the others
        try:
            result = spider_exact_match(
                str(attempt.query),
                gold.text,
                schema=_schema(ctx, database),
                foreign_keys=getattr(self, "_kmaps", {}).get(database, {}),
                legacy=self.options.legacy,
            )
        except SpiderParseError as error:
            return Score.unscored(f"Spider's structure cannot hold the gold query: {error}")
        partial = {
            k: {
                "acc": s.acc,
                "rec": s.rec,
                "f1": s.f1,
                "pred_total": s.pred_total,
                "label_total": s.label_total,
            }
            for k, s in result.partial.items()
        }
        wrong = [k for k, s in result.partial.items() if s.f1 != 1]
        explanation = (
            ""
            if result.exact
            else (f"clauses differ: {', '.join(wrong)}" if wrong else "FROM tables differ")
        )
        if not result.pred_parsed:
            reader = "the official reader" if self.options.legacy else "Spider's structure"
            explanation = f"the prediction does not parse into {reader}; " + explanation
        return Score(
            value=1.0 if result.exact else 0.0,
            explanation=explanation,
            details={
                "metrics": {"exact": 1.0 if result.exact else 0.0},
                "hardness": result.hardness,
                "partial": partial,
                "pred_parsed": result.pred_parsed,
            },
        )

    def aggregate(self, cases: Sequence[Case], scores: Sequence[Score]) -> dict[str, Any]:
        """Spider's table: exact match per hardness, and partial accuracy / recall / F1 per
        clause, averaged as the official script averages them."""
        from queryeval.metrics.benchmarks import HARDNESS, PARTS

        levels = [*HARDNESS, "all"]
        count: dict[str, int] = defaultdict(int)
        exact: dict[str, float] = defaultdict(float)
        sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0, 0.0, 0])
        for s in scores:
            if s.status != "ok" or "partial" not in s.details:
                continue
            for level in (s.details["hardness"], "all"):
                count[level] += 1
                exact[level] += s.value or 0.0
                for part, p in s.details["partial"].items():
                    acc = sums[(level, part)]
                    if p["pred_total"] > 0:
                        acc[0] += p["acc"]
                        acc[1] += 1
                    if p["label_total"] > 0:
                        acc[2] += p["rec"]
                        acc[3] += 1
        table: dict[str, Any] = {}
        for level in levels:
            if not count[level]:
                continue
            partial = {}
            for part in PARTS:
                a_sum, a_n, r_sum, r_n = sums[(level, part)]
                acc_mean = a_sum / a_n if a_n else 0.0
                rec_mean = r_sum / r_n if r_n else 0.0
                f1 = (
                    1.0
                    if acc_mean == 0 and rec_mean == 0
                    else 2 * acc_mean * rec_mean / (acc_mean + rec_mean)
                )
                partial[part] = {"acc": acc_mean, "rec": rec_mean, "f1": f1}
            table[level] = {
                "count": count[level],
                "exact": exact[level] / count[level],
                "partial": partial,
            }
        return {"by_hardness": table}

    @classmethod
    def report_tables(cls, aggregate: dict[str, Any]) -> list[tuple[str, list[list[Any]]]]:
        """Spider's table: exact match and count per hardness."""
        table = aggregate.get("by_hardness") or {}
        rows: list[list[Any]] = [["hardness", "count", "exact match"]]
        rows += [[level, v["count"], round(v["exact"], 3)] for level, v in table.items()]
        return [("Spider exact match by hardness", rows)] if len(rows) > 1 else []


# -- BIRD VES ------------------------------------------------------------------------------


class BirdVesOptions(BaseModel):
    """Options of `bird_ves`."""

    model_config = ConfigDict(extra="forbid")

    reward: Literal["r_ves", "ves"] = Field(
        default="r_ves",
        description="r_ves: BIRD mini-dev's reward buckets of the time ratio; ves: BIRD dev's "
        "square root of the ratio itself",
    )
    repeats: int = Field(default=100, ge=1, le=10_000, description="timings per query (BIRD: 100)")
    gold_timeout_s: float = Field(default=300.0, gt=0, description="time limit of each gold run")
    timeout_s: float = Field(default=30.0, gt=0, description="time limit of each predicted run")
    database: str | None = None
    attempt: Literal["final", "first"] = "final"
    comparison: dict[str, Any] = Field(
        default_factory=lambda: {"rows": "set", "columns": "by_position"},
        description="what counts as a correct result (BIRD: a set of rows, by position)",
    )


def reward(ratio: float, rule: str = "r_ves") -> float:
    """The score of one correct prediction from its time ratio (gold time / predicted time):
    ``ves`` (BIRD dev): ``sqrt(ratio)``; ``r_ves`` (BIRD mini-dev): ``sqrt`` of a bucket:
    1.25 from 2x faster than the gold, 1 from as fast, 0.75 from half as fast, 0.5 from a
    quarter, else 0.25. BIRD prints these x100.

    >>> reward(4.0, "ves"), reward(0.25, "ves")
    (2.0, 0.5)
    >>> reward(1.0, "r_ves"), reward(0.3, "r_ves")
    (1.0, 0.7071067811865476)
    """
    if ratio <= 0:
        return 0.0
    if rule == "ves":
        return math.sqrt(ratio)
    if ratio >= 2:
        bucket = 1.25
    elif ratio >= 1:
        bucket = 1.0
    elif ratio >= 0.5:
        bucket = 0.75
    elif ratio >= 0.25:
        bucket = 0.5
    else:
        bucket = 0.25
    return math.sqrt(bucket)


def clean_ratios(ratios: Sequence[float]) -> list[float]:
    """BIRD's outlier rule: keep the ratios strictly within 3 standard deviations (population)
    of their mean.

    >>> clean_ratios([1.0] * 10 + [100.0])
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    """
    mean = statistics.fmean(ratios)
    std = statistics.pstdev(ratios)
    return [r for r in ratios if mean - 3 * std < r < mean + 3 * std]


class BirdVesScorer(Scorer):
    """BIRD's valid efficiency score of one case: ``sqrt(mean(gold time / predicted time))``
    when the result is correct, else 0 (reported x100 by BIRD; here on the 0-1 scale of the
    ratio's square root, so 1.0 means as fast as the gold). Opt-in: each query runs
    ``repeats`` times. The gold runs under its own time limit (``gold_timeout_s``), so a slow
    gold is never charged to the model: a gold over its limit leaves the case unscored."""

    Options: ClassVar[type[BaseModel]] = BirdVesOptions
    options: BirdVesOptions
    blocking: ClassVar[bool] = True
    reads = "query"
    needs_database = True

    def sub_metrics(self) -> frozenset[str]:
        """VES, the result's exactness and the time ratio."""
        return frozenset({"ves", "exact", "time_ratio"})

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        match = ExecutionMatchScorer(
            ExecutionMatchScorer.Options.model_validate(
                {
                    "database": self.options.database,
                    "attempt": self.options.attempt,
                    "comparison": self.options.comparison,
                }
            )
        )
        verdict = match.score(case, output, ctx)
        if verdict.status != "ok" or verdict.failure_reason is not None:
            return verdict  # unscored, or the prediction's failure with its reason
        details: dict[str, Any] = {"execution": verdict.details.get("execution")}
        if not verdict.value:
            details["metrics"] = {"ves": 0.0, "exact": 0.0}
            return Score(
                value=0.0, details=details, explanation=verdict.explanation or "incorrect result"
            )
        database = str(verdict.details["execution"]["database"])
        attempt = output.final if self.options.attempt == "final" else output.first
        assert attempt is not None and attempt.query
        gold_index = int(verdict.details.get("matched_gold", 0))
        gold = target_query(case.targets[gold_index])
        if gold is None:  # matched expected rows: no gold query to time
            return Score.unscored("the matching gold is expected rows: nothing to time")
        name = gold.database or database
        pred_engine = _timing_engine(ctx, name, self.options.timeout_s)
        gold_engine = _timing_engine(ctx, name, self.options.gold_timeout_s)
        ratios = []
        for _ in range(self.options.repeats):
            pred_time = _timed(pred_engine, attempt.query)
            if pred_time is None:
                details["metrics"] = {"ves": 0.0, "exact": 1.0}
                return Score(
                    value=0.0,
                    details=details,
                    explanation="the prediction timed out or failed while timed",
                )
            gold_time = _timed(gold_engine, gold.text)
            if gold_time is None:
                return Score.unscored(
                    "the gold query failed or passed gold_timeout_s while timed", **details
                )
            ratios.append(gold_time / max(pred_time, 1e-9))
        kept = clean_ratios(ratios) or ratios
        ratio = statistics.fmean(kept)
        value = reward(ratio, self.options.reward)
        details["metrics"] = {"ves": value, "exact": 1.0, "time_ratio": ratio}
        details["timings"] = {"repeats": len(ratios), "kept": len(kept)}
        return Score(value=value, details=details)


def _timing_engine(ctx: ScoringContext, database: str, timeout_s: float) -> Any:
    """An engine on ``database`` with its own time limit (one per limit and run)."""
    from queryeval.engines import build_engine

    def build() -> Any:
        assert ctx.suite is not None
        config = ctx.suite.databases[database]
        options = {**config.options, "timeout_s": timeout_s}
        copy = config.model_copy(update={"options": options})
        return build_engine(database, copy, ctx.suite.base_dir, ctx.cache_dir)

    return ctx.resource(f"bird_ves_engine:{database}:{timeout_s!r}", build)


def _timed(engine: Any, query: str) -> float | None:
    """Seconds one execution took (its rows fetched), or None when it failed or timed out."""
    start = time.perf_counter()
    run = engine.execute(query)
    elapsed = time.perf_counter() - start
    return elapsed if run.ok else None
