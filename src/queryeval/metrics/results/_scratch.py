"""Where a large comparison's working memory comes from: the system allocator.

A comparison of millions of rows allocates a few arrays of tens of MiB (row keys, their
sorted copies, the sort order) and Arrow temporaries (casts, dictionaries). What they cost
is mostly their first touch: on a virtual machine that hands freed memory back to the
hypervisor (free page reporting, which works in 2 MiB blocks), a page the process has not
used lately costs a hypervisor fault. NumPy asks for transparent huge pages on every array
over 4 MiB, and a free 2 MiB block is the kind the hypervisor has most likely taken back;
Arrow's default pool (mimalloc or jemalloc) keeps its freed memory to itself. Both
therefore took fresh pages at every step. The system allocator with ordinary pages reuses
the memory the process freed a moment ago: 5M rows x 5 compare in 1.06 s (1.04-1.08) where
they took 1.22 s (1.17-1.33), and the same when run again (`bench/README.md`).

Only the comparator's large arrays come from here; it changes nothing process-wide.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from queryeval.metrics.results._codes import BLOCK


def scratch_pool(pa: Any) -> Any:
    """The Arrow memory pool for a comparison's temporaries: the system allocator."""
    return pa.system_memory_pool()


NUMPY_HUGE_PAGE_BYTES = 4 << 20
"""NumPy asks for huge pages from this size on; smaller arrays come from `np.empty`."""


def scratch_array(n: int, dtype: Any) -> np.ndarray:
    """A writable, uninitialised array of `n` items, as `np.empty` gives; from 4 MiB on
    from the system allocator (ordinary pages, no huge-page request).

    >>> a = scratch_array(3, np.int32)
    >>> a[:] = 7
    >>> a.tolist(), a.dtype.name
    ([7, 7, 7], 'int32')
    """
    dtype = np.dtype(dtype)
    if n * dtype.itemsize < NUMPY_HUGE_PAGE_BYTES:
        return np.empty(n, dtype=dtype)
    import pyarrow as pa

    buffer = pa.allocate_buffer(n * dtype.itemsize, memory_pool=scratch_pool(pa))
    return np.frombuffer(buffer, dtype=dtype, count=n)


def scratch_zeros(n: int, dtype: Any) -> np.ndarray:
    """`scratch_array` filled with zeros."""
    array = scratch_array(n, dtype)
    array.fill(0)
    return array


def scratch_rows(n: int) -> np.ndarray:
    """Row numbers ``0..n-1`` as int32 (n < 2**31), written a block at a time.

    >>> scratch_rows(4).tolist()
    [0, 1, 2, 3]
    """
    rows = scratch_array(n, np.int32)
    for start in range(0, n, BLOCK):
        stop = min(n, start + BLOCK)
        rows[start:stop] = np.arange(start, stop, dtype=np.int32)
    return rows
