"""Retrieval metrics of a RAG system's ranked passage ids against a case's relevant ids:
recall@k, precision@k, hit rate@k, reciprocal rank (MRR over cases) and nDCG@k.

Each equals trec_eval's measure (`recall_k`, `P_k`, `success_k`, `recip_rank`,
`ndcg_cut_k`), which tests/test_rag_retrieval.py checks with pytrec_eval on random
rankings. Conventions, as trec_eval's:

- `prediction` is the ranking, best first; an id retrieved again later (two chunks of one
  passage) counts once, at its first rank, and the repeat takes no rank.
- `reference` is the relevant ids (grade 1 each) or a mapping id -> grade; a grade <= 0
  is not relevant. nDCG's gain is the grade, its discount log2(rank + 1); the ideal ranking
  is every judged id by grade.
- precision@k divides by k even when fewer than k ids were retrieved.
- A case without any relevant id cannot be judged: ValueError.

Hand-written: a dozen lines of arithmetic, where pytrec_eval (C, trec_eval's files) and
ranx (numba) are heavy for the core install; they serve as the reference in the tests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

Relevance = Mapping[str, float] | Sequence[str] | set[str] | frozenset[str]


def _check_retrieval(prediction: Any, reference: Any, k: int | None) -> dict[str, float]:
    """The grades of the relevant ids; TypeError / ValueError on a bad ranking, relevance or
    k, or when nothing is relevant."""
    if isinstance(prediction, str) or not isinstance(prediction, Sequence):
        raise TypeError(f"prediction must be a list of ids, not {type(prediction).__name__}")
    for i, item in enumerate(prediction):
        if not isinstance(item, str):
            raise TypeError(f"prediction[{i}] must be a str id, not {type(item).__name__}")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    if isinstance(reference, Mapping):
        grades: dict[str, float] = {}
        for key, grade in reference.items():
            if not isinstance(key, str):
                raise TypeError(f"reference keys must be str ids, not {type(key).__name__}")
            if isinstance(grade, bool) or not isinstance(grade, int | float):
                raise TypeError(f"reference[{key!r}] must be a number, not {grade!r}")
            if not math.isfinite(grade):
                raise ValueError(f"reference[{key!r}] must be finite, got {grade!r}")
            grades[key] = float(grade)
    elif isinstance(reference, str) or not isinstance(reference, Sequence | set | frozenset):
        raise TypeError(
            f"reference must be a list of ids or a mapping id -> grade, "
            f"not {type(reference).__name__}"
        )
    else:
        for item in reference:
            if not isinstance(item, str):
                raise TypeError(f"reference ids must be str, not {type(item).__name__}")
        grades = dict.fromkeys(reference, 1.0)
    if not any(g > 0 for g in grades.values()):
        raise ValueError("reference has no relevant id (a grade > 0): the case cannot be judged")
    return grades


def _ranking(prediction: Sequence[str], k: int | None) -> list[str]:
    """The distinct ids in rank order, cut at k."""
    seen = list(dict.fromkeys(prediction))
    return seen if k is None else seen[:k]


def recall_at_k(prediction: Sequence[str], reference: Relevance, *, k: int) -> float:
    """The share of the relevant ids found in the top `k`.

    >>> recall_at_k(["p1", "p7", "p2"], ["p2", "p3"], k=3)
    0.5
    """
    grades = _check_retrieval(prediction, reference, k)
    relevant = {i for i, g in grades.items() if g > 0}
    return sum(1 for i in _ranking(prediction, k) if i in relevant) / len(relevant)


def precision_at_k(prediction: Sequence[str], reference: Relevance, *, k: int) -> float:
    """The share of the top `k` ranks holding a relevant id (divided by k, always).

    >>> precision_at_k(["p1", "p2"], ["p2", "p3"], k=4)
    0.25
    """
    grades = _check_retrieval(prediction, reference, k)
    return sum(1 for i in _ranking(prediction, k) if grades.get(i, 0) > 0) / k


def hit_rate_at_k(prediction: Sequence[str], reference: Relevance, *, k: int) -> float:
    """1.0 when a relevant id is in the top `k`, else 0.0 (averaged over cases: hit rate).

    >>> hit_rate_at_k(["p1", "p2"], {"p2": 1}, k=1), hit_rate_at_k(["p1", "p2"], {"p2": 1}, k=2)
    (0.0, 1.0)
    """
    grades = _check_retrieval(prediction, reference, k)
    return 1.0 if any(grades.get(i, 0) > 0 for i in _ranking(prediction, k)) else 0.0


def reciprocal_rank(
    prediction: Sequence[str], reference: Relevance, *, k: int | None = None
) -> float:
    """1 / the rank of the first relevant id (0.0 if none, or none in the top `k`);
    its mean over cases is MRR.

    >>> reciprocal_rank(["p1", "p1", "p4", "p2"], ["p2", "p4"])
    0.5
    """
    grades = _check_retrieval(prediction, reference, k)
    for rank, i in enumerate(_ranking(prediction, k), start=1):
        if grades.get(i, 0) > 0:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(prediction: Sequence[str], reference: Relevance, *, k: int) -> float:
    """Normalised discounted cumulative gain of the top `k` (gain: the grade, discount:
    log2(rank + 1)), in [0, 1].

    >>> ndcg_at_k(["p1", "p2"], {"p1": 2, "p2": 1}, k=2)
    1.0
    >>> round(ndcg_at_k(["p2", "p1"], {"p1": 2, "p2": 1}, k=2), 4)
    0.8597
    """
    grades = _check_retrieval(prediction, reference, k)
    dcg = sum(
        grades[i] / math.log2(rank + 1)
        for rank, i in enumerate(_ranking(prediction, k), start=1)
        if grades.get(i, 0) > 0
    )
    ideal_grades = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    ideal = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal_grades, start=1))
    return dcg / ideal
