"""The `answer` scorer: every evaluation method, with the real offline model and a fake judge."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import queryeval.judges
from queryeval.cases import Attempt, Case, Output, Score
from queryeval.config import ScorerConfig, SuiteConfig
from queryeval.embeddings import BUNDLED_MODEL_ID, Calibration, save_calibration
from queryeval.errors import InputError
from queryeval.scorers import ScoringContext, build_scorer
from queryeval.scorers.answer import AnswerScorer

PARIS = "The capital of France is Paris"
SEED_ANSWERS = [
    "The capital of France is Paris",
    "France's seat of government is in Paris",
    "The capital city is Paris",
    "The capital of France is Lyon",
    "I don't know",
]


def _case(answer: str = PARIS, keywords: tuple[str, ...] = ("paris",), **kw: Any) -> Case:
    return Case.model_validate(
        {
            "id": kw.pop("id", "c1"),
            "conversation": [
                {
                    "role": "user",
                    "content": "What is the capital of France?",
                    "target": {"answer": {"text": answer, "keywords": list(keywords)}},
                }
            ],
            **kw,
        }
    )


def _out(answer: str | None) -> Output:
    return Output(attempts=[Attempt(answer=answer)])


def _suite(tmp_path: Path, **extra: Any) -> SuiteConfig:
    suite = SuiteConfig.model_validate(
        {
            "name": "t",
            "cases": "x",
            "systems": [{"name": "a", "predictions": "p"}],
            "embeddings": {"device": "cpu"},
            **extra,
        }
    )
    suite.base_dir = tmp_path
    suite.source = tmp_path / "suite.yaml"
    return suite


def _scorer(method: str, **options: Any) -> AnswerScorer:
    scorer = build_scorer(
        ScorerConfig(name="answer", options={"evaluation_method": method, **options})
    )
    assert isinstance(scorer, AnswerScorer)
    return scorer


def _score_all(
    scorer: AnswerScorer, case: Case, answers: list[str], ctx: ScoringContext
) -> list[Score]:
    scorer.prepare([case], ctx)

    async def run() -> list[Score]:
        return await asyncio.gather(*(scorer.score(case, _out(a), ctx) for a in answers))

    return [scorer.finish(s) for s in asyncio.run(run())]


@pytest.fixture
def ctx(tmp_path: Path) -> ScoringContext:
    context = ScoringContext(_suite(tmp_path), cache_dir=tmp_path / "cache")
    yield context
    context.close()


def test_keyword_binary_and_legacy_on_the_seed_table(ctx: ScoringContext) -> None:
    binary = _score_all(_scorer("keyword"), _case(), SEED_ANSWERS, ctx)
    legacy = _score_all(_scorer("keyword_legacy"), _case(), SEED_ANSWERS, ctx)
    assert [s.value for s in binary] == [1.0, 1.0, 1.0, 0.0, 0.0]
    assert [s.value for s in legacy] == [1.0, 1.0, 1.0, 0.5, 0.5]
    # legacy reproduces the number, but a wrong answer never *passes*
    assert [s.passed for s in legacy] == [True, True, True, False, False]
    assert all(s.details["method"] == "keyword" for s in binary)


def test_seed_semantic_tests_with_the_real_model(ctx: ScoringContext) -> None:
    paraphrase = _score_all(
        _scorer("semantic_fixed", semantic_threshold=0.7),
        _case(PARIS),
        ["Paris is France's capital city"],
        ctx,
    )[0]
    assert paraphrase.value == 1.0 and paraphrase.passed
    assert paraphrase.details["similarity"] >= 0.7
    assert paraphrase.details["embedding_model"] == BUNDLED_MODEL_ID
    london = "The capital of France is London"
    fixed = _score_all(
        _scorer("semantic_fixed", semantic_threshold=0.7), _case(PARIS), [london], ctx
    )
    # The seed expects 0.0 here, but all-MiniLM-L6-v2 puts the two sentences at cosine ~0.84:
    # a fixed 0.7 cannot see that the city is wrong. Recorded as measured, not as hoped.
    assert fixed[0].details["similarity"] > 0.8
    assert fixed[0].value == 1.0
    # What does give the seed's 0.0: the keyword gate, or a threshold above that similarity.
    gated = _score_all(
        _scorer("semantic_fixed", semantic_threshold=0.7, keyword_gate=True),
        _case(PARIS),
        [london],
        ctx,
    )
    assert gated[0].value == 0.0 and gated[0].details["keywords_missing"] == ["paris"]
    strict = _score_all(
        _scorer("semantic_fixed", semantic_threshold=0.9), _case(PARIS), [london], ctx
    )
    assert strict[0].value == 0.0


def test_semantic_values_are_binary_and_keep_similarity(ctx: ScoringContext) -> None:
    scorer = _scorer("semantic_fixed")
    scores = _score_all(scorer, _case(), SEED_ANSWERS, ctx)
    assert {s.value for s in scores} <= {0.0, 1.0}
    sims = [s.details["similarity"] for s in scores]
    assert all(
        s.value == (1.0 if sim >= 0.75 else 0.0) for s, sim in zip(scores, sims, strict=True)
    )
    assert scores[-1].value == 0.0  # "I don't know"
    agg = scorer.aggregate([], scores)
    assert agg["evaluation_method"] == "semantic_fixed"
    assert agg["share_at_0_5"] == 0.0 and set(agg["distribution"]) <= {"0", "1"}
    assert scorer.describe()["evaluation_method"] == "semantic_fixed"


def test_any_of_references_keep_the_best(ctx: ScoringContext) -> None:
    case = Case.model_validate(
        {
            "id": "c",
            "conversation": [
                {
                    "role": "user",
                    "content": "Where?",
                    "target": [{"answer": "It is in Norway."}, {"answer": "Paris is the capital."}],
                }
            ],
        }
    )
    score = _score_all(_scorer("semantic_fixed"), case, ["The capital is Paris."], ctx)[0]
    assert score.details["matched_reference"] == 1 and score.value == 1.0


def test_empty_answer_is_zero_and_system_error_is_failed(ctx: ScoringContext) -> None:
    scorer = _scorer("semantic_fixed")
    assert _score_all(scorer, _case(), [""], ctx)[0].value == 0.0
    crashed = asyncio.run(scorer.score(_case(), Output(error="boom"), ctx))
    assert crashed.value == 0.0 and crashed.passed is False
    no_target = Case.model_validate({"id": "x", "conversation": [{"content": "hi"}]})
    assert asyncio.run(scorer.score(no_target, _out("a"), ctx)).status == "unscored"


def test_unavailable_embeddings_are_unscored_never_zero(tmp_path: Path) -> None:
    suite = _suite(tmp_path, embeddings={"model": str(tmp_path / "missing-model")})
    ctx = ScoringContext(suite, cache_dir=tmp_path)
    scores = _score_all(_scorer("semantic_fixed"), _case(), ["Paris"], ctx)
    assert scores[0].status == "unscored" and scores[0].value is None
    assert "embeddings unavailable" in scores[0].explanation


def _calibration(path: Path, model_id: str = BUNDLED_MODEL_ID, threshold: float = 0.95) -> Path:
    return save_calibration(
        Calibration(
            model_id=model_id,
            threshold=threshold,
            metric="accuracy",
            score=0.9,
            n=10,
            proxy=False,
            confusion={"tp": 4, "fp": 0, "fn": 1, "tn": 5},
        ),
        path,
    )


def test_semantic_dynamic_uses_the_saved_threshold(tmp_path: Path, ctx: ScoringContext) -> None:
    _calibration(tmp_path / "calibration.json", threshold=0.95)
    scorer = _scorer("semantic_dynamic")
    scores = _score_all(scorer, _case(), ["France's seat of government is in Paris"], ctx)
    # similarity ~0.81: passes the seed's 0.75, fails the calibrated 0.95
    assert 0.75 < scores[0].details["similarity"] < 0.95
    assert scores[0].value == 0.0 and scores[0].details["threshold"] == 0.95
    assert "calibration.json" in scores[0].details["threshold_source"]
    assert scorer.describe()["semantic_threshold"] == 0.95


def test_calibration_for_another_model_is_refused(tmp_path: Path, ctx: ScoringContext) -> None:
    _calibration(tmp_path / "calibration.json", model_id="openai:text-embedding-3-small")
    with pytest.raises(InputError, match="calibrated for embedding model") as err:
        _scorer("semantic_dynamic").prepare([_case()], ctx)
    assert "calibration.json" in str(err.value)


def test_missing_calibration_says_how_to_make_one(ctx: ScoringContext) -> None:
    with pytest.raises(InputError, match="queryeval calibrate"):
        _scorer("semantic_dynamic", calibration="nope.json").prepare([_case()], ctx)


def test_llm_judge_without_a_judge_is_unscored_with_how_to(
    ctx: ScoringContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the suite configures no judge: judges.judge_from_context returns None
    monkeypatch.setattr(queryeval.judges, "judge_from_context", lambda ctx: None, raising=False)
    scores = _score_all(_scorer("llm_judge"), _case(), ["Paris"], ctx)
    assert scores[0].status == "unscored" and scores[0].value is None
    assert "no judge configured" in scores[0].explanation and "judge:" in scores[0].explanation


@dataclass
class FakeVerdict:
    score: float | None
    status: str = "ok"
    reasoning: str = "fake"
    raw: str | None = None
    cached: bool = False
    usage: dict[str, int] = field(default_factory=dict)
    cost: float | None = 0.001


class FakeJudge:
    """Says 1.0 when the generated answer names Paris, else 0.2; records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def judge(self, rubric: str, inputs: dict[str, Any]) -> FakeVerdict:
        self.calls.append((rubric, inputs))
        if "garbled" in inputs["generated_answer"]:
            return FakeVerdict(None, status="unscored", reasoning="unparseable reply")
        return FakeVerdict(1.0 if "Paris" in inputs["generated_answer"] else 0.2)


