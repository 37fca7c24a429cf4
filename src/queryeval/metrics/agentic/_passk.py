"""pass@k (Chen et al., 2021, HumanEval) and success@k (within k refinement iterations).

The two are different quantities and are named apart on purpose: pass@k estimates, from n
independent samples of which c are correct, the chance that at least one of k samples is;
success@k says whether a self-refining loop was right within its first k iterations
(what the Text2Cypher seed calls "Pass@k").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import overload

import numpy as np
import numpy.typing as npt

_EXACT_MAX_N = 1000  # up to here math.comb on Python ints is cheap and exact


def _check_counts(n: int, c: int, k: int) -> None:
    """A ValueError unless 0 <= c <= n and 1 <= k <= n."""
    if not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n, got n={n}, k={k}")


def _pass_at_k_scalar(n: int, c: int, k: int) -> float:
    _check_counts(n, c, k)
    if n - c < k:
        return 1.0
    if n <= _EXACT_MAX_N:
        total = math.comb(n, k)
        return float(Fraction(total - math.comb(n - c, k), total))  # correctly rounded
    # Product form: C(n-c, k) / C(n, k) = prod_{j=n-c+1}^{n} (1 - k / j), every factor in (0, 1).
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1, dtype=np.float64)))


@overload
def pass_at_k(n: int, c: int, k: int) -> float: ...
@overload
def pass_at_k(
    n: npt.ArrayLike, c: npt.ArrayLike, k: npt.ArrayLike
) -> float | npt.NDArray[np.float64]: ...
def pass_at_k(
    n: npt.ArrayLike, c: npt.ArrayLike, k: npt.ArrayLike
) -> float | npt.NDArray[np.float64]:
    """Unbiased pass@k estimate 1 - C(n-c, k) / C(n, k) for n samples with c correct.

    Scalars give a float (exact rational arithmetic up to n = 1000, correctly rounded);
    arrays (broadcast together) give an array, computed for all problems at once with the
    numerically stable product 1 - prod_{j=n-c+1}^{n} (1 - k/j). Requires 0 <= c <= n and
    1 <= k <= n.

    >>> pass_at_k(20, 3, 5)
    0.6008771929824561
    >>> pass_at_k([10, 10], [0, 10], 1)
    array([0., 1.])
    """
    scalar = int | np.integer
    if isinstance(n, scalar) and isinstance(c, scalar) and isinstance(k, scalar):
        return _pass_at_k_scalar(int(n), int(c), int(k))
    nn, cc, kk = np.broadcast_arrays(
        np.asarray(n, dtype=np.int64), np.asarray(c, dtype=np.int64), np.asarray(k, dtype=np.int64)
    )
    if np.any((cc < 0) | (cc > nn)):
        raise ValueError("pass@k needs 0 <= c <= n for every problem")
    if np.any((kk < 1) | (kk > nn)):
        raise ValueError("pass@k needs 1 <= k <= n for every problem")
    flat_n, flat_c, flat_k = nn.ravel(), cc.ravel(), kk.ravel()
    out = np.ones(flat_n.shape, dtype=np.float64)
    rows = np.flatnonzero(flat_n - flat_c >= flat_k)  # others: every k-subset holds a pass
    terms = flat_c[rows]
    nonzero = rows[terms > 0]
    out[rows[terms == 0]] = 0.0
    if len(nonzero):
        counts = flat_c[nonzero]
        # j runs over n-c+1 .. n for each problem, all problems laid end to end.
        starts = np.cumsum(counts) - counts
        offset = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts)
        j = np.repeat(flat_n[nonzero] - counts + 1, counts) + offset
        factors = 1.0 - np.repeat(flat_k[nonzero], counts) / j
        out[nonzero] = 1.0 - np.multiply.reduceat(factors, starts)
    return out.reshape(nn.shape)


def mean_pass_at_k(samples: Iterable[Sequence[bool]], k: int) -> float | None:
    """pass@k of a dataset: the mean over problems of `pass_at_k(n, c, k)`, where each
    problem lists its n samples' correctness. Problems with fewer than k samples are an
    error; no problems give None.

    >>> mean_pass_at_k([[True, False], [False, False]], 1)
    0.25
    """
    ns, cs = [], []
    for i, results in enumerate(samples):
        if len(results) < k:
            raise ValueError(f"problem {i} has {len(results)} samples, fewer than k={k}")
        ns.append(len(results))
        cs.append(sum(bool(r) for r in results))
    if not ns:
        return None
    return float(np.mean(pass_at_k(np.array(ns), np.array(cs), k)))


def success_at_k(correct: Sequence[bool | None], k: int | None = None) -> bool | None:
    """Whether one of the first k attempts of a refinement loop is correct (all attempts
    when k is None). None when none of them is known correct and some are unknown.

    >>> success_at_k([False, False, True], 2), success_at_k([False, False, True])
    (False, True)
    """
    if k is not None and k < 1:
        raise ValueError(f"success@k needs k >= 1, got {k}")
    window = correct if k is None else correct[:k]
    if any(c is True for c in window):
        return True
    if any(c is None for c in window):
        return None
    return False


def first_success(correct: Sequence[bool | None]) -> int | None:
    """The 1-based iteration of the first correct attempt, or None when none is correct.

    >>> first_success([False, None, True, True])
    3
    """
    for i, c in enumerate(correct, start=1):
        if c is True:
            return i
    return None
