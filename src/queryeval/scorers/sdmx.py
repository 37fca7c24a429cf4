"""Scorer `term_selection` (seed 001): SDMX indicator/term selection precision and recall."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from queryeval.cases import Case, CaseInfo, Output, Score
from queryeval.metrics import TermSelectionResult
from queryeval.metrics.sdmx import DimensionResult, TermRef, compare_terms
from queryeval.scorers._base import ScoringContext, ShardableScorer


class TermSelectionOptions(BaseModel):
    """Options of `term_selection`; see `queryeval.metrics.term_selection` for the policies."""

    model_config = ConfigDict(extra="forbid")

    match_on: Literal["id", "id_and_name"] = "id"
    absent_dimension: Literal["penalize", "ignore"] = "penalize"
    zero_division: Literal["agreement", "zero", "one", "exclude"] = "agreement"
    ignore_case: bool = False
    value: Literal["macro_f1", "macro_recall", "macro_precision", "micro_f1"] = "macro_f1"
    codelist: str | None = None
    codelist_map: dict[str, str] = {}


def _count(terms: Any) -> int:
    """A term list's length, or the count a summary view keeps instead of the list."""
    return terms if type(terms) is int else len(terms)


def details_text(details: dict[str, Any]) -> str:
    """Seed 001's details cell, rebuilt from a stored score's details."""
    per_dim = details.get("per_dimension")
    if not per_dim:
        return ""
    dims = {
        key: DimensionResult(
            d["dataset_id"],
            d["dimension"],
            tuple(TermRef(i, n) for i, n in d["tp"]),
            tuple(TermRef(i, n) for i, n in d["fp"]),
            tuple(TermRef(i, n) for i, n in d["fn"]),
            d["precision"],
            d["recall"],
            d["in_target"],
            d["counted"],
        )
        for key, d in per_dim.items()
    }
    result = TermSelectionResult(
        dims, None, None, None, None, tuple(details.get("dimensions_not_in_target", ())), 0, 0, 0
    )
    return result.details_text()


