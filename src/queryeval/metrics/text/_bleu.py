"""BLEU (Papineni et al., 2002) with sacreBLEU's tokenizers, smoothing and defaults.

``bleu(p, r)`` equals ``sacrebleu.sentence_bleu(p, [r]).score / 100``: the statistics and the
floating-point steps are sacreBLEU's, in its order, so values agree to the last bit (except
that 1.0000000000000004 for identical texts is clipped to 1.0). It is
re-written rather than called because sacreBLEU builds a metric object, a signature and a
Counter of tuples per sentence, which makes 20,000 query pairs take seconds; `bleu_many`
tokenizes and counts whole batches with numpy (see bench/bench_strings.py).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from itertools import chain
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from queryeval.metrics._check import check_same_length, check_texts
from queryeval.metrics.text._ngrams import clipped_matches_ids, encode
from queryeval.metrics.text._tokenize_13a import (
    SEPARATOR,
    batchable,
    tokenize_13a,
    tokenize_13a_flat,
    tokenize_13a_many,
)

SmoothMethod = Literal["exp", "floor", "add-k", "none"]
_SMOOTH_DEFAULTS: dict[str, float | None] = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}
_LOG_ZERO = -9999999999  # sacreBLEU floors log(0) at this value instead of -inf


def _check_bleu(
    predictions: Sequence[Any],
    references: Sequence[Any],
    smooth_method: str,
    max_ngram_order: int,
) -> None:
    """One reference (a str, or a non-empty list of accepted ones) per str prediction, and
    the options known."""
    check_same_length(predictions, references)
    check_texts("predictions", predictions)
    for i, reference in enumerate(references):
        check_texts(f"references[{i}]", [reference] if isinstance(reference, str) else reference)
    if smooth_method not in _SMOOTH_DEFAULTS:
        raise ValueError(
            f"unknown smooth_method {smooth_method!r}; expected one of {list(_SMOOTH_DEFAULTS)}"
        )
    if max_ngram_order < 1:
        raise ValueError(f"max_ngram_order must be at least 1, got {max_ngram_order}")


# --- tokenizers -------------------------------------------------------------------------------


def _tokenize_none(line: str) -> tuple[str, ...]:
    return tuple(line.split())


def _tokenize_char(line: str) -> tuple[str, ...]:
    return tuple(" ".join(line).split())


_OWN_TOKENIZERS: dict[str, Callable[[str], tuple[str, ...]]] = {
    "13a": tokenize_13a,
    "none": _tokenize_none,
    "char": _tokenize_char,
}


@cache
def _tokenizer(name: str) -> Callable[[str], tuple[str, ...]]:
    """Our tokenizer for 13a / none / char; sacreBLEU's own for the others (intl, zh,
    ja-mecab, spm, ...), which then needs the `sacrebleu` package."""
    if name in _OWN_TOKENIZERS:
        return _OWN_TOKENIZERS[name]
    try:
        from sacrebleu.metrics.bleu import _TOKENIZERS, _get_tokenizer
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"BLEU tokenizer {name!r} needs the 'sacrebleu' package (built in: "
            f"{', '.join(sorted(_OWN_TOKENIZERS))})"
        ) from exc
    if name not in _TOKENIZERS:
        raise ValueError(f"unknown BLEU tokenizer {name!r}; expected one of {sorted(_TOKENIZERS)}")
    external = _get_tokenizer(name)()
    return lambda line: tuple(external(line).split())


def _prepare(text: str, lowercase: bool) -> str:
    """sacreBLEU's preprocessing before tokenizing: optional lowercasing, then rstrip."""
    return (text.lower() if lowercase else text).rstrip()


def _tokens(text: str, tokenize: str, lowercase: bool) -> tuple[str, ...]:
    return _tokenizer(tokenize)(_prepare(text, lowercase))


def _tokens_many(texts: Sequence[str], tokenize: str, lowercase: bool) -> list[tuple[str, ...]]:
    """Tokens of each text, each distinct text tokenized once."""
    distinct = list(dict.fromkeys(_prepare(t, lowercase) for t in texts))
    if tokenize == "13a":
        tokenized = tokenize_13a_many(distinct)
    else:
        tokenizer = _tokenizer(tokenize)
        tokenized = [tokenizer(t) for t in distinct]
    lookup = dict(zip(distinct, tokenized, strict=True))
    return [lookup[_prepare(t, lowercase)] for t in texts]


# --- statistics and score -----------------------------------------------------------------------


def _ngram_counts(tokens: tuple[str, ...], max_order: int) -> list[Counter[object]]:
    """Counters of the 1..max_order-grams of `tokens`, one per order."""
    return [
        Counter(zip(*(tokens[i:] for i in range(n)), strict=False)) for n in range(1, max_order + 1)
    ]


@lru_cache(maxsize=2**10)
def _reference_counts(
    refs: tuple[tuple[str, ...], ...], max_order: int
) -> tuple[dict[object, int], ...]:
    """N-gram counts of the references, the maximum over them (cached: references repeat
    across systems and attempts)."""
    merged: list[dict[object, int]] = [dict(c) for c in _ngram_counts(refs[0], max_order)]
    for ref in refs[1:]:
        for have, new in zip(merged, _ngram_counts(ref, max_order), strict=True):
            for gram, count in new.items():
                if count > have.get(gram, 0):
                    have[gram] = count
    return tuple(merged)


