"""Clipped n-gram match counts for many (hypothesis, reference) token sequences at once.

BLEU needs, per pair and order n, the sum over n-grams g of min(count_hyp(g), count_ref(g)).
A Counter per sentence costs tens of microseconds in CPython; here every n-gram occurrence
becomes one int64 key (n-gram, pair, side), and one sort per order brings equal n-grams of a
pair together, so the counts come out of a few numpy passes. No library offers this
(sacreBLEU and NLTK count per sentence with Counters), hence the hand-written version.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import chain

import numpy as np
import numpy.typing as npt

_KEY_LIMIT = 2**62
IntArray = npt.NDArray[np.int64]


def encode(
    tokens: Sequence[str], separator: str | None = None
) -> tuple[IntArray, IntArray | None, int]:
    """Token ids (in order of first appearance) for a flat token list. With a `separator`,
    its occurrences are dropped and the lengths of the pieces between them returned too."""
    vocab = {t: i for i, t in enumerate(dict.fromkeys(tokens))}
    ids = np.fromiter(map(vocab.__getitem__, tokens), dtype=np.int64, count=len(tokens))
    if separator is None:
        return ids, None, len(vocab)
    sep = vocab.get(separator)
    if sep is None:
        return ids, np.array([len(ids)], dtype=np.int64), len(vocab)
    at = np.flatnonzero(ids == sep)
    lens = np.diff(np.concatenate(([-1], at, [len(ids)]))) - 1
    return ids[ids != sep], lens, len(vocab)


def clipped_matches(
    hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[str]], max_order: int
) -> IntArray:
    """An int64 array (pairs, max_order): column n-1 holds the clipped n-gram matches of
    hyps[i] against refs[i] (sum over n-grams g of min(hyp count, ref count))."""
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
    lens = np.fromiter(chain(map(len, hyps), map(len, refs)), dtype=np.int64, count=2 * len(hyps))
    ids, _, vocab_size = encode(list(chain.from_iterable(chain(hyps, refs))))
    return clipped_matches_ids(ids, lens, vocab_size, max_order)


def clipped_matches_ids(ids: IntArray, lens: IntArray, vocab_size: int, max_order: int) -> IntArray:
    """`clipped_matches` on encoded tokens: `ids` holds the P hypotheses then the P
    references end to end, `lens` (2P) their lengths; ids are below `vocab_size`."""
    pairs = len(lens) // 2
    out = np.zeros((pairs, max_order), dtype=np.int64)
    if pairs == 0 or len(ids) == 0:
        return out
    if pairs * vocab_size**max_order >= _KEY_LIMIT:
        return _split(ids, lens, max_order)
    n_tokens = len(ids)
    base = vocab_size
    pair = np.repeat(np.tile(np.arange(pairs, dtype=np.int64), 2), lens)
    # Low part of every key: the pair, and a last bit 0 for hypothesis, 1 for reference.
    pair_side = pair * 2
    pair_side[int(lens[:pairs].sum()) :] += 1
    ends = np.cumsum(lens)
    key = np.zeros(n_tokens, dtype=np.int64)
    for n in range(1, max_order + 1):
        # key[i] = the n-gram starting at i, as the digits ids[i..i+n-1] in base `base`.
        key[: n_tokens - n + 1] *= base
        key[: n_tokens - n + 1] += ids[n - 1 :]
        tagged = key * (2 * pairs) + pair_side
        # n-grams running past the end of their sentence become -1, sort first, are dropped.
        tail = np.concatenate(
            [np.zeros(0, dtype=np.int64), *((ends - d)[lens >= d] for d in range(1, n))]
        )
        tagged[tail] = -1
        tagged.sort()
        tagged = tagged[len(tail) :]
        if len(tagged) == 0:
            break
        # Equal n-grams of a pair are now adjacent, hypothesis occurrences first.
        group_start = np.concatenate(([0], np.flatnonzero(np.diff(tagged >> 1)) + 1))
        size = np.diff(np.append(group_start, len(tagged)))
        ref_count = np.add.reduceat(tagged & 1, group_start)
        matched = np.minimum(size - ref_count, ref_count)
        group_pair = (tagged[group_start] >> 1) % pairs
        out[:, n - 1] = np.bincount(group_pair, weights=matched, minlength=pairs).astype(np.int64)
    return out


def _split(ids: IntArray, lens: IntArray, max_order: int) -> IntArray:
    """Halve the batch, re-numbering each half's tokens densely (a smaller vocabulary), until
    keys fit in int64; a single pair too large for that (~55,000 distinct tokens at order 4)
    is counted with Counters."""
    pairs = len(lens) // 2
    starts = np.cumsum(lens) - lens
    if pairs == 1:
        hyp = ids[: lens[0]].tolist()
        ref = ids[lens[0] :].tolist()
        return np.array([_clipped_matches_one(hyp, ref, max_order)], dtype=np.int64)
    parts = []
    for lo, hi in ((0, pairs // 2), (pairs // 2, pairs)):
        segments = [*range(lo, hi), *range(pairs + lo, pairs + hi)]
        sub = np.concatenate([ids[starts[s] : starts[s] + lens[s]] for s in segments])
        dense, sub_ids = np.unique(sub, return_inverse=True)
        parts.append(
            clipped_matches_ids(
                sub_ids.reshape(-1).astype(np.int64), lens[segments], len(dense), max_order
            )
        )
    return np.concatenate(parts)


def _clipped_matches_one(hyp: Sequence[object], ref: Sequence[object], max_order: int) -> list[int]:
    out = []
    for n in range(1, max_order + 1):
        h = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
        r = Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
        out.append(sum((h & r).values()))
    return out
