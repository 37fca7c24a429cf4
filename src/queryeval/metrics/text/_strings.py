"""Character and token similarities of two strings: Jaro, Jaro-Winkler, Jaccard, exact match.

Jaro and Jaro-Winkler are rapidfuzz's (C++); values equal jellyfish's except for two empty
strings, which rapidfuzz (and queryeval) score 1.0 (identical) where jellyfish says 0.0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from queryeval.metrics._check import check_text_pairs
from queryeval.metrics.text._rouge import rouge_tokens
from queryeval.metrics.text._tokenize_13a import tokenize_13a

JaccardTokens = Literal["whitespace", "rouge", "13a", "chars"]
_TOKENIZERS: dict[str, Callable[[str], Sequence[str]]] = {
    "whitespace": str.split,
    "rouge": rouge_tokens,
    "13a": tokenize_13a,
    "chars": list,
}


def _check_strings(
    predictions: Sequence[Any], references: Sequence[Any], tokens: str | None = None
) -> None:
    """One str reference per str prediction, and Jaccard's `tokens` known (when given)."""
    check_text_pairs(predictions, references)
    if tokens is not None and tokens not in _TOKENIZERS:
        raise ValueError(
            f"unknown Jaccard tokens {tokens!r}; expected one of {sorted(_TOKENIZERS)}"
        )


def _distance() -> Any:
    """rapidfuzz.distance (the `text` extra), imported on first use."""
    try:
        from rapidfuzz import distance
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("Jaro(-Winkler) needs rapidfuzz: pip install 'queryeval[text]'") from exc
    return distance


def jaro(prediction: str, reference: str) -> float:
    """Jaro similarity in [0, 1]: (m/|a| + m/|b| + (m - t)/m) / 3 for m matching characters
    (within half the longer length) and t half-transpositions; two empty strings give 1.

    >>> round(jaro("MARTHA", "MARHTA"), 4)
    0.9444
    """
    _check_strings((prediction,), (reference,))
    return float(_distance().Jaro.similarity(prediction, reference))


def jaro_winkler(prediction: str, reference: str, *, prefix_weight: float = 0.1) -> float:
    """Jaro-Winkler similarity in [0, 1]: J + l * p * (1 - J) for the common prefix length
    l (at most 4) and p = `prefix_weight`, applied when J > 0.7 (Winkler's rule).

    >>> round(jaro_winkler("MARTHA", "MARHTA"), 4)
    0.9611
    """
    _check_strings((prediction,), (reference,))
    similarity = _distance().JaroWinkler.similarity
    return float(similarity(prediction, reference, prefix_weight=prefix_weight))


def jaro_winkler_many(
    predictions: Sequence[str], references: Sequence[str], *, prefix_weight: float = 0.1
) -> list[float]:
    """`jaro_winkler` of each (prediction, reference) pair.

    >>> [round(v, 4) for v in jaro_winkler_many(["MARTHA", "abc"], ["MARHTA", "abc"])]
    [0.9611, 1.0]
    """
    _check_strings(predictions, references)
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

    >>> jaccard("MATCH (n) RETURN n", "MATCH (m) RETURN m")
    0.3333333333333333
    >>> jaccard("MATCH (n) RETURN n", "MATCH (m) RETURN m", tokens="rouge")
    0.5
    """
    _check_strings((prediction,), (reference,), tokens)
    tokenize = _TOKENIZERS[tokens]
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
    """`jaccard` of each (prediction, reference) pair.

    >>> jaccard_many(["a b", "a"], ["a c", "a"])
    [0.3333333333333333, 1.0]
    """
    _check_strings(predictions, references, tokens)
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
    every run of whitespace (and leading/trailing whitespace) as one space.

    >>> exact_match("RETURN  n", "return n"), exact_match(
    ...     "RETURN  n", "return n", ignore_case=True, normalize_whitespace=True)
    (0.0, 1.0)
    """
    _check_strings((prediction,), (reference,))
    if normalize_whitespace:
        prediction, reference = " ".join(prediction.split()), " ".join(reference.split())
    if ignore_case:
        prediction, reference = prediction.casefold(), reference.casefold()
    return 1.0 if prediction == reference else 0.0
