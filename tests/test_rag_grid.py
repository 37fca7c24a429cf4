"""Grid analysis: leaderboard with seeded bootstrap CIs, method side-by-side, judge top-N."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr

import queryeval.judges
from queryeval.cases import Attempt, Case, Output
from queryeval.runner.grid import judge_top_configurations
from queryeval.scorers import ScoringContext
from queryeval.stats import (
    base_system,
    compare_methods,
    format_leaderboard,
    grid_section,
    leaderboard,
    scores_by_config,
)


def _scores() -> dict[str, dict[str, float | None]]:
    rng = np.random.default_rng(3)
    out: dict[str, dict[str, float | None]] = {}
    for name, p in [("a", 0.8), ("b", 0.5), ("c", 0.5), ("d", 0.2)]:
        out[name] = {f"q{i}": float(rng.random() < p) for i in range(40)}
    return out


def test_leaderboard_means_ranks_and_cis() -> None:
    scores = _scores()
    board = leaderboard(scores, seed=7)
    means = {k: float(np.mean(list(v.values()))) for k, v in scores.items()}
    assert [r.config for r in board.rows] == sorted(means, key=lambda k: (-means[k], k))
    for row in board.rows:
        assert row.mean == pytest.approx(means[row.config])
        assert row.ci_low <= row.mean <= row.ci_high
        assert row.n == 40 and row.unscored == 0
    assert board.best == "a" and board.top(2) == ["a", board.rows[1].config]
    assert sum(r.p_best for r in board.rows) == pytest.approx(1.0)
    assert board.rows[0].p_best > 0.9  # 0.8 vs 0.5 over 40 cases: clearly best
    # seeded: the same seed gives the same intervals
    assert leaderboard(scores, seed=7) == board


def test_leaderboard_ci_matches_a_plain_percentile_bootstrap() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0] * 3
    board = leaderboard({"x": {f"c{i}": v for i, v in enumerate(values)}}, seed=0, n_resamples=4000)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(values), size=(4000, len(values)))
    means = np.asarray(values)[idx].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    assert board.rows[0].ci_low == pytest.approx(low) and board.rows[0].ci_high == pytest.approx(
        high
    )


def test_competition_ranks_and_unscored_are_not_zeros() -> None:
    scores = {
        "tied1": {"q1": 1.0, "q2": 0.0},
        "tied2": {"q1": 0.0, "q2": 1.0},
        "top": {"q1": 1.0, "q2": None},  # unscored q2: mean over q1 only, not 0.5
        "none": {"q1": None, "q2": None},
    }
    board = leaderboard(scores)
    ranks = {r.config: r.rank for r in board.rows}
    assert ranks == {"top": 1, "tied1": 2, "tied2": 2, "none": None}
    top = next(r for r in board.rows if r.config == "top")
    assert top.mean == 1.0 and top.n == 1 and top.unscored == 1
    assert board.rows[-1].config == "none" and board.rows[-1].mean is None
    text = format_leaderboard(board, title="t")
    assert "top" in text and "95% CI" in text


def test_compare_methods_picks_correlations_and_plateau() -> None:
    cases = [f"q{i}" for i in range(6)]
    configs = ["k1", "k2", "k3", "k4"]
    truth = {"k1": 1, "k2": 3, "k3": 5, "k4": 2}  # correct answers out of 6
    semantic = {c: {q: float(i < truth[c]) for i, q in enumerate(cases)} for c in configs}
    legacy = {
        c: {q: (1.0 if i < 6 - truth[c] else 0.5) for i, q in enumerate(cases)} for c in configs
    }
    comparison = compare_methods({"semantic": semantic, "keyword_legacy": legacy}, n_resamples=200)
    assert comparison.picks == {"semantic": "k3", "keyword_legacy": "k1"}
    (corr,) = comparison.correlations
    sem_means = [np.mean(list(semantic[c].values())) for c in configs]
    leg_means = [np.mean(list(legacy[c].values())) for c in configs]
    assert corr.spearman == pytest.approx(spearmanr(sem_means, leg_means).statistic)
    assert corr.kendall == pytest.approx(kendalltau(sem_means, leg_means).statistic)
    assert corr.spearman == pytest.approx(-1.0)  # exactly reversed
    assert comparison.share_at_half["semantic"] == 0.0
    # legacy gives 0.5 to each wrong answer: 1 + 3 + 5 + 2 of the 24 values
    assert comparison.share_at_half["keyword_legacy"] == pytest.approx(11 / 24)
    assert set(comparison.distributions["semantic"]) == {"0", "1"}
    assert comparison.to_dict()["picks"] == comparison.picks


def test_grid_section_from_run_records() -> None:
    records = []
    for (k, s), q in itertools.product([(1, 1), (3, 1), (3, 2)], ["q1", "q2", "q3"]):
        name = f"rag[top_k={k},answer_sentences={s}]"
        value = 1.0 if (k == 3 and q != "q3") else 0.0
        records.append(
            {"system": name, "case_id": q, "scores": {"semantic": {"value": value, "status": "ok"}}}
        )
    records.append({"system": "baseline", "case_id": "q1", "scores": {"semantic": {"value": 1.0}}})
    records.append(
        {
            "system": "rag[top_k=1,answer_sentences=1]",
            "case_id": "q4",
            "scores": {"semantic": {"status": "unscored"}},
        }
    )
    assert base_system("rag[top_k=1,answer_sentences=1]") == "rag"
    per = scores_by_config(records, "semantic")
    assert per["rag[top_k=1,answer_sentences=1]"]["q4"] is None
    sections = grid_section(records, ["semantic"])
    assert list(sections) == ["rag"]  # a single configuration is no grid
    board = sections["rag"].leaderboards["semantic"]
    assert board.rows[0].mean == pytest.approx(2 / 3)
    assert {r.config for r in board.rows if r.rank == 1} == {
        "rag[top_k=3,answer_sentences=1]",
        "rag[top_k=3,answer_sentences=2]",
    }


def _case(i: int) -> Case:
    return Case.model_validate(
        {"id": f"q{i}", "conversation": [{"content": f"Q{i}?", "target": {"answer": f"A{i}"}}]}
    )


@dataclass
class _Verdict:
    score: float | None
    status: str = "ok"
    reasoning: str = ""
    cost: float | None = 0.01
    cached: bool = False


class _Judge:
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def judge(self, rubric: str, inputs: dict[str, Any]) -> _Verdict:
        self.seen.append(inputs["generated_answer"])
        return _Verdict(1.0 if inputs["generated_answer"].startswith("good") else 0.0)


def test_judge_rescoring_of_the_top_n(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cases = [_case(i) for i in range(4)]
    # semantic ranks c1 > c2 > c3 > c4; the judge prefers c2
    semantic = {
        "c1": {c.id: 1.0 for c in cases},
        "c2": {c.id: 0.75 for c in cases},
        "c3": {c.id: 0.5 for c in cases},
        "c4": {c.id: 0.0 for c in cases},
    }
    answers = {"c1": "bad", "c2": "good", "c3": "good", "c4": "good"}
    outputs = {
        cfg: {c.id: Output(attempts=[Attempt(answer=f"{answers[cfg]} {c.id}")]) for c in cases}
        for cfg in semantic
    }
    board = leaderboard(semantic)
    ctx = ScoringContext(None, cache_dir=tmp_path)

    monkeypatch.setattr(queryeval.judges, "judge_from_context", lambda ctx: None, raising=False)
    unscored = asyncio.run(judge_top_configurations(board, cases, outputs, ctx, top_n=2))
    assert unscored.status == "unscored" and unscored.board is None and unscored.judge_calls == 0
    assert "judge" in unscored.message

    judge = _Judge()
    monkeypatch.setattr(queryeval.judges, "judge_from_context", lambda ctx: judge, raising=False)
    final = asyncio.run(judge_top_configurations(board, cases, outputs, ctx, top_n=2))
    assert final.status == "ok" and final.candidates == ("c1", "c2")
    assert final.judge_calls == 8 and len(judge.seen) == 8  # top 2 x 4 cases, not all 16
    assert final.board is not None and final.board.best == "c2"
    assert final.cost == pytest.approx(0.08)
    assert final.to_dict()["leaderboard"]["rows"][0]["config"] == "c2"
