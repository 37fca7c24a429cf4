"""ROUGE-L (Lin, 2004) as Google's `rouge-score` computes it, with its default tokenizer.

Tokens: the text lowercased, every run of characters other than [a-z0-9] turned into a
space, split (no stemming). LCS = longest common subsequence of the token lists, computed
by rapidfuzz's LCSseq in C; P = LCS / |prediction|, R = LCS / |reference|,
F = 2PR / (P + R). Either side without tokens scores 0, as in rouge-score.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from queryeval.metrics._check import check_text_pairs

Measure = Literal["f", "precision", "recall"]
_MEASURES = {"precision": 0, "recall": 1, "f": 2}


def _check_rouge(
    predictions: Sequence[Any], references: Sequence[Any], measure: str | None = None
) -> None:
    """One str reference per str prediction, and `measure` known (when given)."""
    check_text_pairs(predictions, references)
    if measure is not None and measure not in _MEASURES:
        raise ValueError(f"unknown ROUGE-L measure {measure!r}; expected f, precision or recall")


_TOKEN = re.compile(r"[a-z0-9]+")
_SEP = "\x00"


class _NonAlnumToSpace(dict[int, str]):
    """str.translate table: [a-z0-9] kept, every other code point becomes a space."""

    def __missing__(self, key: int) -> str:
        return " "


_KEEP_ALNUM = _NonAlnumToSpace({c: chr(c) for c in b"abcdefghijklmnopqrstuvwxyz0123456789"})
_KEEP_ALNUM[ord(_SEP)] = _SEP


@dataclass(frozen=True)
class RougeLScore:
    """ROUGE-L precision, recall and F1 (the harmonic mean of the two)."""

    precision: float
    recall: float
    fmeasure: float

    def get(self, measure: Measure) -> float:
        """The value named by `measure` ("f", "precision" or "recall")."""
        if measure == "f":
            return self.fmeasure
        if measure == "precision":
            return self.precision
        if measure == "recall":
            return self.recall
        raise ValueError(f"unknown ROUGE-L measure {measure!r}; expected f, precision or recall")


def _rapidfuzz() -> tuple[Any, Any]:
    """rapidfuzz's `process` and `LCSseq` (the `text` extra), imported on first use."""
    try:
        from rapidfuzz import process
        from rapidfuzz.distance import LCSseq
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("ROUGE-L needs rapidfuzz: pip install 'queryeval[text]'") from exc
    return process, LCSseq


def rouge_tokens(text: str) -> list[str]:
    """rouge-score's default tokens: lowercase, runs of [a-z0-9] (no stemming).

    >>> rouge_tokens("MATCH (n:Person) RETURN n.name")
    ['match', 'n', 'person', 'return', 'n', 'name']
    """
    return _TOKEN.findall(text.lower())


def _score(lcs: int, n_pred: int, n_ref: int) -> RougeLScore:
    if n_pred == 0 or n_ref == 0:
        return RougeLScore(0.0, 0.0, 0.0)
    precision = lcs / n_pred
    recall = lcs / n_ref
    f = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return RougeLScore(precision, recall, f)


def _as_ids(a: list[str], b: list[str]) -> tuple[list[int], list[int]]:
    """Tokens as small ints, so that rapidfuzz compares them exactly (it compares other
    hashable elements by their hash)."""
    ids: dict[str, int] = {}
    return [ids.setdefault(t, len(ids)) for t in a], [ids.setdefault(t, len(ids)) for t in b]


def rouge_l_score(prediction: str, reference: str) -> RougeLScore:
    """ROUGE-L precision, recall and F1 of `prediction` against `reference`.

    >>> rouge_l_score("a b c d", "a c e")
    RougeLScore(precision=0.5, recall=0.6666666666666666, fmeasure=0.5714285714285715)
    """
    _check_rouge((prediction,), (reference,))
    pred, ref = rouge_tokens(prediction), rouge_tokens(reference)
    if not pred or not ref:
        return RougeLScore(0.0, 0.0, 0.0)
    lcs_similarity = _rapidfuzz()[1].similarity
    return _score(int(lcs_similarity(*_as_ids(pred, ref))), len(pred), len(ref))