class TermSelectionScorer(ShardableScorer):
    """Per-dimension TP/FP/FN; the value is the case's macro F1 unless `value` says otherwise.
    A case passes when its value reaches the threshold (default 1.0: exactly right)."""

    Options = TermSelectionOptions
    default_threshold = 1.0
    reads = "indicator_selection"
    options: TermSelectionOptions

    def sub_metrics(self) -> frozenset[str]:
        """Macro and micro precision, recall and F1 of the case."""
        return frozenset(f"{a}_{m}" for a in ("macro", "micro") for m in ("precision", "recall",
                         "f1"))  # fmt: skip

    def not_applicable(self, case: Case) -> str | None:
        """A case without an `indicator_selection` target."""
        target = case.target
        if target is None or target.indicator_selection is None:
            return "the case has no indicator_selection target"
        return None

    def config_problems(self, suite: Any) -> list[tuple[tuple[str | int, ...], str]]:
        """The `codelist` file exists."""
        return [
            *super().config_problems(suite),
            *self.missing_files(suite, codelist="codelist file"),
        ]

    def prepare(self, cases: Sequence[Case], ctx: ScoringContext) -> None:
        """Load the SDMX-ML codelists once, when the suite names a file."""
        if self.options.codelist and ctx.suite is not None:
            from queryeval.scorers._codelists import load_codelists

            path = ctx.suite.resolve(self.options.codelist)
            ctx.resource(f"codelists:{path}", lambda: load_codelists(path))

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        target = case.target
        if target is None or target.indicator_selection is None:
            return Score.unscored("the case has no indicator_selection target")
        # a failed output never gets here (`score_case`): a selection was produced ([] is
        # a selection of nothing, scored as such)
        final = output.final
        selected = final.indicator_selection if final is not None else None
        unknown: list[dict[str, str]] = []
        gold: Any = target.indicator_selection
        pred: Any = selected or []
        if self.options.codelist and ctx.suite is not None:
            from queryeval.scorers._codelists import check_and_name

            path = ctx.suite.resolve(self.options.codelist)
            lists: dict[str, dict[str, str]] = ctx.resource(f"codelists:{path}", dict)
            pred, unknown = check_and_name(pred, lists, self.options.codelist_map)
            gold, _ = check_and_name(gold, lists, self.options.codelist_map)
        o = self.options
        result = compare_terms(
            pred,
            gold,
            match_on=o.match_on,
            absent_dimension=o.absent_dimension,
            zero_division=o.zero_division,
            ignore_case=o.ignore_case,
        )
        per_dimension, macro_p, macro_r, micro_p, micro_r, not_in_target, tp, fp, fn, _ = result
        metrics = {
            "macro_precision": macro_p,
            "macro_recall": macro_r,
            "macro_f1": result.macro_f1,
            "micro_precision": micro_p,
            "micro_recall": micro_r,
            "micro_f1": result.micro_f1,
        }
        value = metrics[o.value]
        details: dict[str, Any] = {
            "metrics": metrics,
            "counts": {"tp": tp, "fp": fp, "fn": fn},
            "per_dimension": {
                # a DimensionResult's fields by position; terms are plain (id, name) tuples,
                # which orjson writes as arrays without a call back into Python
                key: {
                    "dataset_id": d[0],
                    "dimension": d[1],
                    "precision": d[5],
                    "recall": d[6],
                    "in_target": d[7],
                    "counted": d[8],
                    "tp": d[2],
                    "fp": d[3],
                    "fn": d[4],
                }
                for key, d in per_dimension.items()
            },
            "dimensions_not_in_target": not_in_target,
        }
        if unknown:
            details["unknown_codes"] = unknown
        if value is None:
            return Score(status="unscored", details=details, explanation="0/0 excluded by policy")
        # the verdict given here, not by `finish`: a model attribute set later costs more
        return Score(value=value, passed=self.passes(value), details=details)

    def report_columns(self, score: Score) -> dict[str, Any]:
        """Seed 001's overview columns."""
        metrics = score.details.get("metrics", {})
        return {
            "macro recall": metrics.get("macro_recall"),
            "macro precision": metrics.get("macro_precision"),
            "indicator selection details": details_text(score.details) or score.explanation,
        }

    def aggregate(self, cases: Sequence[CaseInfo], scores: Sequence[Score]) -> dict[str, Any]:
        """Seed 001's dataset metrics (mean macro P/R over cases), pooled micro P/R, and
        per-dimension figures across cases."""
        return self.aggregate_merge([self.aggregate_partial(cases, scores)])

    def aggregate_partial(self, cases: Sequence[CaseInfo], scores: Sequence[Score]) -> _Partial:
        """Counts and the values to average, of part of the scores (see `aggregate_merge`)."""
        part = _Partial()
        dims = part.dims
        for s in scores:
            if s.status != "ok" or "metrics" not in s.details:
                continue
            part.cases += 1
            metrics = s.details["metrics"]
            if metrics["macro_precision"] is not None:
                part.macro_precision.append(metrics["macro_precision"])
            if metrics["macro_recall"] is not None:
                part.macro_recall.append(metrics["macro_recall"])
            counts = s.details.get("counts")
            if counts is None:  # a failure: 0 in the means above, nothing selected to pool
                part.failed += 1
                continue
            part.tp += counts["tp"]
            part.fp += counts["fp"]
            part.fn += counts["fn"]
            for d in s.details["per_dimension"].values():
                if not d["counted"]:
                    continue
                agg = dims.get(d["dimension"])
                if agg is None:
                    agg = dims[d["dimension"]] = _DimensionPartial()
                if d["precision"] is not None:
                    agg.precision.append(d["precision"])
                if d["recall"] is not None:
                    agg.recall.append(d["recall"])
                agg.tp += _count(d["tp"])
                agg.fp += _count(d["fp"])
                agg.fn += _count(d["fn"])
        return part

    def aggregate_merge(self, partials: Sequence[Any]) -> dict[str, Any]:
        """Joins parts exactly, in any order: counts are integers and the means are taken
        with `math.fsum` (correctly rounded) over all the parts' values."""
        from queryeval.metrics.aggregate import mean_or_none

        whole = _Partial()
        for part in partials:
            whole.add(part)
        tp, fp, fn = whole.tp, whole.fp, whole.fn
        return {
            "data_query_metrics": {
                "cases": whole.cases,
                "failed_cases": whole.failed,
                "macro_precision": mean_or_none(whole.macro_precision),
                "macro_recall": mean_or_none(whole.macro_recall),
                "micro_precision": tp / (tp + fp) if tp + fp else None,
                "micro_recall": tp / (tp + fn) if tp + fn else None,
                "tp": tp,
                "fp": fp,
                "fn": fn,
            },
            "per_dimension": {
                name: {
                    "cases": max(len(a.precision), len(a.recall)),
                    "mean_precision": mean_or_none(a.precision),
                    "mean_recall": mean_or_none(a.recall),
                    "micro_precision": a.tp / (a.tp + a.fp) if a.tp + a.fp else None,
                    "micro_recall": a.tp / (a.tp + a.fn) if a.tp + a.fn else None,
                    "tp": a.tp,
                    "fp": a.fp,
                    "fn": a.fn,
                }
                for name, a in sorted(whole.dims.items())
            },
        }


def _floats() -> array[float]:
    return array("d")  # pickled as one block of bytes when a worker sends its part


@dataclass
class _DimensionPartial:
    precision: array[float] = field(default_factory=_floats)
    recall: array[float] = field(default_factory=_floats)
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, other: _DimensionPartial) -> None:
        self.precision.extend(other.precision)
        self.recall.extend(other.recall)
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn


@dataclass
class _Partial:
    """`aggregate`'s state over part of the scores: what it sums, and what it averages."""

    cases: int = 0
    failed: int = 0  # failures (an unusable output): counted in the means, not pooled
    macro_precision: array[float] = field(default_factory=_floats)  # the values present
    macro_recall: array[float] = field(default_factory=_floats)
    tp: int = 0
    fp: int = 0
    fn: int = 0
    dims: dict[str, _DimensionPartial] = field(default_factory=dict)

    def add(self, other: _Partial) -> None:
        self.cases += other.cases
        self.failed += other.failed
        self.macro_precision.extend(other.macro_precision)
        self.macro_recall.extend(other.macro_recall)
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn
        for name, dim in other.dims.items():
            self.dims.setdefault(name, _DimensionPartial()).add(dim)
