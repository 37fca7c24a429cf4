"""The RAG example end to end: the BM25 system, calibration on the labelled validation set
(checked against brute force), and a small grid run analysed by `queryeval grid`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import orjson
import pytest
from sklearn.metrics import accuracy_score, f1_score

from queryeval.cases import load_cases
from queryeval.cli._calibrate import calibrate, calibrate_command
from queryeval.cli._grid import grid_report
from queryeval.embeddings import BUNDLED_MODEL_ID, load_calibration, similarity
from queryeval.errors import InputError
from queryeval.runner import load_suite, run_suite

ROOT = Path(__file__).resolve().parent.parent
RAG = ROOT / "examples" / "rag"


@pytest.fixture
def rag_system(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from examples.rag import system

    return system


def test_corpus_and_cases_are_well_formed() -> None:
    rows = [orjson.loads(x) for x in (RAG / "data" / "corpus.jsonl").read_bytes().splitlines()]
    assert len(rows) == 200 and len({r["id"] for r in rows}) == 200
    assert all(r["text"].strip() and r["title"].strip() for r in rows)
    cases = load_cases("cases/*.yaml", RAG)
    assert len(cases) >= 40
    assert all(c.target and c.target.answer and c.target.answer.keywords for c in cases)
    labelled = load_cases("validation/cases.yaml", RAG)
    assert {c.labels["correct"] for c in labelled} == {0, 1}


def test_bm25_system_retrieves_and_extracts(rag_system) -> None:
    class Q:
        question = "What is the highest mountain in Veland?"

    out = rag_system.answer(Q(), top_k=3, chunk_size=20, answer_sentences=1)
    assert "p010" in out["retrieved"] and len(out["retrieved"]) == 3
    assert "Mount Skarra" in out["answer"]
    longer = rag_system.answer(Q(), top_k=3, chunk_size=20, answer_sentences=2)
    assert longer["answer"].startswith(out["answer"]) and len(longer["answer"]) > len(out["answer"])
    # chunking keeps whole sentences and respects the size unless one sentence is longer
    chunks = rag_system.chunk("One two three. Four five. Six seven eight nine.", 5)
    assert chunks == ["One two three. Four five.", "Six seven eight nine."]
    assert rag_system.chunk("A b. C d.", 0) == ["A b. C d."]


def _validation_pairs() -> tuple[list[float], list[int]]:
    suite = load_suite(RAG / "validation.yaml")
    cases = {c.id: c for c in load_cases(suite.cases, suite.base_dir)}
    sims, labels = [], []
    for line in (RAG / "validation" / "answers.jsonl").read_bytes().splitlines():
        rec = orjson.loads(line)
        case = cases[rec["case_id"]]
        sims.append(similarity(rec["answer"], case.target.answer.text))
        labels.append(case.labels["correct"])
    return sims, labels


@pytest.mark.parametrize("metric", ["accuracy", "f1"])
def test_calibration_is_optimal_by_brute_force(tmp_path: Path, metric: str) -> None:
    out = tmp_path / "cal.json"
    calibration, path, skipped = calibrate(RAG / "validation.yaml", metric=metric, out=out)
    assert path == out and skipped == 0 and not calibration.proxy
    sims, labels = _validation_pairs()
    assert calibration.n == len(labels) == 50

    def value(t: float) -> float:
        pred = [int(s >= t) for s in sims]
        if metric == "accuracy":
            return float(accuracy_score(labels, pred))
        return float(f1_score(labels, pred, zero_division=0))

    best = max(value(t) for t in [*sorted(set(sims)), math.inf])
    assert calibration.score == pytest.approx(best, abs=1e-9)
    assert value(calibration.threshold) == pytest.approx(best, abs=1e-9)
    assert calibration.score >= calibration.default_score  # never worse than the seed's 0.75
    saved = load_calibration(out, model_id=BUNDLED_MODEL_ID)
    assert saved.threshold == calibration.threshold and saved.suite is not None
    with pytest.raises(InputError, match="calibrated for embedding model"):
        load_calibration(out, model_id="openai:text-embedding-3-small")


def test_committed_calibration_matches_the_validation_set(tmp_path: Path) -> None:
    committed = load_calibration(RAG / "calibration.json", model_id=BUNDLED_MODEL_ID)
    fresh, _, _ = calibrate(RAG / "validation.yaml", out=tmp_path / "c.json")
    assert committed.threshold == pytest.approx(fresh.threshold, abs=1e-5)
    assert committed.score == pytest.approx(fresh.score)


def test_without_labels_the_proxy_is_announced(tmp_path: Path, capsys) -> None:
    lines = (RAG / "validation" / "cases.yaml").read_text().replace("correct: 1", "note: 1")
    (tmp_path / "cases.yaml").write_text(lines.replace("correct: 0", "note: 0"))
    (tmp_path / "answers.jsonl").write_bytes((RAG / "validation" / "answers.jsonl").read_bytes())
    (tmp_path / "suite.yaml").write_text(
        "name: unlabelled\ncases: cases.yaml\n"
        "systems: [{name: s, predictions: answers.jsonl}]\n"
        "scorers: [answer]\n"
    )
    calibrate_command(tmp_path / "suite.yaml")
    printed = capsys.readouterr().out
    assert "WARNING" in printed and "PROXY" in printed
    saved = json.loads((tmp_path / "calibration.json").read_text())
    assert saved["proxy"] is True
    with pytest.raises(InputError, match="F1 needs human"):
        calibrate(tmp_path / "suite.yaml", metric="f1", out=tmp_path / "f1.json")


def test_calibration_needs_a_predictions_system(tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text(
        f"name: x\ncases: {RAG / 'validation' / 'cases.yaml'}\n"
        "systems: [{name: s, callable: 'os:getcwd'}]\nscorers: [answer]\n"
    )
    with pytest.raises(InputError, match="labelled answers"):
        calibrate(tmp_path / "suite.yaml")


def test_small_grid_run_and_grid_report(tmp_path: Path, rag_system) -> None:
    suite = load_suite(RAG / "suite.yaml")
    suite.systems[0].params = {"top_k": [1, 3], "chunk_size": [20], "answer_sentences": [1, 3]}
    suite.reports = [r for r in suite.reports if r.kind == "json"]
    result = run_suite(suite, tmp_path / "run", progress=False)
    systems = result.summary["systems"]
    assert len(systems) == 4
    entry = systems["rag[top_k=3,chunk_size=20,answer_sentences=1]"]["scorers"]
    assert entry["semantic"]["ok"] == 50
    agg = entry["semantic"]["aggregate"]
    assert agg["evaluation_method"] == "semantic_fixed" and agg["semantic_threshold"] == 0.75
    assert entry["calibrated"]["aggregate"]["threshold_source"].startswith("calibration")
    assert entry["keyword_legacy"]["aggregate"]["share_at_0_5"] > 0
    assert entry["keyword"]["aggregate"]["share_at_0_5"] == 0
    # the retriever: more passages retrieved never lowers recall@5 or the hit rate, and a
    # single passage gives precision@5 at most 1/5
    retrieval = {
        top_k: systems[f"rag[top_k={top_k},chunk_size=20,answer_sentences=1]"]["scorers"][
            "retrieval"
        ]
        for top_k in (1, 3)
    }
    assert retrieval[1]["ok"] == retrieval[3]["ok"] == 50
    one, three = (retrieval[k]["metrics"] for k in (1, 3))
    assert three["recall"]["mean"] >= one["recall"]["mean"] > 0
    assert three["hit_rate"]["mean"] >= one["hit_rate"]["mean"]
    assert one["precision"]["mean"] <= 0.2 + 1e-12
    assert one["mrr"]["mean"] == pytest.approx(one["hit_rate"]["mean"])  # rank 1 or nothing
    run_json = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run_json["scorers"]["semantic"]["evaluation_method"] == "semantic_fixed"

    report = grid_report(tmp_path / "run")
    section = report["grids"]["rag"]
    rows = section["leaderboards"]["semantic"]["rows"]
    assert len(rows) == 4 and rows[0]["rank"] == 1
    assert set(section["picks"]) == {
        "semantic",
        "calibrated",
        "keyword",
        "keyword_legacy",
        "retrieval",
    }
    assert section["final_ranking"]["status"] == "unscored"  # no judge in the example suite
    assert (tmp_path / "run" / "grid.json").exists()
    assert "ranked by semantic" in section["text"]


def test_paraphrase_stress_set_defeats_any_threshold(tmp_path: Path) -> None:
    """Hand-written wrong-fact answers look as similar as right ones: the best threshold is
    no better than calling every answer wrong (the majority class)."""
    calibration, _, _ = calibrate(RAG / "paraphrases.yaml", out=tmp_path / "p.json")
    cases = load_cases("validation/paraphrase_cases.yaml", RAG)
    labels = [c.labels["correct"] for c in cases]
    majority = max(sum(labels), len(labels) - sum(labels)) / len(labels)
    assert calibration.score == pytest.approx(majority, abs=0.02)
    # per question: answer a is the right paraphrase, answer b the same frame with a wrong fact
    answers = {
        orjson.loads(x)["case_id"]: orjson.loads(x)["answer"]
        for x in (RAG / "validation" / "paraphrase_answers.jsonl").read_bytes().splitlines()
    }
    golds = {c.id: c.target.answer.text for c in cases}
    questions = sorted({cid[:-1] for cid in golds})
    wrong_higher = sum(
        similarity(answers[q + "b"], golds[q + "b"]) > similarity(answers[q + "a"], golds[q + "a"])
        for q in questions
    )
    assert wrong_higher > len(questions) / 2


def test_commands_exit_2_on_bad_input(tmp_path: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from queryeval.cli._grid import grid_command

    app = typer.Typer()
    app.command("calibrate")(calibrate_command)
    app.command("grid")(grid_command)
    runner = CliRunner()
    result = runner.invoke(app, ["grid", str(tmp_path)])
    assert result.exit_code == 2 and "not a run directory" in result.output
    result = runner.invoke(app, ["calibrate", str(RAG / "validation.yaml"), "--metric", "auc"])
    assert result.exit_code == 2 and "--metric must be accuracy or f1" in result.output


def test_grid_final_ranking_with_a_judge(
    tmp_path: Path, rag_system, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fakes.openai_server import ChatRequest, FakeOpenAI, Reply

    def verdict(request: ChatRequest) -> Reply:
        # a stand-in judge: longer answers are worse (so it disagrees with nothing in particular)
        text = request.content("user")
        return Reply.verdict(1.0 if text.count(".") < 8 else 0.6)

    monkeypatch.setenv("FAKE_JUDGE_KEY", "k")
    with FakeOpenAI(verdict, api_key="k") as server:
        suite = load_suite(RAG / "suite.yaml")
        suite.systems[0].params = {"top_k": [1, 3], "chunk_size": [20], "answer_sentences": [1]}
        suite.reports = [r for r in suite.reports if r.kind == "json"]
        suite.scorers = suite.scorers[:1]
        suite.judge = {
            "model": "fake",
            "base_url": server.base_url,
            "api_key_env": "FAKE_JUDGE_KEY",
        }
        run_suite(suite, tmp_path / "run", progress=False)
        report = grid_report(tmp_path / "run", top_n=1)
        final = report["grids"]["rag"]["final_ranking"]
        assert final["status"] == "ok" and len(final["candidates"]) == 1
        assert final["judge_calls"] == 50 and len(server.chat_requests) == 50
        row = final["leaderboard"]["rows"][0]
        assert row["config"] == final["candidates"][0] and row["n"] == 50
        assert 0.6 <= row["mean"] <= 1.0