@pytest.fixture
def fake_judge(monkeypatch: pytest.MonkeyPatch) -> FakeJudge:
    judge = FakeJudge()
    monkeypatch.setattr(queryeval.judges, "judge_from_context", lambda ctx: judge, raising=False)
    return judge


def test_llm_judge_uses_the_answer_correctness_rubric(
    ctx: ScoringContext, fake_judge: FakeJudge
) -> None:
    scores = _score_all(_scorer("llm_judge"), _case(), ["It is Paris", "Lyon", "garbled"], ctx)
    assert [s.value for s in scores] == [1.0, 0.2, None]
    assert [s.passed for s in scores] == [True, False, None]
    assert scores[2].status == "unscored"  # an unparseable reply is never a 0
    rubric, inputs = fake_judge.calls[0]
    assert rubric == "answer_correctness"
    assert inputs == {
        "question": "What is the capital of France?",
        "expected_answer": PARIS,
        "generated_answer": "It is Paris",
    }


def test_hybrid_asks_the_judge_only_inside_the_band(
    ctx: ScoringContext, fake_judge: FakeJudge
) -> None:
    answers = [
        "The capital of France is Paris",  # ~1.0: certain
        "I don't know",  # ~0.0: certain
        "The capital of France is Lyon",  # ~0.75: uncertain -> judge (says 0.2)
    ]
    scorer = _scorer("hybrid", hybrid_band=0.05)
    scores = _score_all(scorer, _case(), answers, ctx)
    assert [s.details["judge_called"] for s in scores] == [False, False, True]
    assert len(fake_judge.calls) == 1
    assert [s.value for s in scores] == [1.0, 0.0, 0.0]
    assert scores[2].details["metrics"]["judge_score"] == 0.2
    agg = scorer.aggregate([], scores)
    assert agg["judge_calls"] == 1 and agg["judged_share"] == pytest.approx(1 / 3)


