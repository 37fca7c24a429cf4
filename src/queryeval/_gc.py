"""Bulk allocation without the cyclic garbage collector.

Loading or scoring 100,000 cases creates millions of small container objects; CPython's
cyclic collector then keeps re-scanning them, which measured 2-5x slower than the work
itself. Case models, outputs and records hold no reference cycles (refcounting frees them),
so the collector is paused for the bulk work. Only the executors (and loading, which is
the same kind of bulk work) pause it; nothing is frozen, so the process's collector is as
it was afterwards.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def bulk_allocation() -> Iterator[None]:
    """Pause the cyclic GC for the block (resumed after, if it was on).

    >>> with bulk_allocation():
    ...     gc.isenabled()
    False
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
