"""Scorer `composite` and preset `kql_batch`: seed 002's scenarios, gates, unscored policies,
per-case overrides, details and aggregates. Stand-in scorers play the engine-backed parts."""

from __future__ import annotations

import asyncio
import copy
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from fakes.openai_server import ChatRequest, FakeOpenAI, Reply
from queryeval.cases import Attempt, Case, Output, Score
from queryeval.config import ScorerConfig, SuiteConfig
from queryeval.config._presets import PRESETS
from queryeval.errors import InputError
from queryeval.runner import load_suite
from queryeval.scorers import Scorer, ScoringContext, build_scorer
from queryeval.scorers._registry import _REGISTERED

GOLD = "Traces | where timestamp > ago(1h) | summarize count() by level"
# seed 002's example scenarios: generated query -> the judge's score in the seed
SCENARIOS = {
    "exact": ("Traces | where timestamp > ago(1h) | summarize count() by level", GOLD, 1.0, 1.0),
    "minor": (
        "Traces | where timestamp > ago(1h) | project timestamp, level, message",
        "Traces | where timestamp > ago(60m) | project timestamp, level, message",
        0.95,
        1.0,
    ),
    "wrong": ("AppTraces | where timestamp > ago(1h) | summarize count()", GOLD, 0.6, 0.3),
}
JUDGE_SCORES = {gen: judge for gen, _gold, judge, _res in SCENARIOS.values()}


class FixedOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    by_case: dict[str, float | None] = {}
    default: float | None = 1.0


class FixedScorer(Scorer):
    """Stand-in: the value configured for the case; None means unscored."""

    name = "fixed"
    Options = FixedOptions
    options: FixedOptions

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        v = self.options.by_case.get(case.id, self.options.default)
        return (
            Score.unscored("stand-in has no value")
            if v is None
            else Score(value=v, details={"stub": True})
        )

    def aggregate(self, cases: Sequence[Case], scores: Sequence[Score]) -> dict[str, Any]:
        return {"seen": len(scores)}


class GateScorer(FixedScorer):
    """Stand-in for `executes`: 1 passes, 0 fails."""

    name = "gate"
    default_threshold = 1.0


class Boom(Scorer):
    name = "boom"

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        raise RuntimeError("engine exploded")


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand-ins under test-only names, and under the engine scorers' names for the preset."""
    for name, cls in {
        "t_fixed": FixedScorer,
        "t_gate": GateScorer,
        "t_boom": Boom,
        "executes": GateScorer,
        "results_match_legacy": FixedScorer,
        "results_f1": FixedScorer,
    }.items():
        monkeypatch.setitem(_REGISTERED, name, cls)


def judge_by_generated_query(req: ChatRequest) -> Reply:
    """The fake judge gives seed 002's score to each scenario's generated query."""
    nonce = re.search(r'nonce="([0-9a-f]{16})"', req.content("system"))
    assert nonce is not None
    m = re.search(
        rf'<data name="generated_query" nonce="{nonce.group(1)}">\n(.*?)\n</data',
        req.content("user"),
        re.DOTALL,
    )
    assert m is not None
    return Reply.verdict(JUDGE_SCORES.get(m.group(1), 0.0), "scripted per query")


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(judge_by_generated_query) as s:
        yield s


def case(cid: str, gold: str = GOLD, **metadata: Any) -> Case:
    return Case.model_validate(
        {
            "id": cid,
            "conversation": [
                {
                    "role": "user",
                    "content": "How many traces per level in the last hour?",
                    "target": {"query": {"language": "kql", "text": gold}},
                }
            ],
            "metadata": metadata,
        }
    )


def output(query: str) -> Output:
    return Output(attempts=[Attempt(query=query, language="kql")])


def make_suite(
    tmp_path: Path,
    scorers: list[dict[str, Any]] | None = None,
    judge: dict[str, Any] | None = None,
    preset: str | None = None,
) -> SuiteConfig:
    data: dict[str, Any] = {
        "name": "t",
        "cases": "c.yaml",
        "systems": [{"name": "s", "predictions": "p.jsonl"}],
    }
    if preset:
        data.update(copy.deepcopy(PRESETS[preset]))  # the tests edit their copy
    if scorers is not None:
        data["scorers"] = scorers
    if judge is not None:
        data["judge"] = judge
    suite = SuiteConfig.model_validate(data)
    suite.base_dir = tmp_path
    return suite


