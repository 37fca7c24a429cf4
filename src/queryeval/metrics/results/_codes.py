"""Code columns, written out or not, and folding them into row keys block by block.

A column's codes are either an integer array (0 = NULL) or a :class:`LazyCodes`: the
values a code is computed from (often Arrow's own buffer, read in place), a shift, and the
validity. A large comparison folds lazy codes into its row keys one cache-sized block at a
time, so no full-length code array is ever allocated: each would take fresh pages, and on
virtual machines a fresh page costs a hypervisor fault (see `bench/README.md`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

BLOCK = 1 << 16
"""Rows per block of a fold or a scan: temporaries of at most 512 KiB, which stay in the
caches (5M-row ones would take fresh pages)."""


def code_dtype(cardinality: int) -> type[np.signedinteger[Any]]:
    """int32 codes while ``cardinality`` fits (half the memory of int64), else int64.

    >>> code_dtype(2**31 - 1), code_dtype(2**31)
    (<class 'numpy.int32'>, <class 'numpy.int64'>)
    """
    return np.int32 if cardinality < 2**31 else np.int64


@dataclass(frozen=True, slots=True)
class LazyCodes:
    """Codes ``values - base`` where ``valid`` (everywhere when None) and 0 elsewhere.

    ``values`` (an integer array, possibly read-only) may hold anything where not valid.

    >>> codes = LazyCodes(np.array([7, 9, 7]), 6, np.array([True, False, True]))
    >>> materialize(codes, np.int32).tolist()
    [1, 0, 1]
    """

    values: np.ndarray
    base: int
    valid: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.values)

    def block(self, start: int, stop: int) -> np.ndarray:
        """The int64 codes of rows ``[start, stop)``."""
        codes = np.subtract(self.values[start:stop], self.base, dtype=np.int64)
        if self.valid is not None:
            codes[~self.valid[start:stop]] = 0
        return codes


Codes: TypeAlias = "np.ndarray | LazyCodes"


def materialize(codes: Codes, dtype: Any = np.int64) -> np.ndarray:
    """The codes as an array of ``dtype`` (which must hold them)."""
    if isinstance(codes, np.ndarray):
        return codes.astype(dtype, copy=False)
    out = np.empty(len(codes), dtype=dtype)
    np.subtract(codes.values, codes.base, out=out, casting="unsafe")  # exact: the codes fit
    if codes.valid is not None:
        np.putmask(out, ~codes.valid, 0)
    return out


def nonzero(codes: Codes) -> np.ndarray:
    """Where a code is not 0 (the value is not NULL); possibly the codes' own validity
    array, so read it, do not write to it."""
    if isinstance(codes, np.ndarray):
        return codes != 0
    if codes.valid is None:
        return np.ones(len(codes), dtype=bool)
    return codes.valid


def fold(key: np.ndarray, codes: Codes, cardinality: int, first: bool) -> None:
    """``key = key * cardinality + codes`` in place (``key = codes`` when ``first``), one
    block at a time: the key block stays in the caches between the multiply and the add.

    >>> key = np.array([1, 2])
    >>> fold(key, np.array([3, 0]), 5, first=False)
    >>> key.tolist()
    [8, 10]
    """
    for start in range(0, len(key), BLOCK):
        stop = min(start + BLOCK, len(key))
        part = codes[start:stop] if isinstance(codes, np.ndarray) else codes.block(start, stop)
        target = key[start:stop]
        if first:
            target[...] = part
        else:
            target *= cardinality
            target += part
