"""Scorer `agentic` (seed 003): per case, what a self-refining loop (or n samples) achieved:
Pass@1, success@k, KG Valid@1/@k, iterations, error types; `aggregate` gives the agentic
report (Pass@1, success@k, unbiased pass@k, KG Valid@1/@k, refinement gain, recovery rate
in both forms, error distributions) overall and per complexity/level."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field, field_validator

from queryeval.cases import Case, Output, Score
from queryeval.metrics import agentic_report, success_at_k
from queryeval.metrics.agentic import AttemptSummary, first_success
from queryeval.scorers._attempts import AttemptGrader, GradingOptions, cluster_problems
from queryeval.scorers._base import Scorer, ScoringContext

if TYPE_CHECKING:
    from queryeval.config import SuiteConfig


class AgenticOptions(GradingOptions):
    """Options of `agentic`; see GradingOptions for where correctness and validity come from."""

    ks: list[int] = Field(default=[1, 3, 5], description="k of success@k (and pass@k)")
    samples: bool = Field(
        default=False,
        description="attempts are n independent samples (adds the unbiased pass@k; the case "
        "value is c/n) rather than the iterations of one refinement loop; outputs of a model "
        "system with `samples: n` say so themselves",
    )
    breakdown: list[str] = Field(
        default=["complexity", "level"],
        description="case metadata keys (or `key:value` tags) to break the report down by; "
        "`tag` breaks it down by every tag",
    )

    @field_validator("ks")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if not v or any(k < 1 for k in v):
            raise ValueError("ks must list integers >= 1")
        return sorted(set(v))


def _flag(value: bool | None) -> float | None:
    return None if value is None else float(value)


class AgenticScorer(Scorer):
    """Value: 1 when the loop succeeded within its iterations (success@n), else 0; with
    `samples`, c/n. Passes when it succeeded (samples: when any sample is correct)."""

    Options: ClassVar[type[BaseModel]] = AgenticOptions
    reads = "attempts"
    needs_database = True
    options: AgenticOptions

    def config_problems(self, suite: SuiteConfig) -> list[tuple[tuple[str | int, ...], str]]:
        """The base checks, and KG validation asked of a run on a Ray cluster."""
        return [*super().config_problems(suite), *cluster_problems(self.options, suite)]

    def sub_metrics(self) -> frozenset[str]:
        """Pass@1, success, KG Valid@1/@k, iterations, success@k for each k."""
        fixed = ("pass_at_1", "success", "kg_valid_at_1", "kg_valid_at_k", "iterations")
        return frozenset([*fixed, *(f"success_at_{k}" for k in self.options.ks)])

    @classmethod
    def report_tables(cls, aggregate: dict[str, Any]) -> list[tuple[str, list[list[Any]]]]:
        """The agentic report (seed 003) and its breakdown by tag, for the console."""
        if "agentic_report" not in aggregate:
            return []
        report = [["metric", "value"], *([label, value] for label, value in report_rows(aggregate))]
        return [("agentic report", report), ("by group", breakdown_rows(aggregate))]

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        grader = AttemptGrader(case, ctx, self.options)  # `score_case`: attempts exist
        graded = [grader.grade(a) for a in output.attempts]
        summaries = [g.summary for g in graded]
        correct = [s.correct for s in summaries]
        success = success_at_k(correct)
        first = correct[0]
        metrics: dict[str, float | None] = {
            "pass_at_1": _flag(first),
            "success": _flag(success),
            "kg_valid_at_1": _flag(summaries[0].kg_valid),
            "kg_valid_at_k": _flag(summaries[-1].kg_valid),
            "iterations": float(len(summaries)),
        }
        for k in self.options.ks:
            metrics[f"success_at_{k}"] = _flag(success_at_k(correct, k))
        details: dict[str, Any] = {
            "metrics": metrics,
            "attempts": [
                {
                    "correct": s.correct,
                    "kg_valid": s.kg_valid,
                    "error_type": s.error_type,
                    **g.details,
                }
                for s, g in zip(summaries, graded, strict=True)
            ],
            "iterations_to_success": first_success(correct),
            "database": grader.database,
        }
        if self.options.samples or output.metadata.get("attempts_are") == "samples":
            details["samples"] = True
            known = [c for c in correct if c is not None]
            if not known:
                return Score.unscored("no sample's correctness is known", **details)
            value = sum(known) / len(known)
            return Score(value=value, passed=any(known), details=details)
        if success is None:
            return Score.unscored("correctness of the attempts is unknown", **details)
        explanation = "" if success else _why(summaries)
        return Score(value=float(success), passed=success, details=details,
                     explanation=explanation)  # fmt: skip

    def dataset_problems(self, cases: Sequence[Case]) -> list[tuple[tuple[str | int, ...], str]]:
        """A breakdown key the suite set that groups no case (a misspelt `tagz`)."""
        if "breakdown" not in self.options.model_fields_set:
            return []  # the default keys are looked for, not required
        unused = _unused_breakdown_keys(self.options.breakdown, cases)
        if not unused:
            return []
        return [
            (
                ("options", "breakdown"),
                f"breakdown key(s) {', '.join(map(repr, unused))} group no case; expected a "
                "case metadata key, a `key:value` tag name, or `tag`",
            )
        ]

    def aggregate(self, cases: Sequence[Case], scores: Sequence[Score]) -> dict[str, Any]:
        """The agentic report over the scored cases, and per breakdown key."""
        loops: list[list[AttemptSummary]] = []
        groups: dict[str, dict[str, list[list[AttemptSummary]]]] = {}
        sampled: list[bool] = []
        for case, score in zip(cases, scores, strict=False):
            if score.status == "error":
                continue
            if "attempts" in score.details:
                sampled.append(bool(score.details.get("samples")))
            if "attempts" in score.details:
                loop = [
                    AttemptSummary(a.get("correct"), a.get("kg_valid"), a.get("error_type"))
                    for a in score.details["attempts"]
                ]
            elif score.details.get("failure"):
                loop = []  # no usable output (crashed, missing): a failed case, no attempt
            else:
                continue
            loops.append(loop)
            for key in self.options.breakdown:
                for value in _groups_of(case, key):
                    groups.setdefault(key, {}).setdefault(value, []).append(loop)
        ks = self.options.ks
        # samples: by option, or when every output said its attempts are samples (a model
        # system with `samples: n`; aggregates are per system)
        samples = self.options.samples or (bool(sampled) and all(sampled))
        report = agentic_report(loops, ks=ks, samples=samples).as_dict()
        breakdown = {
            key: {value: _brief(agentic_report(ls, ks=ks, samples=samples).as_dict())
                  for value, ls in sorted(by_value.items())}
            for key, by_value in groups.items()
        }  # fmt: skip
        return {"agentic_report": report, "breakdown": breakdown}


def _unused_breakdown_keys(keys: Sequence[str], cases: Sequence[Case]) -> list[str]:
    """The breakdown keys that group no case (no metadata key, no `key:value` tag)."""
    return [k for k in keys if not any(_groups_of(case, k) for case in cases)]


def _why(summaries: list[AttemptSummary]) -> str:
    errors = [s.error_type or "unknown" for s in summaries]
    return f"not correct within {len(summaries)} attempt(s): {', '.join(errors)}"


def _groups_of(case: Case, key: str) -> list[str]:
    """The case's groups for a breakdown key: metadata[key], else the values of `key:value`
    or `key=value` tags; the key `tag` groups by every tag of the case."""
    if key == "tag":
        return list(case.tags)
    if case.metadata.get(key) is not None:
        return [str(case.metadata[key])]
    values = []
    for tag in case.tags:
        for sep in (":", "="):
            name, found, value = tag.partition(sep)
            if found and name == key:
                values.append(value)
                break
    return values


def _brief(report: dict[str, Any]) -> dict[str, Any]:
    keys = ("cases", "pass_at_1", "success_at_k", "success", "kg_valid_at_1", "kg_valid_at_k",
            "refinement_gain", "recovery_rate", "pass_at_k")  # fmt: skip
    return {k: report[k] for k in keys}


def report_rows(aggregate: dict[str, Any]) -> list[tuple[str, Any]]:
    """The agentic report as (label, value) rows, for a console table or a spreadsheet;
    rates stay fractions in [0, 1], None where undefined."""
    r = aggregate["agentic_report"]
    rows: list[tuple[str, Any]] = [("cases", r["cases"]), ("Pass@1", r["pass_at_1"])]
    rows += [(f"success@{k} (within {k} iterations)", v) for k, v in r["success_at_k"].items()]
    rows += [(f"pass@{k} (unbiased, n samples)", v) for k, v in r["pass_at_k"].items()]
    rows += [
        ("success (within all iterations)", r["success"]),
        ("EX (final attempt correct)", r["execution_accuracy"]),
        ("KG Valid@1", r["kg_valid_at_1"]),
        ("KG Valid@k (final attempt)", r["kg_valid_at_k"]),
        ("refinement gain (success - Pass@1)", r["refinement_gain"]),
        ("recovery rate (success - Pass@1) / (1 - Pass@1)", r["recovery_rate"]),
        (f"recovery rate ({r['recovered']} of {r['initially_failed']} first failures)",
         r["recovery_rate_counts"]),
        ("KG refinement gain", r["kg_refinement_gain"]),
        ("KG recovery rate", r["kg_recovery_rate"]),
        ("mean iterations", r["mean_iterations"]),
        ("max iterations", r["max_iterations"]),
        ("iterations to success", _counts(r["iterations_to_success"])),
        ("errors (all failed attempts)", _counts(r["error_types"])),
        ("first-attempt errors", _counts(r["first_error_types"])),
    ]  # fmt: skip
    rows += [
        (f"recovery after a first {e} error", v) for e, v in r["recovery_by_error_type"].items()
    ]
    return rows


def breakdown_rows(aggregate: dict[str, Any]) -> list[list[Any]]:
    """The per-group report as a header row and one row per (key, value) group."""
    out: list[list[Any]] = [["group", "cases", "Pass@1", "success", "KG Valid@1",
                             "KG Valid@k", "refinement gain", "recovery rate"]]  # fmt: skip
    for key, groups in aggregate.get("breakdown", {}).items():
        for value, g in groups.items():
            out.append([f"{key}={value}", g["cases"], g["pass_at_1"], g["success"],
                        g["kg_valid_at_1"], g["kg_valid_at_k"], g["refinement_gain"],
                        g["recovery_rate"]])  # fmt: skip
    return out


def _counts(counts: dict[Any, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in counts.items()) or "-"
