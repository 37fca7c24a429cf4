"""Keyword scoring of answers (seed 004): binary 'all expected keywords present' after
normalisation, and the seed's original 0.5-floor score as a legacy option."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from queryeval.metrics._check import check_texts


def _check_keywords(prediction: Any, reference: Any) -> None:
    """A TypeError unless the answer is a str and the keywords a list of str (one str would
    be read as a list of its characters)."""
    check_texts("prediction", (prediction,))
    if isinstance(reference, str) or not isinstance(reference, Sequence):
        raise TypeError(f"reference must be a list of keywords, not {type(reference).__name__}")
    check_texts("reference", reference)


def normalize_text(text: str) -> str:
    """Casefold, strip accents, turn punctuation/symbols into spaces, collapse whitespace.

    Hand-written with `unicodedata` because no small library does exactly this: rapidfuzz's
    `default_process` keeps accents, and "Bogotá" must match "bogota".

    >>> normalize_text("  Bogotá, D.C.!  ")
    'bogota d c'
    """
    # Unicode's compatibility caseless form: NFKD(casefold(NFKD(casefold(NFD(text))))).
    decomposed = unicodedata.normalize("NFD", text).casefold()
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", decomposed).casefold())
    kept = (
        " " if unicodedata.category(c)[0] in "PSZC" else c
        for c in decomposed
        if not unicodedata.combining(c)
    )
    return " ".join("".join(kept).split())


@dataclass(frozen=True)
class KeywordMatch:
    """Which keywords an answer contains (as whole words, after normalisation)."""

    found: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def all_found(self) -> bool:
        """True when no keyword is missing (and there was at least one)."""
        return bool(self.found) and not self.missing

    @property
    def fraction(self) -> float | None:
        """found / (found + missing); None without keywords."""
        total = len(self.found) + len(self.missing)
        return len(self.found) / total if total else None


def keyword_match(prediction: str, reference: Sequence[str]) -> KeywordMatch:
    """Which of the keywords (`reference`) the answer (`prediction`) contains: a keyword is
    found when its normalised words occur contiguously, on word boundaries, in the
    normalised answer ("paris" is in "Paris." but not in "Parisian"). Keywords that
    normalise to nothing (e.g. "!!") are ignored.

    >>> keyword_match("The capital is Paris.", ["paris", "france"])
    KeywordMatch(found=('paris',), missing=('france',))
    """
    _check_keywords(prediction, reference)
    padded = f" {normalize_text(prediction)} "
    found: list[str] = []
    missing: list[str] = []
    for keyword in reference:
        norm = normalize_text(keyword)
        if not norm:
            continue
        (found if f" {norm} " in padded else missing).append(keyword)
    return KeywordMatch(tuple(found), tuple(missing))


def keyword_score(prediction: str, reference: Sequence[str]) -> float | None:
    """1.0 when the answer (`prediction`) holds every keyword (`reference`), else 0.0
    (binary; a wrong answer earns nothing). None when there is no usable keyword.

    >>> keyword_score("Paris.", ["paris"]), keyword_score("Parisian cafés", ["paris"])
    (1.0, 0.0)
    """
    match = keyword_match(prediction, reference)
    if not match.found and not match.missing:
        return None
    return 1.0 if match.all_found else 0.0


def keyword_score_legacy(prediction: str, reference: Sequence[str]) -> float:
    """The seed's original score: 1.0 if every keyword is a lower-cased substring of the
    answer, else 0.5 (`1.0 if expected.lower() in answer.lower() else 0.5`). Kept only to
    reproduce old numbers: a wrong answer, or "I don't know", scores 0.5.

    >>> keyword_score_legacy("I don't know", ["paris"])
    0.5
    """
    _check_keywords(prediction, reference)
    low = prediction.lower()
    return 1.0 if all(k.lower() in low for k in reference) else 0.5