def test_hybrid_without_judge_leaves_only_the_band_unscored(ctx: ScoringContext) -> None:
    answers = ["The capital of France is Paris", "The capital of France is Lyon"]
    scores = _score_all(_scorer("hybrid", hybrid_band=0.05), _case(), answers, ctx)
    assert scores[0].value == 1.0
    assert scores[1].status == "unscored" and "band" in scores[1].explanation


def test_agreement_with_human_labels_in_the_aggregate(ctx: ScoringContext) -> None:
    scorer = _scorer("keyword")
    cases = [
        _case(id="a", labels={"correct": 1}),
        _case(id="b", labels={"correct": 0}),
        _case(id="c", labels={"correct": 1}),
    ]
    answers = ["Paris", "Paris, surely", "Lyon"]  # keyword says 1, 1, 0
    scores = []
    for case, answer in zip(cases, answers, strict=True):
        scores.append(asyncio.run(scorer.score(case, _out(answer), ctx)))
    agreement = scorer.aggregate(cases, scores)["agreement_with_labels"]
    assert agreement["confusion"] == {"tp": 1, "fp": 1, "fn": 1, "tn": 0}
    assert agreement["accuracy"] == pytest.approx(1 / 3) and agreement["f1"] == pytest.approx(0.5)


def test_unknown_method_is_refused_at_load() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        build_scorer(ScorerConfig(name="answer", options={"evaluation_method": "vibes"}))


