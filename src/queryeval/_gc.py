"""Bulk allocation without the cyclic garbage collector.

Loading or scoring 100,000 cases creates millions of small container objects; CPython's
cyclic collector then keeps re-scanning them, which measured 2-5x slower than the work
itself. Case models, outputs and records hold no reference cycles (refcounting frees them),
so the collector is paused for the bulk work and what was built is frozen out of later scans.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def bulk_allocation() -> Iterator[None]:
    """Pause the cyclic GC for the block; afterwards freeze what exists and resume."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
