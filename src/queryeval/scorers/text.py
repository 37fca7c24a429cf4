"""Query-text similarity scorers (seed 003's string metrics): `bleu`, `rouge_l`,
`jaro_winkler`, `jaccard`, `exact_match`. Each compares the final attempt's query with the
case's gold query text; with several accepted golds the best one counts and is recorded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from queryeval.cases import Case, Output, Score
from queryeval.metrics import bleu, exact_match, jaccard, jaro_winkler, rouge_l
from queryeval.scorers._attempts import gold_query
from queryeval.scorers._base import Scorer, ScoringContext


class _TextOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    attempt: Literal["final", "first"] = Field(
        default="final", description="which attempt's query is compared"
    )


class _QueryTextScorer(Scorer):
    """Shared plumbing: find the predicted query and the gold query texts. A query that is
    the system's failure (empty, a write, rejected by the engine) is 0 before any text is
    compared (`queryeval.scorers._produced`): text similarity never rewards garbage."""

    forks = True  # pure per case: see Scorer.forks

    Options: ClassVar[type[BaseModel]] = _TextOptions
    metric_name: ClassVar[str] = ""
    reads = "query"

    def metric(self, prediction: str, reference: str) -> float:
        raise NotImplementedError

    def sub_metrics(self) -> frozenset[str]:
        """The one metric, under its own name."""
        return frozenset({self.metric_name})

    def not_applicable(self, case: Case) -> str | None:
        """A case without a gold query text has nothing to compare with."""
        if any(gold_query(t) is not None for t in case.targets):
            return None
        return "the case has no gold query text"

    def best(self, prediction: str, golds: Sequence[str]) -> tuple[int, float]:
        """The index and value of the best-matching gold."""
        values = [self.metric(prediction, g) for g in golds]
        index = max(range(len(values)), key=values.__getitem__)
        return index, values[index]

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        golds = [q.text for t in case.targets if (q := gold_query(t)) is not None]
        attempt = output.first if self.attempt_choice == "first" else output.final
        prediction = (attempt.query if attempt is not None else None) or ""
        index, value = self.best(prediction, golds)
        details: dict[str, Any] = {"metrics": {self.metric_name: value}}
        if len(golds) > 1:
            details["matched_gold"] = index
        return Score(value=value, details=details)


class BleuOptions(_TextOptions):
    """sacreBLEU's sentence-BLEU options (defaults: 13a tokens, exp smoothing)."""

    tokenize: str = "13a"
    smooth_method: Literal["exp", "floor", "add-k", "none"] = "exp"
    smooth_value: float | None = None
    lowercase: bool = False
    max_ngram_order: int = Field(default=4, ge=1)
    multi_reference: bool = Field(
        default=False,
        description="several accepted golds as one multi-reference BLEU instead of the best",
    )


class BleuScorer(_QueryTextScorer):
    """Sentence BLEU of the query text (equal to sacrebleu.sentence_bleu / 100)."""

    Options = BleuOptions
    options: BleuOptions
    metric_name = "bleu"

    def metric(self, prediction: str, reference: str | Sequence[str]) -> float:
        o = self.options
        return bleu(prediction, reference, tokenize=o.tokenize, smooth_method=o.smooth_method,
                    smooth_value=o.smooth_value, lowercase=o.lowercase,
                    max_ngram_order=o.max_ngram_order)  # fmt: skip

    def best(self, prediction: str, golds: Sequence[str]) -> tuple[int, float]:
        if self.options.multi_reference and len(golds) > 1:
            return -1, self.metric(prediction, golds)
        return super().best(prediction, golds)


class RougeLOptions(_TextOptions):
    """Which ROUGE-L figure is the value."""

    measure: Literal["f", "precision", "recall"] = "f"


class RougeLScorer(_QueryTextScorer):
    """ROUGE-L of the query text (rouge-score's rougeL, default tokenizer, no stemming)."""

    Options = RougeLOptions
    options: RougeLOptions
    metric_name = "rouge_l"

    def metric(self, prediction: str, reference: str) -> float:
        return rouge_l(prediction, reference, measure=self.options.measure)


class JaroWinklerOptions(_TextOptions):
    """Winkler's prefix scale."""

    prefix_weight: float = Field(default=0.1, ge=0.0, le=0.25)


class JaroWinklerScorer(_QueryTextScorer):
    """Jaro-Winkler similarity of the query texts (characters)."""

    Options = JaroWinklerOptions
    options: JaroWinklerOptions
    metric_name = "jaro_winkler"

    def metric(self, prediction: str, reference: str) -> float:
        return jaro_winkler(prediction, reference, prefix_weight=self.options.prefix_weight)


class JaccardOptions(_TextOptions):
    """Tokens of the two sets."""

    tokens: Literal["whitespace", "rouge", "13a", "chars"] = "whitespace"
    lowercase: bool = False


class JaccardScorer(_QueryTextScorer):
    """Jaccard similarity of the query texts' token sets (seed 003's "Jaccard Cypher")."""

    Options = JaccardOptions
    options: JaccardOptions
    metric_name = "jaccard"

    def metric(self, prediction: str, reference: str) -> float:
        return jaccard(prediction, reference, tokens=self.options.tokens,
                       lowercase=self.options.lowercase)  # fmt: skip


class ExactMatchOptions(_TextOptions):
    """What differences exact match forgives."""

    ignore_case: bool = False
    normalize_whitespace: bool = False


class ExactMatchScorer(_QueryTextScorer):
    """1 when the query text equals a gold query text, else 0."""

    Options = ExactMatchOptions
    options: ExactMatchOptions
    metric_name = "exact_match"
    default_threshold = 1.0

    def metric(self, prediction: str, reference: str) -> float:
        return exact_match(prediction, reference, ignore_case=self.options.ignore_case,
                           normalize_whitespace=self.options.normalize_whitespace)  # fmt: skip
