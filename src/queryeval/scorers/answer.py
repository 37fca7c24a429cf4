"""Scorer `answer` (seed 004): is a RAG answer correct? One scorer, six methods chosen by
`evaluation_method`: keyword, keyword_legacy, semantic_fixed, semantic_dynamic, llm_judge,
hybrid. The method, threshold and embedding model are recorded in every score and aggregate."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from queryeval.cases import Answer, Case, Output, Score
from queryeval.metrics import keyword_match
from queryeval.metrics.rag import keyword_score_legacy, metric_from_confusion
from queryeval.scorers._base import AsyncScorer, ScoringContext

if TYPE_CHECKING:
    import numpy as np

    from queryeval.embeddings import EncodeBatcher
    from queryeval.log import ScorerInfo

Method = Literal[
    "keyword", "keyword_legacy", "semantic_fixed", "semantic_dynamic", "llm_judge", "hybrid"
]
SEMANTIC: frozenset[str] = frozenset({"semantic_fixed", "semantic_dynamic", "hybrid"})


class AnswerOptions(BaseModel):
    """Options of `answer`. `threshold` (the scorer's pass threshold, default 0.5) is the judge
    score that counts as correct; `semantic_threshold` is the cosine cut-off."""

    model_config = ConfigDict(extra="forbid")

    evaluation_method: Method = "semantic_fixed"
    semantic_threshold: float = Field(default=0.75, ge=-1.0, le=1.0)
    calibration: str = Field(
        default="calibration.json", description="semantic_dynamic: file, relative to the suite"
    )
    keyword_gate: bool = Field(
        default=False, description="semantic methods: also require every expected keyword"
    )
    hybrid_semantic: Literal["semantic_fixed", "semantic_dynamic"] = "semantic_fixed"
    hybrid_band: float = Field(
        default=0.05, ge=0.0, le=1.0, description="hybrid: ask the judge when |sim - t| <= band"
    )


class AnswerScorer(AsyncScorer):
    """Binary 0/1 correctness for every method except `llm_judge` (the judge's graded score).
    Semantic methods compare with every accepted answer (any-of) and keep the best."""

    Options = AnswerOptions
    default_threshold = 0.5
    reads = "answer"
    options: AnswerOptions

    def __init__(self, options: BaseModel, config: Any = None) -> None:
        super().__init__(options, config)
        self._ready = False
        self._unavailable: str | None = None
        self._refs: dict[str, np.ndarray] = {}
        self._batcher: EncodeBatcher | None = None
        self._semantic_threshold = self.options.semantic_threshold
        self._threshold_source = "fixed"
        self._model_id: str | None = None
        self._judge: Any = None
        self._judge_missing: str | None = None

    @property
    def judge_missing(self) -> str | None:
        """Why no judge is available (None when there is one); known after `prepare`."""
        return None if self._judge is not None else (self._judge_missing or _how_to_configure())

    @property
    def method(self) -> str:
        """The evaluation method in use."""
        return self.options.evaluation_method

    def sub_metrics(self) -> frozenset[str]:
        """`keywords_found` (keyword methods), `similarity` (semantic ones), `judge_score`
        (the judge's, when it is asked)."""
        m = self.method
        if m in ("keyword", "keyword_legacy"):
            return frozenset({"keywords_found"})
        if m == "llm_judge":
            return frozenset({"judge_score"})
        return frozenset({"similarity", "judge_score"} if m == "hybrid" else {"similarity"})

    def config_problems(self, suite: Any) -> list[tuple[tuple[str | int, ...], str]]:
        """`semantic_dynamic` (or hybrid on it) needs its calibration file."""
        problems = super().config_problems(suite)
        if self._dynamic:
            words = "calibration file (made by `queryeval calibrate`)"
            problems += self.missing_files(suite, calibration=words)
        return problems

    def not_applicable(self, case: Case) -> str | None:
        """A case without an expected answer."""
        if case.id in self._refs or expected_answers(case):
            return None
        return "the case has no expected answer"

    def describe(self) -> ScorerInfo:
        """Name, options, and what the run resolved: threshold, its source, embedding model."""
        out = super().describe()
        out["evaluation_method"] = self.method
        out["semantic_threshold"] = self._semantic_threshold if self._uses_embeddings else None
        out["threshold_source"] = self._threshold_source if self._uses_embeddings else None
        out["embedding_model"] = self._model_id
        return out

    @property
    def _uses_embeddings(self) -> bool:
        return self.method in SEMANTIC

    @property
    def _dynamic(self) -> bool:
        if self.method == "hybrid":
            return self.options.hybrid_semantic == "semantic_dynamic"
        return self.method == "semantic_dynamic"

    # --- preparation --------------------------------------------------------------------

    def prepare(self, cases: Sequence[Case], ctx: ScoringContext) -> None:
        """Build the embedder and judge once, load the calibration, and embed every reference
        answer in one batched call so per-case scoring only embeds the generated answer."""
        self._ensure_ready(ctx)
        if not self._uses_embeddings or self._batcher is None:
            return
        todo = [(c.id, refs) for c in cases if c.id not in self._refs if (refs := _references(c))]
        if not todo:
            return
        from queryeval.embeddings import EmbeddingsRejected, EmbeddingsUnavailable

        try:
            vectors = self._batcher.embedder.encode([t for _, refs in todo for t in refs])
        except EmbeddingsRejected:
            return  # some text refused: each case embeds its own references when scored
        except EmbeddingsUnavailable as exc:
            self._unavailable = str(exc)
            return
        start = 0
        for case_id, refs in todo:
            self._refs[case_id] = vectors[start : start + len(refs)]
            start += len(refs)

    def _ensure_ready(self, ctx: ScoringContext) -> None:
        if self._ready:
            return
        if self._uses_embeddings:
            self._setup_embeddings(ctx)  # a bad calibration raises here, every time
        if self.method in ("llm_judge", "hybrid"):
            self._judge, self._judge_missing = _judge_from(ctx)
        self._ready = True

    def _setup_embeddings(self, ctx: ScoringContext) -> None:
        from queryeval.embeddings import (
            EmbeddingsUnavailable,
            EncodeBatcher,
            load_calibration,
        )

        try:
            embedder = ctx.embedder()
        except EmbeddingsUnavailable as exc:
            self._unavailable = str(exc)
            return
        self._model_id = embedder.model_id
        self._batcher = ctx.resource("answer:batcher", lambda: EncodeBatcher(embedder))
        if self._dynamic:
            name = self.options.calibration
            path = ctx.suite.resolve(name) if ctx.suite is not None else Path(name)
            calibration = load_calibration(path, model_id=embedder.model_id)
            self._semantic_threshold = calibration.threshold
            self._threshold_source = (
                f"calibration {path.name} ({calibration.metric}={calibration.score:.3f}, "
                f"n={calibration.n}{', PROXY labels' if calibration.proxy else ''})"
            )

    # --- scoring ------------------------------------------------------------------------

    async def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:  # type: ignore[override]
        """Score the final answer of `output` with the configured method."""
        if case.id not in self._refs and not expected_answers(case):
            return Score.unscored("the case has no expected answer", method=self.method)
        self._ensure_ready(ctx)
        final = output.final
        answer = (final.answer if final is not None else None) or ""
        base: dict[str, Any] = {"method": self.method}
        label = case.labels.get("correct")
        if label in (0, 1, True, False):
            base["human_label"] = int(label)
        m = self.method
        if m in ("keyword", "keyword_legacy"):
            return self._keyword(case, answer, base, legacy=m == "keyword_legacy")
        if m == "llm_judge":
            return await self._llm_judge(case, answer, base)
        return await self._semantic(case, answer, base)

    def _keyword(self, case: Case, answer: str, base: dict[str, Any], *, legacy: bool) -> Score:
        found_any: tuple[bool, dict[str, Any]] | None = None
        for keywords in _keyword_sets(case):
            match = keyword_match(answer, keywords)
            info = {"found": list(match.found), "missing": list(match.missing)}
            if found_any is None or match.all_found:
                found_any = (match.all_found, {**info, "keywords": keywords})
            if match.all_found:
                break
        assert found_any is not None
        ok, info = found_any
        if legacy:
            value = keyword_score_legacy(answer, info["keywords"])
            explanation = "legacy keyword score (0.5 floor for a wrong answer)"
        else:
            value = 1.0 if ok else 0.0
            explanation = "all keywords present" if ok else f"missing: {', '.join(info['missing'])}"
        metrics = {"keywords_found": 1.0 if ok else 0.0}
        return Score(
            value=value,
            passed=ok,
            explanation=explanation,
            details={**base, **info, "metrics": metrics},
        )

    async def _semantic(self, case: Case, answer: str, base: dict[str, Any]) -> Score:
        if self._unavailable or self._batcher is None:
            return Score.unscored(
                f"embeddings unavailable: {self._unavailable or 'not prepared'}", **base
            )
        from queryeval.embeddings import EmbeddingsRejected, EmbeddingsUnavailable

        refs = self._refs.get(case.id)
        try:
            if refs is None:  # not prepared (a case added after prepare): embed its references
                import numpy as np

                texts = _references(case)
                refs = np.stack([await self._batcher.encode(t) for t in texts])
                self._refs[case.id] = refs
        except EmbeddingsUnavailable as exc:  # a reference refused too: the gold's trouble
            return Score.unscored(f"embeddings unavailable: {exc}", **base)
        try:
            vector = await self._batcher.encode(answer)
        except EmbeddingsRejected as exc:  # refused alone, the endpoint taking plain text
            return Score.failure(
                "invalid_output", f"the embeddings endpoint refused the answer: {exc}", **base
            )
        except EmbeddingsUnavailable as exc:
            return Score.unscored(f"embeddings unavailable: {exc}", **base)
        if refs.shape[0] == 1:  # the common case, without numpy's per-call overhead
            best, sim = 0, float(refs[0] @ vector)
        else:
            sims = refs @ vector
            best = int(sims.argmax())
            sim = float(sims[best])
        sim = min(1.0, max(-1.0, sim))
        t = self._semantic_threshold
        details: dict[str, Any] = {
            **base,
            "similarity": round(sim, 6),
            "threshold": t,
            "threshold_source": self._threshold_source,
            "embedding_model": self._model_id,
            "metrics": {"similarity": sim},
        }
        if refs.shape[0] > 1:
            details["matched_reference"] = best
        correct = sim >= t
        why = f"similarity {sim:.3f} {'>=' if correct else '<'} {t:.3f}"
        # the gate needs explicit keywords of the reference that matched best
        gate = list(expected_answers(case)[best].keywords) if self.options.keyword_gate else []
        if gate:
            match = keyword_match(answer, gate)
            details["keywords_missing"] = list(match.missing)
            if correct and not match.all_found:
                correct = False
                why += f"; keyword gate: missing {', '.join(match.missing)}"
        if self.method == "hybrid" and abs(sim - t) <= self.options.hybrid_band:
            return await self._hybrid_judge(case, answer, details, why)
        if self.method == "hybrid":
            details["judge_called"] = False
        value = 1.0 if correct else 0.0
        return Score(value=value, passed=correct, explanation=why, details=details)

    async def _hybrid_judge(
        self, case: Case, answer: str, details: dict[str, Any], why: str
    ) -> Score:
        details["judge_called"] = True
        if self._judge is None:
            why += f": inside the band ±{self.options.hybrid_band}; {self._judge_missing}"
            return Score.unscored(why, **details)
        verdict = await self._ask_judge(case, answer)
        details["judge"] = _verdict_details(verdict)
        if verdict.status != "ok" or verdict.score is None:  # the judge's trouble, not ours
            return Score.unscored(f"{why}; judge: {verdict.reasoning}", **details)
        details["metrics"]["judge_score"] = float(verdict.score)
        correct = verdict.score >= (self.threshold if self.threshold is not None else 0.5)
        return Score(
            value=1.0 if correct else 0.0,
            passed=correct,
            explanation=f"{why}: uncertain, judge says {verdict.score:.2f}",
            details=details,
        )

    async def _llm_judge(self, case: Case, answer: str, base: dict[str, Any]) -> Score:
        if self._judge is None:
            return Score.unscored(self._judge_missing or _how_to_configure(), **base)
        verdict = await self._ask_judge(case, answer)
        details = {**base, "judge": _verdict_details(verdict), "judge_called": True}
        if verdict.status != "ok" or verdict.score is None:  # the judge's trouble, not ours
            return Score.unscored(verdict.reasoning or "the judge gave no score", **details)
        value = float(verdict.score)
        details["metrics"] = {"judge_score": value}
        return Score(value=value, explanation=verdict.reasoning, details=details)

    async def _ask_judge(self, case: Case, answer: str) -> Any:
        expected = expected_answers(case)
        assert expected
        return await self._judge.judge(
            "answer_correctness",
            {
                "question": case.question,
                "expected_answer": expected[0].text,
                "generated_answer": answer,
            },
        )

    # --- dataset level ------------------------------------------------------------------

    def aggregate(self, cases: Sequence[Case], scores: Sequence[Score]) -> dict[str, Any]:
        """The method and its settings, the value distribution (a 0.5 plateau shows here),
        how often the judge was asked, and agreement with human labels where cases have them."""
        ok = [s for s in scores if s.status == "ok" and s.value is not None]
        distribution = Counter(f"{s.value:g}" for s in ok if s.value is not None)
        out: dict[str, Any] = {
            "evaluation_method": self.method,
            "scored": len(ok),
            "unscored": sum(1 for s in scores if s.status == "unscored"),
            "errors": sum(1 for s in scores if s.status == "error"),
            "distribution": dict(sorted(distribution.items())),
            "share_at_0_5": distribution.get("0.5", 0) / len(ok) if ok else None,
        }
        if self._uses_embeddings:
            out.update(
                embedding_model=self._model_id,
                semantic_threshold=self._semantic_threshold,
                threshold_source=self._threshold_source,
                keyword_gate=self.options.keyword_gate,
            )
        if self.method == "hybrid":
            called = sum(1 for s in scores if s.details.get("judge_called"))
            out.update(hybrid_band=self.options.hybrid_band, judge_calls=called)
            out["judged_share"] = called / len(scores) if scores else None
        labelled = [
            (s.details["human_label"], bool(s.passed))
            for s in ok
            if "human_label" in s.details and s.passed is not None
        ]
        if labelled:
            tp = sum(1 for y, p in labelled if y and p)
            fp = sum(1 for y, p in labelled if not y and p)
            fn = sum(1 for y, p in labelled if y and not p)
            tn = len(labelled) - tp - fp - fn
            out["agreement_with_labels"] = {
                "n": len(labelled),
                "accuracy": metric_from_confusion("accuracy", tp, fp, fn, tn),
                "f1": metric_from_confusion("f1", tp, fp, fn, tn),
                "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
            }
        return out


def expected_answers(case: Case) -> list[Answer]:
    """Every accepted expected answer of the case (main target first), as Answer models."""
    out: list[Answer] = []
    for t in case.targets:
        a = t.answer
        if isinstance(a, str):
            a = Answer(text=a)
        if a is not None and a.text:
            out.append(a)
    return out


def _references(case: Case) -> list[str]:
    """Every accepted reference answer text of the case (main target first)."""
    return [a.text for a in expected_answers(case)]


def _keyword_sets(case: Case) -> list[list[str]]:
    """Per accepted target: its keywords, or (the seed's `expected`) the whole answer text."""
    return [list(a.keywords) or [a.text] for a in expected_answers(case)] or [[]]


def _judge_from(ctx: ScoringContext) -> tuple[Any, str | None]:
    """(judge, None), or (None, how to configure one). The judges layer loads lazily."""
    judge = ctx.judge()
    return (judge, None) if judge is not None else (None, _how_to_configure())


def _how_to_configure() -> str:
    from queryeval.judges import HOW_TO_CONFIGURE

    return HOW_TO_CONFIGURE


def _verdict_details(verdict: Any) -> dict[str, Any]:
    return {
        "score": verdict.score,
        "status": verdict.status,
        "reasoning": verdict.reasoning,
        "cached": getattr(verdict, "cached", None),
        "cost": getattr(verdict, "cost", None),
    }
