"""Bulk allocation without the cyclic garbage collector.

Loading or scoring 100,000 cases creates millions of small container objects; CPython's
cyclic collector then keeps re-scanning them, which measured 2-5x slower than the work
itself. Case models, outputs and records hold no reference cycles (refcounting frees them),
so the collector is paused for the bulk work. Inside a run's scope (`run_scope`, opened by
`run_suite`) what a bulk phase built is also frozen (`gc.freeze`: left out of later scans;
refcounting still frees it), and the scope unfreezes everything when it ends, so the
process's collector is left as it was found.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_open_scopes = 0


@contextmanager
def bulk_allocation() -> Iterator[None]:
    """Pause the cyclic GC for the block (resumed after, if it was on); inside a
    `run_scope`, freeze what exists at the end of the block.

    >>> with bulk_allocation():
    ...     gc.isenabled()
    False
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if _open_scopes:
            gc.freeze()
        if was_enabled:
            gc.enable()


@contextmanager
def run_scope() -> Iterator[None]:
    """The scope of one run: objects frozen by its bulk phases are unfrozen when the
    outermost scope ends (unless something was frozen before it began, which is then the
    process's own to undo).

    >>> before = gc.get_freeze_count()
    >>> with run_scope():
    ...     with bulk_allocation():
    ...         pass
    >>> gc.get_freeze_count() == 0 if before == 0 else gc.get_freeze_count() >= before
    True
    """
    global _open_scopes
    frozen_before = gc.get_freeze_count()
    _open_scopes += 1
    try:
        yield
    finally:
        _open_scopes -= 1
        if not _open_scopes and not frozen_before:
            gc.unfreeze()