def score_all(
    suite: SuiteConfig, cases: list[Case], outputs: list[Output], tmp_path: Path
) -> tuple[Scorer, list[Score]]:
    scorer = build_scorer(suite.scorers[0])
    ctx = ScoringContext(suite, tmp_path / "cache")
    scorer.prepare(cases, ctx)

    async def go() -> list[Score]:
        out = [await scorer.score(c, o, ctx) for c, o in zip(cases, outputs, strict=True)]  # type: ignore[misc]
        judge = ctx._resources.get("judge")
        if judge is not None:
            await judge.aclose()
        return out

    scores = asyncio.run(go())
    ctx.close()
    return scorer, scores


def kql_judge(server: FakeOpenAI) -> dict[str, Any]:
    return {"model": "judge", "base_url": server.base_url, "api_key_env": None}


def test_seed_002_scenarios(stand_ins: None, server: FakeOpenAI, tmp_path: Path) -> None:
    suite = make_suite(tmp_path, preset="kql_batch", judge=kql_judge(server))
    results = {"exact": 1.0, "minor": 1.0, "wrong": 0.3, "no_exec": 1.0}
    comps = suite.scorers[0].options["components"]
    comps[0]["options"] = {"by_case": {"no_exec": 0.0}}  # executes: everything runs but no_exec
    comps[2]["options"] = {"by_case": results}
    cases = [case(cid, gold) for cid, (_gen, gold, _j, _r) in SCENARIOS.items()] + [case("no_exec")]
    outputs = [output(gen) for gen, *_ in SCENARIOS.values()] + [output(SCENARIOS["exact"][0])]
    _, scores = score_all(suite, cases, outputs, tmp_path)
    exact, minor, wrong, no_exec = scores
    assert (exact.value, exact.passed) == (pytest.approx(1.0), True)
    assert (minor.value, minor.passed) == (pytest.approx(0.975), True)
    assert (wrong.value, wrong.passed) == (pytest.approx(0.45), False)
    # a query that fails to execute fails whatever its score (here a perfect 1.0)
    assert no_exec.value == pytest.approx(1.0) and no_exec.passed is False
    assert no_exec.details["failed_gates"] == ["executes"]
    assert minor.details["components"]["llm_query_similarity"]["value"] == pytest.approx(0.95)
    assert "PASS total 0.975" in minor.explanation and wrong.explanation.startswith("FAIL")


def test_strict_preset_uses_results_f1() -> None:
    labels = [c["name"] for c in PRESETS["kql_batch_strict"]["scorers"][0]["options"]["components"]]
    assert labels == ["executes", "llm_query_similarity", "results_f1"]
    legacy = [c["name"] for c in PRESETS["kql_batch"]["scorers"][0]["options"]["components"]]
    assert legacy == ["executes", "llm_query_similarity", "results_match_legacy"]


def test_without_a_judge_the_judged_part_is_unscored_and_says_how_to_configure(
    stand_ins: None, tmp_path: Path
) -> None:
    suite = make_suite(tmp_path, preset="kql_batch")
    suite.scorers[0].options["components"][0]["options"] = {"by_case": {"broken": 0.0}}
    _, (ok, broken) = score_all(
        suite, [case("ok"), case("broken")], [output(GOLD), output("Traces | bad")], tmp_path
    )
    judged = ok.details["components"]["llm_query_similarity"]
    assert (
        judged["status"] == "unscored"
        and "judge:" in judged["explanation"]
        and "docs/judge.md" in judged["explanation"]
    )
    assert ok.status == "unscored" and ok.value is None  # half the weight is unknown: no verdict
    assert "50% of the weight is unscored" in ok.explanation
    assert broken.status == "ok" and broken.passed is False  # the gate still decides


def components(
    weights: dict[str, float],
    by_case: dict[str, dict[str, float | None]] | None = None,
    required: Sequence[str] = (),
) -> list[dict[str, Any]]:
    by_case = by_case or {}
    return [
        {
            "name": "t_gate" if k in required else "t_fixed",
            "id": k,
            "weight": w,
            "required": k in required,
            "options": {"by_case": by_case.get(k, {})},
        }
        for k, w in weights.items()
    ]


