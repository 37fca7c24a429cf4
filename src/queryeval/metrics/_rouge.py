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
from typing import Literal

from rapidfuzz.distance import LCSseq

Measure = Literal["f", "precision", "recall"]
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


def rouge_tokens(text: str) -> list[str]:
    """rouge-score's default tokens: lowercase, runs of [a-z0-9] (no stemming)."""
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
    """ROUGE-L precision, recall and F1 of `prediction` against `reference`."""
    pred, ref = rouge_tokens(prediction), rouge_tokens(reference)
    if not pred or not ref:
        return RougeLScore(0.0, 0.0, 0.0)
    return _score(int(LCSseq.similarity(*_as_ids(pred, ref))), len(pred), len(ref))


def rouge_l(prediction: str, reference: str, *, measure: Measure = "f") -> float:
    """ROUGE-L in [0, 1]: F1 of LCS precision and recall by default (rouge-score's rougeL
    fmeasure); `measure="precision"` or `"recall"` for the others."""
    return rouge_l_score(prediction, reference).get(measure)


def rouge_l_scores(predictions: Sequence[str], references: Sequence[str]) -> list[RougeLScore]:
    """`rouge_l_score` of each pair, tokenizing the whole batch at once."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    texts = [*predictions, *references]
    n = len(predictions)
    if any(_SEP in t for t in texts):
        tokens = [rouge_tokens(t) for t in texts]
        codes = {t: chr(i) for i, t in enumerate(dict.fromkeys(chain.from_iterable(tokens)))}
        if len(codes) >= 0x110000:  # pragma: no cover - more distinct tokens than code points
            return [rouge_l_score(p, r) for p, r in zip(predictions, references, strict=True)]
        coded = ["".join(map(codes.__getitem__, t)) for t in tokens]
    else:
        # One lower(), translate() and split() for the whole batch; the separator survives
        # them as a token of its own, which the coding below turns back into _SEP.
        flat = f" {_SEP} ".join(texts).lower().translate(_KEEP_ALNUM).split()
        # Distinct tokens -> distinct characters (from 1; 0 is _SEP): rapidfuzz then runs its
        # bit-parallel LCS on strings, and compares tokens exactly.
        codes = {t: chr(i) for i, t in enumerate(dict.fromkeys(flat), start=1)}
        if len(codes) >= 0x110000:  # pragma: no cover - more distinct tokens than code points
            return [rouge_l_score(p, r) for p, r in zip(predictions, references, strict=True)]
        codes[_SEP] = _SEP
        coded = "".join(map(codes.__getitem__, flat)).split(_SEP)
    return [
        _score(LCSseq.similarity(coded[i], coded[n + i]), len(coded[i]), len(coded[n + i]))
        for i in range(n)
    ]


def rouge_l_many(
    predictions: Sequence[str], references: Sequence[str], *, measure: Measure = "f"
) -> list[float]:
    """`rouge_l` of each (prediction, reference) pair, computed as a batch."""
    return [s.get(measure) for s in rouge_l_scores(predictions, references)]