def _closest_ref_len(hyp_len: int, ref_lens: Sequence[int]) -> int:
    """The reference length closest to the hypothesis length; the shorter one on ties."""
    return min(ref_lens, key=lambda r: (abs(hyp_len - r), r)) if ref_lens else 0


def _segment_stats(
    hyp: tuple[str, ...], refs: Sequence[tuple[str, ...]], max_order: int
) -> list[int]:
    """[hyp_len, ref_len, correct_1..N, total_1..N] for one segment, as sacreBLEU counts them
    (clipping by the maximum count over the references)."""
    ref_counts = _reference_counts(tuple(refs), max_order)
    correct = []
    for hyp_n, ref_n in zip(_ngram_counts(hyp, max_order), ref_counts, strict=True):
        matched = 0
        get = ref_n.get
        for gram, count in hyp_n.items():
            in_ref = get(gram)
            if in_ref:
                matched += count if count < in_ref else in_ref
        correct.append(matched)
    hyp_len = len(hyp)
    total = [max(hyp_len - n, 0) for n in range(max_order)]
    return [hyp_len, _closest_ref_len(hyp_len, [len(r) for r in refs]), *correct, *total]


def _score(
    stats: Sequence[int],
    max_order: int,
    smooth_method: str,
    smooth_value: float | None,
    effective_order: bool,
) -> float:
    """BLEU in [0, 1] from segment (or summed corpus) statistics, step for step as
    sacreBLEU's BLEU.compute_bleu: BP * exp(mean of log p_n), p_n smoothed, in percent;
    the only difference is the clip at 1."""
    if smooth_value is None:
        smooth_value = _SMOOTH_DEFAULTS[smooth_method]
    sys_len, ref_len = stats[0], stats[1]
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    correct: list[float] = list(stats[2 : 2 + max_order])
    if not any(correct):
        return 0.0
    total: list[float] = list(stats[2 + max_order : 2 + 2 * max_order])
    precisions = [0.0] * max_order
    smooth_mteval = 1.0
    eff_order = max_order
    for n in range(1, max_order + 1):
        if smooth_method == "add-k" and n > 1:
            assert smooth_value is not None
            correct[n - 1] += smooth_value
            total[n - 1] += smooth_value
        if total[n - 1] == 0:
            break
        if effective_order:
            eff_order = n
        if correct[n - 1] == 0:
            if smooth_method == "exp":
                smooth_mteval *= 2
                precisions[n - 1] = 100.0 / (smooth_mteval * total[n - 1])
            elif smooth_method == "floor":
                assert smooth_value is not None
                precisions[n - 1] = 100.0 * smooth_value / total[n - 1]
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    log_sum = sum([math.log(p) if p != 0.0 else _LOG_ZERO for p in precisions[:eff_order]])
    # exp(log(100)) is 100.00000000000004: clip, so that identical texts score exactly 1.
    return min(bp * math.exp(log_sum / eff_order) / 100.0, 1.0)


def _as_refs(reference: str | Sequence[str]) -> list[str]:
    refs = [reference] if isinstance(reference, str) else list(reference)
    if not refs:
        raise ValueError("BLEU needs at least one reference")
    return refs


# --- public API ----------------------------------------------------------------------------------


def bleu(
    prediction: str,
    reference: str | Sequence[str],
    *,
    tokenize: str = "13a",
    smooth_method: SmoothMethod = "exp",
    smooth_value: float | None = None,
    lowercase: bool = False,
    max_ngram_order: int = 4,
    effective_order: bool = True,
) -> float:
    """Sentence BLEU in [0, 1]: BP * exp(sum_n log p_n / N), BP = min(1, exp(1 - r / c)).

    Defaults are ``sacrebleu.sentence_bleu``'s (13a tokens, exp smoothing, effective order).
    `reference` may list several accepted references (counts clipped by their maximum).

    >>> bleu("MATCH (n:Person) RETURN n.name", "MATCH (n:Person) RETURN n.name")
    1.0
    >>> round(bleu("MATCH (n:Person) RETURN n", "MATCH (n:Person) RETURN n.name"), 4)
    0.7788
    """
    _check_bleu((prediction,), (reference,), smooth_method, max_ngram_order)
    refs = [_tokens(r, tokenize, lowercase) for r in _as_refs(reference)]
    stats = _segment_stats(_tokens(prediction, tokenize, lowercase), refs, max_ngram_order)
    return _score(stats, max_ngram_order, smooth_method, smooth_value, effective_order)