def rouge_l(prediction: str, reference: str, *, measure: Measure = "f") -> float:
    """ROUGE-L in [0, 1]: F1 of LCS precision and recall by default (rouge-score's rougeL
    fmeasure); `measure="precision"` or `"recall"` for the others.

    >>> round(rouge_l("MATCH (n:Person) RETURN n.name", "MATCH (p:Person) RETURN p.name"), 4)
    0.6667
    >>> rouge_l("a b c d", "a c e", measure="recall")
    0.6666666666666666
    """
    _check_rouge((prediction,), (reference,), measure)
    return rouge_l_score(prediction, reference).get(measure)


def _coded_batch(predictions: Sequence[str], references: Sequence[str]) -> list[str] | None:
    """Every text's tokens as a string with one character per distinct token (predictions,
    then references), so that rapidfuzz runs its bit-parallel LCS on strings and compares
    tokens exactly; None when there are more distinct tokens than code points."""
    texts = [*predictions, *references]
    if any(_SEP in t for t in texts):
        tokens = [rouge_tokens(t) for t in texts]
        codes = {t: chr(i) for i, t in enumerate(dict.fromkeys(chain.from_iterable(tokens)))}
        if len(codes) >= 0x110000:  # pragma: no cover - more distinct tokens than code points
            return None
        return ["".join(map(codes.__getitem__, t)) for t in tokens]
    # One lower(), translate() and split() for the whole batch; the separator survives them
    # as a token of its own, coded back to _SEP (the other tokens get characters from 1).
    flat = f" {_SEP} ".join(texts).lower().translate(_KEEP_ALNUM).split()
    codes = {t: chr(i) for i, t in enumerate(dict.fromkeys(flat), start=1)}
    if len(codes) >= 0x110000:  # pragma: no cover - more distinct tokens than code points
        return None
    codes[_SEP] = _SEP
    return "".join(map(codes.__getitem__, flat)).split(_SEP)


def _batch_table(
    predictions: Sequence[str], references: Sequence[str]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]] | None:
    """Per pair: precision, recall, F1 (numpy, the same IEEE operations as rouge-score's)."""
    coded = _coded_batch(predictions, references)
    if coded is None:  # pragma: no cover - more distinct tokens than code points
        return None
    n = len(predictions)
    process, lcs_seq = _rapidfuzz()
    lcs = process.cpdist(coded[:n], coded[n:], scorer=lcs_seq.similarity).astype(np.float64)
    n_pred = np.fromiter(map(len, coded[:n]), dtype=np.float64, count=n)
    n_ref = np.fromiter(map(len, coded[n:]), dtype=np.float64, count=n)
    empty = (n_pred == 0) | (n_ref == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(empty, 0.0, lcs / n_pred)
        recall = np.where(empty, 0.0, lcs / n_ref)
        total = precision + recall
        f = np.where(total > 0, 2 * precision * recall / total, 0.0)
    return precision, recall, f


def rouge_l_scores(predictions: Sequence[str], references: Sequence[str]) -> list[RougeLScore]:
    """`rouge_l_score` of each pair, the whole batch tokenized and matched at once.

    >>> [s.fmeasure for s in rouge_l_scores(["a b", "x"], ["a b", "y"])]
    [1.0, 0.0]
    """
    _check_rouge(predictions, references)
    table = _batch_table(predictions, references)
    if table is None:  # pragma: no cover - more distinct tokens than code points
        return [rouge_l_score(p, r) for p, r in zip(predictions, references, strict=True)]
    return [RougeLScore(*row) for row in zip(*(t.tolist() for t in table), strict=True)]


def rouge_l_many(
    predictions: Sequence[str], references: Sequence[str], *, measure: Measure = "f"
) -> list[float]:
    """`rouge_l` of each (prediction, reference) pair, computed as a batch.

    >>> rouge_l_many(["a b", "x"], ["a b", "y"])
    [1.0, 0.0]
    """
    _check_rouge(predictions, references, measure)
    table = _batch_table(predictions, references)
    if table is None:  # pragma: no cover - more distinct tokens than code points
        return [
            rouge_l(p, r, measure=measure) for p, r in zip(predictions, references, strict=True)
        ]
    values: list[float] = table[_MEASURES[measure]].tolist()
    return values
