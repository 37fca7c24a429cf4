"""Character and token similarities of two strings: Jaro, Jaro-Winkler, Jaccard, exact match.

Jaro and Jaro-Winkler are rapidfuzz's (C++); values equal jellyfish's except for two empty
strings, which rapidfuzz (and queryeval) score 1.0 (identical) where jellyfish says 0.0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from queryeval.metrics.text._rouge import rouge_tokens
from queryeval.metrics.text._tokenize_13a import tokenize_13a

JaccardTokens = Literal["whitespace", "rouge", "13a", "chars"]
_TOKENIZERS: dict[str, Callable[[str], Sequence[str]]] = {
    "whitespace": str.split,
    "rouge": rouge_tokens,
    "13a": tokenize_13a,
    "chars": list,
}


def _distance() -> Any:
    """rapidfuzz.distance (the `text` extra), imported on first use."""
    try:
        from rapidfuzz import distance
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("Jaro(-Winkler) needs rapidfuzz: pip install 'queryeval[text]'") from exc
    return distance


def jaro(prediction: str, reference: str) -> float:
    """Jaro similarity in [0, 1]: (m/|a| + m/|b| + (m - t)/m) / 3 for m matching characters
    (within half the longer length) and t half-transpositions; two empty strings give 1."""
    return float(_distance().Jaro.similarity(prediction, reference))


def jaro_winkler(prediction: str, reference: str, *, prefix_weight: float = 0.1) -> float:
    """Jaro-Winkler similarity in [0, 1]: J + l * p * (1 - J) for the common prefix length
    l (at most 4) and p = `prefix_weight`, applied when J > 0.7 (Winkler's rule)."""
    similarity = _distance().JaroWinkler.similarity
    return float(similarity(prediction, reference, prefix_weight=prefix_weight))


def jaro_winkler_many(
    predictions: Sequence[str], references: Sequence[str], *, prefix_weight: float = 0.1
) -> list[float]:
    """`jaro_winkler` of each (prediction, reference) pair."""
    _same_length(predictions, references)
    sim = _distance().JaroWinkler.similarity
    return [
        sim(p, r, prefix_weight=prefix_weight) for p, r in zip(predictions, references, strict=True)
    ]


def jaccard(
    prediction: str,
    reference: str,
    *,
    tokens: JaccardTokens = "whitespace",
    lowercase: bool = False,
) -> float:
    """Jaccard similarity of the two token sets, |A & B| / |A | B|, in [0, 1].

    Tokens are whitespace-separated words by default ("rouge", "13a" or "chars" otherwise).
    Two texts without any token are identical, so they score 1.0 (not 0/0).
    """
    tokenize = _tokenizer(tokens)
    if lowercase:
        prediction, reference = prediction.lower(), reference.lower()
    a, b = set(tokenize(prediction)), set(tokenize(reference))
    if not a and not b:
        return 1.0
    common = len(a & b)
    return common / (len(a) + len(b) - common)


def jaccard_many(
    predictions: Sequence[str],
    references: Sequence[str],
    *,
    tokens: JaccardTokens = "whitespace",
    lowercase: bool = False,
) -> list[float]:
    """`jaccard` of each (prediction, reference) pair."""
    _same_length(predictions, references)
    _tokenizer(tokens)
    return [
        jaccard(p, r, tokens=tokens, lowercase=lowercase)
        for p, r in zip(predictions, references, strict=True)
    ]


def exact_match(
    prediction: str,
    reference: str,
    *,
    ignore_case: bool = False,
    normalize_whitespace: bool = False,
) -> float:
    """1.0 when the strings are equal, else 0.0; optionally ignoring case and/or treating
    every run of whitespace (and leading/trailing whitespace) as one space."""
    if normalize_whitespace:
        prediction, reference = " ".join(prediction.split()), " ".join(reference.split())
    if ignore_case:
        prediction, reference = prediction.casefold(), reference.casefold()
    return 1.0 if prediction == reference else 0.0


def _tokenizer(name: str) -> Callable[[str], Sequence[str]]:
    try:
        return _TOKENIZERS[name]
    except KeyError:
        raise ValueError(
            f"unknown Jaccard tokens {name!r}; expected one of {sorted(_TOKENIZERS)}"
        ) from None


def _same_length(predictions: Sequence[str], references: Sequence[str]) -> None:
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
