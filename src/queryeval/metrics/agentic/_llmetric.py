"""Output metrics of seed 003 (Pass@1 Output, Jaccard Output) and the LLMetric-Q composite.

Result rows are compared by position (column names are the query's aliases, which need not
match the gold's). Values are made hashable and canonical: lists and tuples alike, mappings
by sorted items, -0.0 as 0.0, ints equal to floats of the same value (Python equality).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

LLMETRIC_Q_WEIGHTS: tuple[float, float, float, float] = (0.3, 0.4, 0.2, 0.1)
_TERMS = ("pass_at_1", "kg_valid", "jaccard_output", "jarou")


def _check_rows(prediction: Any, reference: Any) -> None:
    """A TypeError unless both sides are iterables of rows (not a text or a mapping)."""
    for side, rows in (("prediction", prediction), ("reference", reference)):
        if isinstance(rows, str | bytes | Mapping) or not isinstance(rows, Iterable):
            raise TypeError(f"{side} must be an iterable of rows, not {type(rows).__name__}")


def _check_llmetric_q(weights: tuple[float, ...], terms: tuple[float, ...]) -> None:
    """A ValueError unless there are 4 weights >= 0 summing to 1 and every term is in [0, 1]."""
    w = weights
    if len(w) != 4 or any(x < 0 for x in w) or not math.isclose(sum(w), 1.0, abs_tol=1e-9):
        raise ValueError(f"LLMetric-Q weights must be 4 non-negative numbers summing to 1, got {w}")
    for name, v in zip(_TERMS, terms, strict=True):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"LLMetric-Q term {name} must be in [0, 1], got {v}")


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return ("{}", tuple(sorted((str(k), _canonical(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        return tuple(_canonical(v) for v in value)
    if isinstance(value, set | frozenset):
        return ("set", tuple(sorted((_canonical(v) for v in value), key=repr)))
    if isinstance(value, float):
        if math.isnan(value):
            return ("nan",)  # NaN equals NaN here, as NULL equals NULL
        return 0.0 if value == 0 else value
    return value


def _rows(rows: Iterable[Sequence[Any]]) -> list[tuple[Any, ...]]:
    return [tuple(_canonical(v) for v in row) for row in rows]


def pass_at_1_output(
    prediction: Iterable[Sequence[Any]],
    reference: Iterable[Sequence[Any]],
    *,
    ordered: bool = False,
) -> float:
    """1.0 when the predicted result equals the gold result (same rows with the same
    multiplicities; in the same order when `ordered`), else 0.0.

    >>> pass_at_1_output([(2, "b"), (1, "a")], [(1, "a"), (2.0, "b")])
    1.0
    >>> pass_at_1_output([(2, "b"), (1, "a")], [(1, "a"), (2, "b")], ordered=True)
    0.0
    """
    _check_rows(prediction, reference)
    pred, ref = _rows(prediction), _rows(reference)
    if ordered:
        return 1.0 if pred == ref else 0.0
    return 1.0 if Counter(pred) == Counter(ref) else 0.0


def jaccard_output(
    prediction: Iterable[Sequence[Any]], reference: Iterable[Sequence[Any]]
) -> float:
    """Jaccard similarity of the two results' sets of rows, |P & G| / |P | G|; two empty
    results are identical (1.0).

    >>> jaccard_output([(1,), (2,), (2,)], [(2,), (3,)])
    0.3333333333333333
    """
    _check_rows(prediction, reference)
    pred, ref = set(_rows(prediction)), set(_rows(reference))
    if not pred and not ref:
        return 1.0
    common = len(pred & ref)
    return common / (len(pred) + len(ref) - common)


def jarou(jaro_winkler: float, rouge_l_f1: float) -> float:
    """JaRou = (Jaro-Winkler + ROUGE-L F1) / 2, LLMetric-Q's query-text term.

    >>> jarou(0.9, 0.5)
    0.7
    """
    return (jaro_winkler + rouge_l_f1) / 2


def llmetric_q(
    pass_at_1: bool | float,
    kg_valid: bool | float,
    jaccard_output: float,
    jaro_winkler: float,
    rouge_l_f1: float,
    *,
    weights: Sequence[float] = LLMETRIC_Q_WEIGHTS,
    legacy_jump: bool = False,
) -> float:
    """LLMetric-Q in [0, 1] (kg-axel): w1 Pass@1 + w2 KG Valid + w3 Jaccard Output + w4 JaRou,
    weights 0.3 / 0.4 / 0.2 / 0.1 by default (non-negative, summing to 1).

    Pass@1 is Pass@1 Output (exact result match). The original returns the maximum as soon
    as Pass@1 and KG Valid both hold, whatever the other two terms; `legacy_jump=True`
    reproduces that (off by default: the formula alone).

    >>> round(llmetric_q(False, True, 0.5, 0.9, 0.5), 4)  # 0.4 + 0.2 * 0.5 + 0.1 * 0.7
    0.57
    """
    w = tuple(float(x) for x in weights)
    terms = (float(pass_at_1), float(kg_valid), jaccard_output, jarou(jaro_winkler, rouge_l_f1))
    _check_llmetric_q(w, terms)
    if legacy_jump and terms[0] == 1.0 and terms[1] == 1.0:
        return 1.0
    return sum(wi * ti for wi, ti in zip(w, terms, strict=True))