@pytest.mark.parametrize(
    ("policy", "weights", "status", "value"),
    [
        ("auto", {"a": 0.8, "b": 0.2}, "ok", 0.5),  # 20% missing: renormalised over a
        ("auto", {"a": 0.5, "b": 0.5}, "unscored", None),  # half missing: no verdict
        ("auto", {"a": 0.3, "b": 0.7}, "unscored", None),
        ("renormalize", {"a": 0.3, "b": 0.7}, "ok", 0.5),
        ("unscored", {"a": 0.9, "b": 0.1}, "unscored", None),
    ],
)
def test_unscored_policies(
    stand_ins: None,
    tmp_path: Path,
    policy: str,
    weights: dict[str, float],
    status: str,
    value: float | None,
) -> None:
    comps = components(weights, {"a": {"c": 0.5}, "b": {"c": None}})
    suite = make_suite(
        tmp_path,
        [
            {
                "name": "composite",
                "threshold": 0.4,
                "options": {"components": comps, "unscored": policy},
            }
        ],
    )
    _, (s,) = score_all(suite, [case("c")], [output("q")], tmp_path)
    assert s.status == status
    assert s.value == (pytest.approx(value) if value is not None else None)
    if status == "unscored":
        assert s.details["renormalized"] is False and s.details["total"] is None
        assert s.details["partial_total"] == pytest.approx(0.5)  # what is known, kept apart
    if status == "ok":
        assert s.details["renormalized"] is True and s.details["unscored_components"] == ["b"]
        assert s.details["components"]["a"]["effective_weight"] == pytest.approx(1.0)
        assert s.passed is True and "renormalised" in s.explanation


def test_unscored_required_gate_makes_the_composite_unscored(
    stand_ins: None, tmp_path: Path
) -> None:
    comps = components({"gate": 0, "a": 1}, {"gate": {"c": None}}, required=["gate"])
    suite = make_suite(tmp_path, [{"name": "composite", "options": {"components": comps}}])
    _, (s,) = score_all(suite, [case("c")], [output("q")], tmp_path)
    assert s.status == "unscored" and "required component unscored: gate" in s.explanation


def test_weighted_mean_and_every_component_in_details(stand_ins: None, tmp_path: Path) -> None:
    comps = components({"a": 1, "b": 3}, {"a": {"c": 0.2}, "b": {"c": 0.6}})
    suite = make_suite(
        tmp_path, [{"name": "composite", "threshold": 0.5, "options": {"components": comps}}]
    )
    _, (s,) = score_all(suite, [case("c")], [output("q")], tmp_path)
    assert s.value == pytest.approx((0.2 + 3 * 0.6) / 4) and s.passed is True
    for label in ("a", "b"):
        part = s.details["components"][label]
        assert {
            "weight",
            "effective_weight",
            "required",
            "value",
            "status",
            "passed",
            "details",
            "explanation",
        } <= set(part)
    assert s.details["components"]["b"]["effective_weight"] == pytest.approx(0.75)
    assert s.details["metrics"] == {"a": 0.2, "b": 0.6, "total": pytest.approx(0.5)}
    json.dumps(s.details)  # storable as is


def test_per_case_overrides(stand_ins: None, tmp_path: Path) -> None:
    comps = components({"a": 1, "b": 1}, {"a": {"x": 1.0, "y": 1.0}, "b": {"x": 0.0, "y": 0.0}})
    suite = make_suite(
        tmp_path,
        [{"name": "composite", "id": "total", "threshold": 0.9, "options": {"components": comps}}],
    )
    cases = [
        case("x", scoring={"weights": {"b": 0}, "threshold": 0.95}),
        case("y", scoring={"total": {"threshold": 0.5}}),  # addressed to this composite by label
    ]
    _, (x, y) = score_all(suite, cases, [output("q"), output("q")], tmp_path)
    assert x.value == pytest.approx(1.0) and x.passed is True and x.details["threshold"] == 0.95
    assert y.value == pytest.approx(0.5) and y.passed is True


@pytest.mark.parametrize(
    ("scoring", "message"),
    [
        ({"weights": {"nope": 1}}, "unknown component"),
        ({"threshold": "high"}, "threshold"),
        ({"weights": {"a": -1}}, "negative weight"),
        ({"treshold": 0.5, "weights": {}}, "treshold"),
    ],
)
def test_bad_overrides_name_the_case(
    stand_ins: None, tmp_path: Path, scoring: dict[str, Any], message: str
) -> None:
    suite = make_suite(
        tmp_path, [{"name": "composite", "options": {"components": components({"a": 1})}}]
    )
    scorer = build_scorer(suite.scorers[0])
    with pytest.raises(InputError, match=message) as err:
        scorer.prepare([case("bad-case", scoring=scoring)], ScoringContext(suite, tmp_path))
    assert err.value.where == "case bad-case"


