"""Result comparisons shared by the execution scorers of one run: `execution_match`,
`results_f1` and `results_match_legacy` compare the same predicted and gold results of a
case, so the comparison is made once (per predicted result, gold result and policy) and the
next scorer reads it back; seed 002's `legacy_recall` is computed only when a scorer of the
run reports it (`results_match_legacy`, which says so in its `prepare`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from queryeval.metrics import ComparisonResult
    from queryeval.scorers._base import ScoringContext

_KEY = "execution:comparisons"


class ComparisonMemo:
    """A small LRU of comparisons. An entry keeps its two results alive, so the ids in its
    key cannot be reused by other objects while it is kept; a hit also checks identity."""

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self.legacy_wanted = False  # a scorer of the run reports legacy_recall
        self._items: OrderedDict[Any, tuple[Any, Any, ComparisonResult]] = OrderedDict()
        self._lock = threading.Lock()

    def compare(
        self, pred: Any, gold: Any, policy: dict[str, Any], extra: dict[str, Any], legacy: bool
    ) -> ComparisonResult:
        """`compare_results(pred, gold, **policy, **extra)`, made once while kept; with
        ``legacy`` the result carries `legacy_recall` (computed then if it was left out)."""
        from queryeval.metrics import compare_results

        key = (id(pred), id(gold), repr(sorted(policy.items())), repr(sorted(extra.items())))
        with self._lock:
            found = self._items.get(key)
            if found is not None and found[0] is pred and found[1] is gold:
                self._items.move_to_end(key)
                result = found[2]
            else:
                result = None
        if result is None:
            result = compare_results(pred, gold, **policy, **extra, legacy=legacy)
        elif legacy and result.legacy_recall is None:
            result = replace(result, legacy_recall=_legacy(pred, gold, policy))
        else:
            return result
        with self._lock:
            self._items[key] = (pred, gold, result)
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return result


def _legacy(pred: Any, gold: Any, policy: dict[str, Any]) -> float:
    from queryeval.metrics.results import LEGACY_ROW_LIMIT, legacy_recall

    return legacy_recall(pred, gold, row_limit=policy.get("legacy_row_limit", LEGACY_ROW_LIMIT))


def comparison_memo(ctx: ScoringContext) -> ComparisonMemo:
    """The run's shared comparisons."""
    return ctx.resource(_KEY, ComparisonMemo)
