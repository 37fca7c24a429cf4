"""Scorer `composite`: a weighted mean of named component scorers, with required gates,
a pass threshold, per-case overrides and an explicit policy for unscored components.

Seed 002's KQL batch scoring is `composite` with `executes` as a required gate and
0.5 x `llm_query_similarity` + 0.5 x `results_match_legacy`, passing at 0.9 (preset
`kql_batch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from queryeval._validation import duplicates
from queryeval.cases import Case, Output, Score
from queryeval.config import ScorerConfig
from queryeval.errors import InputError
from queryeval.scorers._base import AsyncScorer, Scorer, ScoringContext, ascore_case
from queryeval.scorers._registry import build_scorer, known_scorers

if TYPE_CHECKING:
    from queryeval.log import ScorerInfo

UnscoredPolicy = Literal["auto", "renormalize", "unscored"]
_EPS = 1e-12


class CompositeOptions(BaseModel):
    """Components (nested scorer configs: name, id, options, weight, required, threshold) and
    what to do when some of them are unscored.

    `unscored`: `renormalize` averages over the scored components and flags it; `unscored`
    makes the composite unscored; `auto` (default) renormalises only while the unscored
    components carry less than `max_unscored_weight` of the total weight. A required
    component that is unscored always makes the composite unscored (its gate is unknown).
    """

    model_config = ConfigDict(extra="forbid")

    components: list[ScorerConfig] = Field(min_length=1)
    unscored: UnscoredPolicy = "auto"
    max_unscored_weight: float = Field(default=0.5, gt=0, le=1)

    @field_validator("components")
    @classmethod
    def _valid_components(cls, v: list[ScorerConfig]) -> list[ScorerConfig]:
        dupes = duplicates(c.label for c in v)
        if dupes:
            raise ValueError(f"duplicate component label(s): {', '.join(dupes)}; give each an 'id'")
        if not any(c.weight > 0 for c in v):
            raise ValueError("at least one component needs a positive weight")
        return v


class CaseOverride(BaseModel):
    """`case.metadata["scoring"]` (or `["scoring"][<composite label>]`): per-case threshold,
    weights, required flags and unscored policy."""

    model_config = ConfigDict(extra="forbid")

    threshold: float | None = None
    weights: dict[str, float] = Field(default_factory=dict)
    required: dict[str, bool] = Field(default_factory=dict)
    unscored: UnscoredPolicy | None = None

    @field_validator("weights")
    @classmethod
    def _non_negative(cls, v: dict[str, float]) -> dict[str, float]:
        bad = [k for k, w in v.items() if w < 0]
        if bad:
            raise ValueError(f"negative weight for {', '.join(bad)}")
        return v


class CompositeScorer(AsyncScorer):
    """Weighted mean of components; fails when a required component fails, whatever the total."""

    Options = CompositeOptions
    options: CompositeOptions

    def __init__(self, options: BaseModel, config: ScorerConfig | None = None) -> None:
        super().__init__(options, config)
        self.components: list[Scorer] = []
        for i, comp in enumerate(self.options.components):
            if comp.name not in known_scorers():
                raise ValueError(
                    f"components[{i}]: unknown scorer {comp.name!r}; expected one of "
                    f"{', '.join(sorted(known_scorers()))}"
                )
            try:
                self.components.append(build_scorer(comp))
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                where = ".".join(str(p) for p in first["loc"])
                raise ValueError(
                    f"components[{i}] ({comp.label}) options.{where}: {first['msg']}"
                ) from None
        self._overrides: dict[str, CaseOverride] = {}

    def describe(self) -> ScorerInfo:
        """Name, options and every component's own description."""
        out = super().describe()
        out["components"] = [c.describe() for c in self.components]
        return out

    # --- per-case overrides ------------------------------------------------------------------

    def _override_data(self, case: Case) -> dict[str, Any] | None:
        scoring = case.metadata.get("scoring")
        if not isinstance(scoring, dict):
            return None
        mine = scoring.get(self.label)
        if isinstance(mine, dict):
            return mine
        if set(scoring) & set(CaseOverride.model_fields):
            return scoring
        return None

    def prepare(self, cases: Sequence[Case], ctx: ScoringContext) -> None:
        """Check every case's overrides (bad ones are InputErrors naming the case), then
        prepare the components (e.g. run gold queries)."""
        labels = {c.label for c in self.components}
        for case in cases:
            data = self._override_data(case)
            if data is None:
                continue
            try:
                override = CaseOverride.model_validate(data)
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                where = ".".join(str(p) for p in first["loc"])
                raise InputError(
                    f"metadata.scoring.{where}: {first['msg']}", where=f"case {case.id}"
                ) from None
            unknown = (set(override.weights) | set(override.required)) - labels
            if unknown:
                raise InputError(
                    f"metadata.scoring names unknown component(s) {', '.join(sorted(unknown))}; "
                    f"components: {', '.join(sorted(labels))}",
                    where=f"case {case.id}",
                )
            self._overrides[case.id] = override
        for comp in self.components:
            comp.prepare(cases, ctx)

    def _override(self, case: Case) -> CaseOverride:
        if case.id not in self._overrides:
            data = self._override_data(case)
            self._overrides[case.id] = CaseOverride.model_validate(data) if data else CaseOverride()
        return self._overrides[case.id]

    # --- scoring ---------------------------------------------------------------------------

    def sub_metrics(self) -> frozenset[str]:
        """Each component's value under its label, and the weighted `total`."""
        return frozenset([*(c.label for c in self.components), "total"])

    @property
    def needs_database(self) -> bool:  # type: ignore[override]
        """When a component does."""
        return any(c.needs_database for c in self.components)

    def config_problems(self, suite: Any) -> list[tuple[tuple[str | int, ...], str]]:
        """Every component's, placed under its entry."""
        return [
            (("options", "components", i, *loc), message)
            for i, comp in enumerate(self.components)
            for loc, message in comp.config_problems(suite)
        ]

    def check_inputs(self, cases: Sequence[Case], ctx: ScoringContext) -> None:
        """Every component's."""
        for comp in self.components:
            comp.check_inputs(cases, ctx)

    async def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:  # type: ignore[override]
        override = self._override(case)
        policy = override.unscored or self.options.unscored
        threshold = override.threshold if override.threshold is not None else self.threshold
        parts: dict[str, dict[str, Any]] = {}
        failure: tuple[str, str] | None = None
        for comp, cfg in zip(self.components, self.options.components, strict=True):
            s = await ascore_case(comp, case, output, ctx)  # the rule applies per component
            parts[comp.label] = {
                "weight": override.weights.get(comp.label, cfg.weight),
                "required": override.required.get(comp.label, cfg.required),
                **s.model_dump(mode="json"),
            }
            if failure is None and s.failure_reason is not None:
                failure = (s.failure_reason, f"{comp.label}: {s.explanation}")
        if failure is not None:  # what the system produced failed: 0, whatever the rest
            gates = [k for k, p in parts.items()
                     if p["required"] and p["status"] == "ok" and not _passed(p)]  # fmt: skip
            details = {"components": parts, "threshold": threshold, "policy": policy,
                       "failed_gates": gates}  # fmt: skip
            return Score.failure(failure[0], failure[1], **details)  # type: ignore[arg-type]
        return self._combine(parts, policy, threshold)

    def _combine(
        self, parts: dict[str, dict[str, Any]], policy: UnscoredPolicy, threshold: float | None
    ) -> Score:
        required = {k: p for k, p in parts.items() if p["required"]}
        failed_gates = [k for k, p in required.items() if p["status"] == "ok" and not _passed(p)]
        unknown_gates = [k for k, p in required.items() if p["status"] != "ok"]
        weighted = {k: p for k, p in parts.items() if p["weight"] > 0}
        total_w = sum(p["weight"] for p in weighted.values())
        scored = {k: p for k, p in weighted.items() if p["status"] == "ok"}
        unscored = sorted(set(weighted) - set(scored))
        missing_share = sum(weighted[k]["weight"] for k in unscored) / total_w
        scored_w = sum(p["weight"] for p in scored.values())
        value = (
            sum(p["weight"] * p["value"] for p in scored.values()) / scored_w if scored_w else None
        )
        for k, p in parts.items():
            p["effective_weight"] = (p["weight"] / scored_w) if k in scored and scored_w else 0.0
        details: dict[str, Any] = {
            "total": value,
            "threshold": threshold,
            "policy": policy,
            "renormalized": bool(unscored) and value is not None,
            "unscored_components": unscored,
            "failed_gates": failed_gates,
            "components": parts,
            "metrics": {k: (p["value"] if p["status"] == "ok" else None) for k, p in parts.items()},
        }
        if failed_gates:  # a failed gate decides the case, whatever else is known
            details["metrics"]["total"] = value
            why = ", ".join(f"{k} ({parts[k]['explanation'] or 'failed'})" for k in failed_gates)
            return Score(
                value=value if value is not None else 0.0,
                passed=False,
                details=details,
                explanation=f"FAIL: required component failed: {why}",
            )
        if unknown_gates:
            why = "; ".join(
                f"{k}: {parts[k]['explanation'] or parts[k]['status']}" for k in unknown_gates
            )
            return _no_verdict(details, f"required component unscored: {why}")
        if unscored:
            too_much = policy == "unscored" or (
                policy == "auto" and missing_share >= self.options.max_unscored_weight - _EPS
            )
            if value is None or too_much:
                why = "; ".join(
                    f"{k}: {parts[k]['explanation'] or parts[k]['status']}" for k in unscored
                )
                return _no_verdict(
                    details, f"{missing_share:.0%} of the weight is unscored ({why})"
                )
        assert value is not None
        details["metrics"]["total"] = value
        passed = None if threshold is None else value >= threshold - _EPS
        verdict = "" if passed is None else ("PASS" if passed else "FAIL")
        note = (
            f" (renormalised over {', '.join(scored)}; unscored: {', '.join(unscored)})"
            if unscored
            else ""
        )
        summary = " + ".join(f"{p['weight']:g} x {k} {p['value']:.3f}" for k, p in scored.items())
        explanation = f"{verdict} total {value:.3f} = ({summary}) / {scored_w:g}{note}".strip()
        return Score(value=value, passed=passed, details=details, explanation=explanation)

    def finish(self, score: Score) -> Score:
        """The composite decides `passed` itself (gates and threshold)."""
        return score

    # --- dataset level ---------------------------------------------------------------------

    def aggregate(self, cases: Sequence[Case], scores: Sequence[Score]) -> dict[str, Any]:
        """Each component's own aggregate, gate failures, renormalised cases, and the judge
        spend summed over judged components."""
        out: dict[str, Any] = {"components": {}, "gate_failures": {}, "renormalized": 0}
        judge_cost: float | None = None
        for comp in self.components:
            comp_scores = [_component(s, comp.label) for s in scores]
            agg = comp.aggregate(cases, comp_scores)
            if agg:
                out["components"][comp.label] = agg
            cost = (
                agg.get("judge", {}).get("cost_usd") if isinstance(agg.get("judge"), dict) else None
            )
            if cost is not None:
                judge_cost = (judge_cost or 0.0) + cost
        for s in scores:
            for gate in s.details.get("failed_gates", []):
                out["gate_failures"][gate] = out["gate_failures"].get(gate, 0) + 1
            out["renormalized"] += int(bool(s.details.get("renormalized")))
        if judge_cost is not None:
            out["judge_cost_usd"] = judge_cost
        return out


def _no_verdict(details: dict[str, Any], why: str) -> Score:
    """An unscored composite: no total (the mean over what is known stays as `partial_total`)."""
    details["partial_total"] = details["total"]
    details["total"] = None
    details["renormalized"] = False
    return Score(status="unscored", details=details, explanation=why)


def _passed(part: dict[str, Any]) -> bool:
    """A gate passes when its scorer says so; with no decision at all, when its value is 1."""
    if part["passed"] is not None:
        return bool(part["passed"])
    return part["value"] is not None and part["value"] >= 1.0 - _EPS


def _component(score: Score, label: str) -> Score:
    part = score.details.get("components", {}).get(label)
    if not isinstance(part, dict):
        reason = score.details.get("failure")
        if reason:  # the output failed before any component was asked: it fails them all
            return Score.failure(reason, score.explanation)
        return Score.unscored(score.explanation or "component not scored")
    return Score(
        value=part.get("value"),
        status=part.get("status", "unscored"),
        passed=part.get("passed"),
        details=part.get("details", {}),
        explanation=part.get("explanation", ""),
    )
