"""Clipped n-gram match counts for many (hypothesis, reference) token sequences at once.

BLEU needs, per pair and order n, sum over n-grams g of min(count_hyp(g), count_ref(g)).
Counting with a Counter per sentence costs ~20 us a sentence in CPython; here every n-gram
of every pair becomes one int64 key (pair, n-gram) and a single sort per order groups equal
keys, so the counts come out of a few numpy passes. No library offers this (sacreBLEU and
NLTK count per sentence with Counters), hence the hand-written vectorised version.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np

_KEY_LIMIT = 2**62


def clipped_matches(
    hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[str]], max_order: int
) -> np.ndarray:
    """An int64 array (pairs, max_order): column n-1 holds the clipped n-gram matches of
    hyps[i] against refs[i] (sum over n-grams g of min(hyp count, ref count))."""
    pairs = len(hyps)
    out = np.zeros((pairs, max_order), dtype=np.int64)
    if pairs == 0:
        return out
    lens = np.fromiter(chain(map(len, hyps), map(len, refs)), dtype=np.int64, count=2 * pairs)
    n_tokens = int(lens.sum())
    if n_tokens == 0:
        return out
    tokens = list(chain.from_iterable(chain(hyps, refs)))
    vocab = {t: i for i, t in enumerate(dict.fromkeys(tokens))}
    base = len(vocab)
    if pairs * base**max_order >= _KEY_LIMIT:
        return _clipped_matches_split(hyps, refs, max_order)
    gid = np.fromiter(map(vocab.__getitem__, tokens), dtype=np.int64, count=n_tokens)
    pair = np.repeat(np.tile(np.arange(pairs, dtype=np.int64), 2), lens)
    is_ref = np.zeros(n_tokens, dtype=np.int64)
    is_ref[int(lens[:pairs].sum()) :] = 1
    # Tokens from each position to the end of its sentence.
    room = np.repeat(np.cumsum(lens), lens) - np.arange(n_tokens, dtype=np.int64)

    key = np.zeros(n_tokens, dtype=np.int64)
    for n in range(1, max_order + 1):
        # key[i] = the n-gram starting at i, as the digits gid[i..i+n-1] in base `base`.
        key[: n_tokens - n + 1] = key[: n_tokens - n + 1] * base + gid[n - 1 :]
        valid = room >= n
        if not valid.any():
            break
        # Low bit: 0 for hypothesis, 1 for reference; sorting groups equal n-grams of a pair
        # with hypothesis occurrences first.
        tagged = ((pair * base**n + key) * 2 + is_ref)[valid]
        tagged.sort()
        grams = tagged >> 1
        bounds = np.flatnonzero(np.diff(grams)) + 1
        group_start = np.concatenate(([0], bounds))
        group_end = np.concatenate((bounds, [len(grams)]))
        hyp_before = np.concatenate(([0], np.cumsum(1 - (tagged & 1))))
        hyp_count = hyp_before[group_end] - hyp_before[group_start]
        ref_count = (group_end - group_start) - hyp_count
        matched = np.minimum(hyp_count, ref_count)
        hit = matched > 0
        out[:, n - 1] = np.bincount(
            grams[group_start[hit]] // base**n, weights=matched[hit], minlength=pairs
        ).astype(np.int64)
    return out


def _clipped_matches_split(
    hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[str]], max_order: int
) -> np.ndarray:
    """Halve the batch (each half has a smaller vocabulary) until keys fit in int64; a single
    pair too large for that (~55,000 distinct tokens at order 4) is counted with Counters."""
    if len(hyps) == 1:
        return np.array([_clipped_matches_one(hyps[0], refs[0], max_order)], dtype=np.int64)
    half = len(hyps) // 2
    return np.concatenate(
        [
            clipped_matches(hyps[:half], refs[:half], max_order),
            clipped_matches(hyps[half:], refs[half:], max_order),
        ]
    )


def _clipped_matches_one(hyp: Sequence[str], ref: Sequence[str], max_order: int) -> list[int]:
    from collections import Counter

    out = []
    for n in range(1, max_order + 1):
        h = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
        r = Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
        out.append(sum((h & r).values()))
    return out