def test_a_crashing_component_is_its_error_not_the_runs(stand_ins: None, tmp_path: Path) -> None:
    comps = [
        {"name": "t_fixed", "id": "a", "weight": 0.9},
        {"name": "t_boom", "id": "b", "weight": 0.1},
    ]
    suite = make_suite(tmp_path, [{"name": "composite", "options": {"components": comps}}])
    _, (s,) = score_all(suite, [case("c")], [output("q")], tmp_path)
    assert s.details["components"]["b"]["status"] == "error"
    assert "engine exploded" in s.details["components"]["b"]["explanation"]
    assert s.status == "ok" and s.details["renormalized"] is True


def test_system_error_output_scores_each_component_as_failed(
    stand_ins: None, tmp_path: Path
) -> None:
    suite = make_suite(
        tmp_path, [{"name": "composite", "options": {"components": components({"a": 1})}}]
    )
    _, (s,) = score_all(suite, [case("c")], [Output(error="timeout")], tmp_path)
    assert s.value == 0.0 and "system error" in s.details["components"]["a"]["explanation"]


def test_aggregate_collects_components_gates_and_judge_cost(
    stand_ins: None, server: FakeOpenAI, tmp_path: Path
) -> None:
    suite = make_suite(
        tmp_path,
        preset="kql_batch",
        judge={
            **kql_judge(server),
            "prices": {"judge": {"input_per_1k": 0.001, "output_per_1k": 0.002}},
        },
    )
    suite.scorers[0].options["components"][0]["options"] = {"by_case": {"b": 0.0}}
    cases = [case("a"), case("b")]
    scorer, scores = score_all(suite, cases, [output(GOLD), output(GOLD)], tmp_path)
    agg = scorer.aggregate(cases, scores)
    assert agg["gate_failures"] == {"executes": 1}
    assert agg["components"]["results_match_legacy"] == {"seen": 2}
    judge = agg["components"]["llm_query_similarity"]["judge"]
    assert judge["judgments"] == 2 and judge["cached"] == 1  # same inputs twice: one call
    assert agg["judge_cost_usd"] == pytest.approx(judge["cost_usd"]) and agg["judge_cost_usd"] > 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"components": [{"name": "no_such_scorer"}]}, "unknown scorer 'no_such_scorer'"),
        ({"components": [{"name": "t_fixed"}, {"name": "t_fixed"}]}, "duplicate component label"),
        ({"components": [{"name": "t_fixed", "weight": 0}]}, "positive weight"),
        ({"components": [{"name": "t_fixed", "options": {"bogus": 1}}]}, "bogus"),
    ],
)
def test_bad_composite_config_is_an_input_error(
    stand_ins: None, tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    (tmp_path / "suite.yaml").write_text(
        json.dumps(
            {
                "name": "t",
                "cases": "c.yaml",
                "systems": [{"name": "s", "predictions": "p.jsonl"}],
                "scorers": [{"name": "composite", "options": options}],
            }
        )
    )
    with pytest.raises(InputError, match=message) as err:
        load_suite(tmp_path / "suite.yaml")
    assert err.value.path is not None and err.value.path.endswith("suite.yaml")


def test_preset_loads_from_a_suite_file(stand_ins: None, tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text(
        "name: k\npreset: kql_batch\ncases: c.yaml\nsystems: [{name: s, predictions: p.jsonl}]\n"
    )
    suite = load_suite(tmp_path / "suite.yaml")
    sc = suite.scorers[0]
    assert isinstance(sc, ScorerConfig) and sc.name == "composite" and sc.threshold == 0.9
    comps = {
        c["name"]: (c.get("weight", 1.0), c.get("required", False))
        for c in sc.options["components"]
    }
    assert comps == {
        "executes": (0, True),
        "llm_query_similarity": (0.5, False),
        "results_match_legacy": (0.5, False),
    }


def test_a_suite_editing_its_preset_copy_leaves_the_preset_alone(
    stand_ins: None, tmp_path: Path
) -> None:
    (tmp_path / "suite.yaml").write_text(
        "name: k\npreset: kql_batch\ncases: c.yaml\nsystems: [{name: s, predictions: p.jsonl}]\n"
    )
    suite = load_suite(tmp_path / "suite.yaml")
    suite.scorers[0].options["components"][0]["options"] = {"by_case": {"x": 0.0}}
    assert "options" not in PRESETS["kql_batch"]["scorers"][0]["options"]["components"][0]
