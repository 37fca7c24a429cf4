"""Keyword scoring of answers (seed 004): binary 'all expected keywords present' after
normalisation, and the seed's original 0.5-floor score as a legacy option."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass


def normalize_text(text: str) -> str:
    """Casefold, strip accents, turn punctuation/symbols into spaces, collapse whitespace.

    Hand-written with `unicodedata` because no small library does exactly this: rapidfuzz's
    `default_process` keeps accents, and "Bogotá" must match "bogota".
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


def keyword_match(answer: str, keywords: Sequence[str]) -> KeywordMatch:
    """Each keyword counts as found when its normalised words occur contiguously, on word
    boundaries, in the normalised answer ("paris" is in "Paris." but not in "Parisian").
    Keywords that normalise to nothing (e.g. "!!") are ignored."""
    padded = f" {normalize_text(answer)} "
    found: list[str] = []
    missing: list[str] = []
    for keyword in keywords:
        norm = normalize_text(keyword)
        if not norm:
            continue
        (found if f" {norm} " in padded else missing).append(keyword)
    return KeywordMatch(tuple(found), tuple(missing))


def keyword_score(answer: str, keywords: Sequence[str]) -> float | None:
    """1.0 when every keyword is present, else 0.0 (binary; a wrong answer earns nothing).
    None when there is no usable keyword."""
    match = keyword_match(answer, keywords)
    if not match.found and not match.missing:
        return None
    return 1.0 if match.all_found else 0.0


def keyword_score_legacy(answer: str, keywords: Sequence[str]) -> float:
    """The seed's original score: 1.0 if every keyword is a lower-cased substring of the
    answer, else 0.5 (`1.0 if expected.lower() in answer.lower() else 0.5`). Kept only to
    reproduce old numbers: a wrong answer, or "I don't know", scores 0.5."""
    low = answer.lower()
    return 1.0 if all(k.lower() in low for k in keywords) else 0.5