def test_keyword_gate_needs_explicit_keywords(ctx: ScoringContext) -> None:
    # no keywords: the gate does not demand the whole expected sentence verbatim
    scorer = _scorer("semantic_fixed", keyword_gate=True)
    score = _score_all(scorer, _case(keywords=()), ["Paris is France's capital city"], ctx)[0]
    assert score.value == 1.0 and "keywords_missing" not in score.details


def test_a_refused_calibration_is_never_silently_replaced(
    tmp_path: Path, ctx: ScoringContext
) -> None:
    _calibration(tmp_path / "calibration.json", model_id="another/model")
    scorer = _scorer("semantic_dynamic")
    with pytest.raises(InputError):
        scorer.prepare([_case()], ctx)
    with pytest.raises(InputError):  # scoring anyway does not fall back to 0.75
        asyncio.run(scorer.score(_case(), _out("Paris"), ctx))


def test_an_answer_the_endpoint_refuses_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OpenAI-compatible endpoint refuses an over-long answer (400): that answer fails,
    the answers batched with it are scored, nothing is unscored. An endpoint that refuses
    everything (its configuration) leaves the cases unscored, never zero."""
    from fakes.openai_server import FakeOpenAI, RefuseInput, hashed_embedding

    def refuse_long(request: Any) -> list[list[float]]:
        if any(len(t) > 80 for t in request.texts):
            raise RefuseInput("This model's maximum context length is 8192 tokens")
        return [hashed_embedding(t, 32) for t in request.texts]

    monkeypatch.setenv("FAKE_EMB_KEY", "k")
    answers = [PARIS, "Paris " * 40, "The capital of France is Paris, yes", "I don't know"]
    with FakeOpenAI(embed=refuse_long) as server:
        embeddings = {"backend": "openai", "model": "e", "base_url": server.base_url,
                      "api_key_env": "FAKE_EMB_KEY", "cache": False}  # fmt: skip
        ctx = ScoringContext(_suite(tmp_path, embeddings=embeddings), cache_dir=tmp_path)
        scores = _score_all(
            _scorer("semantic_fixed", semantic_threshold=0.5), _case(), answers, ctx
        )
        ctx.close()
        long_refused = len(server.embedding_requests)
    assert [s.status for s in scores] == ["ok"] * 4
    assert scores[1].value == 0.0 and scores[1].failure_reason == "invalid_output"
    assert "refused the answer" in scores[1].explanation
    assert scores[0].value == 1.0 and scores[2].value == 1.0  # batched with it, scored
    assert long_refused < 12  # the refused batch was split, not sent text by text

    def refuse_nearly_all(request: Any) -> list[list[float]]:  # takes the reference only
        if any(t != PARIS for t in request.texts):
            raise RefuseInput("dimensions must be at most 64")
        return [hashed_embedding(t, 32) for t in request.texts]

    with FakeOpenAI(embed=refuse_nearly_all) as server:
        embeddings = {"backend": "openai", "model": "e", "base_url": server.base_url,
                      "api_key_env": "FAKE_EMB_KEY", "cache": False}  # fmt: skip
        ctx = ScoringContext(_suite(tmp_path, embeddings=embeddings), cache_dir=tmp_path)
        scores = _score_all(_scorer("semantic_fixed"), _case(), answers[:2], ctx)
        ctx.close()
    # a plain text is refused too: the endpoint's trouble, not the answers'
    assert [s.status for s in scores] == ["unscored", "unscored"]
    assert "refuses a plain text too" in scores[1].explanation


def test_a_reference_the_endpoint_refuses_leaves_its_case_alone_unscored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fakes.openai_server import FakeOpenAI, RefuseInput, hashed_embedding

    def refuse_marked(request: Any) -> list[list[float]]:
        if any("\u00a7" in t for t in request.texts):
            raise RefuseInput("input contains a character this model cannot take")
        return [hashed_embedding(t, 32) for t in request.texts]

    monkeypatch.setenv("FAKE_EMB_KEY", "k")
    cases = [_case(id="ok"), _case("The capital \u00a7 of France is Paris.", id="marked_gold")]
    with FakeOpenAI(embed=refuse_marked) as server:
        embeddings = {"backend": "openai", "model": "e", "base_url": server.base_url,
                      "api_key_env": "FAKE_EMB_KEY", "cache": False}  # fmt: skip
        ctx = ScoringContext(_suite(tmp_path, embeddings=embeddings), cache_dir=tmp_path)
        scorer = _scorer("semantic_fixed", semantic_threshold=0.5)
        scorer.prepare(cases, ctx)

        async def run() -> list[Score]:
            return list(await asyncio.gather(*(scorer.score(c, _out(PARIS), ctx) for c in cases)))

        scores = [scorer.finish(s) for s in asyncio.run(run())]
        ctx.close()
    assert scores[0].status == "ok" and scores[0].value == 1.0
    assert scores[1].status == "unscored" and "refused" in scores[1].explanation


def test_a_request_over_the_endpoints_size_is_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fakes.openai_server import FakeOpenAI, RefuseInput, hashed_embedding

    def at_most_two(request: Any) -> list[list[float]]:
        if len(request.texts) > 2:
            raise RefuseInput("too many inputs: at most 2 per request")
        return [hashed_embedding(t, 32) for t in request.texts]

    monkeypatch.setenv("FAKE_EMB_KEY", "k")
    answers = [PARIS, "Paris is the capital of France", "Lyon", "I don't know", PARIS + "!"]
    with FakeOpenAI(embed=at_most_two) as server:
        embeddings = {"backend": "openai", "model": "e", "base_url": server.base_url,
                      "api_key_env": "FAKE_EMB_KEY", "batch_size": 64,
                      "cache": False}  # fmt: skip
        ctx = ScoringContext(_suite(tmp_path, embeddings=embeddings), cache_dir=tmp_path)
        scores = _score_all(
            _scorer("semantic_fixed", semantic_threshold=0.5), _case(), answers, ctx
        )
        ctx.close()
    assert [s.status for s in scores] == ["ok"] * 5
    assert scores[0].value == 1.0 and all(s.failure_reason is None for s in scores)


def test_an_answer_over_the_endpoints_context_is_read_from_its_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a local model reads only an answer's first tokens, an answer an endpoint refuses
    as too long is embedded from its longest halving the endpoint takes."""
    from fakes.openai_server import FakeOpenAI, RefuseInput, hashed_embedding

    def context_of_80(request: Any) -> list[list[float]]:
        if any(len(t) > 80 for t in request.texts):
            raise RefuseInput("This model's maximum context length is 80")
        return [hashed_embedding(t, 32) for t in request.texts]

    monkeypatch.setenv("FAKE_EMB_KEY", "k")
    long_answer = (PARIS + " " * 45 + "and then a digression about other cities, " * 3)[:150]
    with FakeOpenAI(embed=context_of_80) as server:
        embeddings = {"backend": "openai", "model": "e", "base_url": server.base_url,
                      "api_key_env": "FAKE_EMB_KEY", "cache": False}  # fmt: skip
        ctx = ScoringContext(_suite(tmp_path, embeddings=embeddings), cache_dir=tmp_path)
        scores = _score_all(_scorer("semantic_fixed"), _case(), [long_answer, "Lyon"], ctx)
        ctx.close()
        sent = [t for r in server.embedding_requests for t in r.texts]
    assert len(long_answer) == 150 and long_answer[:75].strip() == PARIS
    assert long_answer[:75] in sent  # its first half was embedded
    assert scores[0].status == "ok" and scores[0].value == 1.0 and scores[0].failure_reason is None
    assert scores[1].status == "ok" and scores[1].value == 0.0