def bleu_many(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    *,
    tokenize: str = "13a",
    smooth_method: SmoothMethod = "exp",
    smooth_value: float | None = None,
    lowercase: bool = False,
    max_ngram_order: int = 4,
    effective_order: bool = True,
) -> list[float]:
    """`bleu` of each (prediction, reference) pair, equal to calling it per pair, computed
    for the whole batch at once (tokenizing and n-gram counting vectorised).

    >>> [round(v, 4) for v in bleu_many(["a b c d", "x"], ["a b c d", "y"])]
    [1.0, 0.0]
    """
    _check_bleu(predictions, references, smooth_method, max_ngram_order)
    stats = _batch_stats(predictions, references, tokenize, lowercase, max_ngram_order)
    return [_score(s, max_ngram_order, smooth_method, smooth_value, effective_order) for s in stats]


def corpus_bleu(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    *,
    tokenize: str = "13a",
    smooth_method: SmoothMethod = "exp",
    smooth_value: float | None = None,
    lowercase: bool = False,
    max_ngram_order: int = 4,
    effective_order: bool = False,
) -> float:
    """Corpus BLEU in [0, 1]: n-gram matches and lengths summed over all segments, then BLEU.

    `references[i]` holds the reference(s) of `predictions[i]`; sacreBLEU instead takes
    reference streams, so its ``corpus_bleu(preds, [refs])`` is ``corpus_bleu(preds, refs)``
    here. Defaults are ``sacrebleu.corpus_bleu``'s (no effective order).

    >>> preds, refs = ["the cat sat on the mat", "a dog"], ["the cat sat on a mat", "a dog"]
    >>> round(corpus_bleu(preds, refs), 4)
    0.5584
    """
    _check_bleu(predictions, references, smooth_method, max_ngram_order)
    stats = _batch_stats(predictions, references, tokenize, lowercase, max_ngram_order)
    totals = [sum(column) for column in zip(*stats, strict=True)] if stats else []
    if not totals:
        return 0.0
    return _score(totals, max_ngram_order, smooth_method, smooth_value, effective_order)


def _batch_stats(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    tokenize: str,
    lowercase: bool,
    max_order: int,
) -> list[list[int]]:
    """Segment statistics of every pair; single-reference pairs counted in one numpy batch."""
    ref_lists = [_as_refs(r) for r in references]
    if tokenize == "13a" and all(len(refs) == 1 for refs in ref_lists):
        texts = [_prepare(t, lowercase) for t in [*predictions, *(r[0] for r in ref_lists)]]
        if all(map(batchable, texts)):
            ids, lens, vocab_size = _encode_13a(texts)
            return _stats_from_ids(ids, lens, vocab_size, max_order)
    flat_refs = [r for refs in ref_lists for r in refs]
    tokens = _tokens_many([*predictions, *flat_refs], tokenize, lowercase)
    hyps, ref_tokens = tokens[: len(predictions)], tokens[len(predictions) :]
    grouped: list[list[tuple[str, ...]]] = []
    at = 0
    for texts_of_case in ref_lists:
        grouped.append(ref_tokens[at : at + len(texts_of_case)])
        at += len(texts_of_case)
    single = [i for i, group in enumerate(grouped) if len(group) == 1]
    stats: list[list[int]] = [[] for _ in hyps]
    if single:
        lens = np.fromiter(
            chain((len(hyps[i]) for i in single), (len(grouped[i][0]) for i in single)),
            dtype=np.int64,
            count=2 * len(single),
        )
        flat = list(chain((hyps[i] for i in single), (grouped[i][0] for i in single)))
        ids, _, vocab_size = encode(list(chain.from_iterable(flat)))
        for i, row in zip(single, _stats_from_ids(ids, lens, vocab_size, max_order), strict=True):
            stats[i] = row
    for i, group in enumerate(grouped):
        if len(group) != 1:
            stats[i] = _segment_stats(hyps[i], group, max_order)
    return stats


def _encode_13a(texts: list[str]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]:
    """13a token ids of the texts end to end and their lengths; each distinct text is
    tokenized once."""
    distinct = list(dict.fromkeys(texts))
    ids, lens, vocab_size = encode(tokenize_13a_flat(distinct), SEPARATOR)
    assert lens is not None
    if len(distinct) == len(texts):
        return ids, lens, vocab_size
    where = {t: i for i, t in enumerate(distinct)}
    order = np.fromiter(map(where.__getitem__, texts), dtype=np.int64, count=len(texts))
    starts = np.cumsum(lens) - lens
    out_lens = lens[order]
    offsets = np.arange(int(out_lens.sum()), dtype=np.int64)
    offsets -= np.repeat(np.cumsum(out_lens) - out_lens, out_lens)
    return ids[np.repeat(starts[order], out_lens) + offsets], out_lens, vocab_size


def _stats_from_ids(
    ids: npt.NDArray[np.int64], lens: npt.NDArray[np.int64], vocab_size: int, max_order: int
) -> list[list[int]]:
    """[hyp_len, ref_len, correct_1..N, total_1..N] per pair, from encoded tokens."""
    pairs = len(lens) // 2
    hyp_len, ref_len = lens[:pairs], lens[pairs:]
    total = np.maximum(hyp_len[:, None] - np.arange(max_order, dtype=np.int64), 0)
    correct = clipped_matches_ids(ids, lens, vocab_size, max_order)
    table = np.column_stack([hyp_len, ref_len, correct, total])
    rows: list[list[int]] = table.tolist()
    return rows
