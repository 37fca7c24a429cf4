"""The published execution rules of Spider and BIRD, reproduced with their quirks.

These are the `*_legacy` rules, for comparing with a leaderboard; `compare_results` is the
default. Written from reading the originals (not copied):

- **Spider** (``taoyds/test-suite-sql-eval``: ``evaluation.py`` ``evaluate`` and
  ``exec_eval.py`` ``eval_exec_match`` / ``result_eq``). Before execution: in the
  prediction every ``value`` becomes ``1`` (case-sensitive substring); in both queries
  ``> =``, ``< =``, ``! =`` lose their space; unless ``keep_distinct``, every sqlparse token
  spelled ``distinct`` is deleted from the *first statement* sqlparse finds (the rest of
  the text is dropped with it); ``YEAR(CURDATE())`` becomes ``2020``. Rows are ordered
  when the rewritten gold contains the substring ``order by`` (case-insensitive),
  anywhere. Two empty results are equal whatever their columns; otherwise the row counts
  and the first rows' widths must agree, each row's values sorted by
  ``str(value) + str(type(value))`` must give the same rows (as a set, or as a list when
  ordered: the "quick rejection", which can reject an int/float pair that is otherwise
  equal), and some bijection of the predicted columns must make the rows equal (as a
  multiset, or as a list when ordered), values compared with Python's ``==``.
- **BIRD** (``bird-bench/mini_dev`` ``evaluation/evaluation_ex.py`` ``execute_model`` /
  ``calculate_ex``; the same rule as ``DAMO-ConvAI`` ``bird/llm/src/evaluation.py``
  ``execute_sql``): ``set(predicted rows) == set(gold rows)``: duplicates collapse, row
  order is ignored, columns compare by position, and two empty results are equal whatever
  their columns. Values compare with Python's ``==`` (``1 == 1.0``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

Rows = Sequence[tuple[Any, ...]]

_CUR_YEAR = re.compile(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", re.IGNORECASE)


def _check_sides(prediction: Any, reference: Any, what: str) -> None:
    """A TypeError unless both sides are sequences (of rows or columns), not texts."""
    for side, value in (("prediction", prediction), ("reference", reference)):
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise TypeError(f"{side} must be a sequence of {what}, not {type(value).__name__}")


def spider_legacy_queries(
    prediction: str, reference: str, *, keep_distinct: bool = False
) -> tuple[str, str]:
    """The (prediction, gold) texts the official Spider script executes.

    >>> spider_legacy_queries("SELECT DISTINCT value FROM t WHERE a > = 1", "SELECT a FROM t")
    ('SELECT  1 FROM t WHERE a >= 1', 'SELECT a FROM t')
    """
    pred = prediction.replace("value", "1")
    pred, gold = _close_operators(pred), _close_operators(reference)
    if not keep_distinct:
        pred, gold = _remove_distinct(pred), _remove_distinct(gold)
    return _CUR_YEAR.sub("2020", pred), _CUR_YEAR.sub("2020", gold)


def spider_legacy_order_matters(gold: str, *, keep_distinct: bool = False) -> bool:
    """Whether the official script compares rows in order: ``order by`` in the gold text
    (after its rewrites), by substring.

    >>> spider_legacy_order_matters("SELECT a FROM t WHERE b IN (SELECT b FROM u ORDER BY c)")
    True
    """
    gold = _close_operators(gold)
    if not keep_distinct:
        gold = _remove_distinct(gold)
    return "order by" in gold.lower()


def _close_operators(query: str) -> str:
    return query.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")


def _remove_distinct(query: str) -> str:
    """Every token of sqlparse's first statement except those spelled ``distinct``."""
    import sqlparse

    statements = sqlparse.parse(query)
    if not statements:  # the original fails here (IndexError); nothing to remove
        return query
    return "".join(t.value for t in statements[0].flatten() if t.value.lower() != "distinct")


def spider_legacy_equal(prediction: Rows, reference: Rows, *, order_matters: bool) -> bool:
    """The official Spider verdict on two fetched results (``result_eq(gold, pred)``).

    >>> spider_legacy_equal([], [(1, 2)][:0], order_matters=False)
    True
    >>> spider_legacy_equal([("a", 1), ("b", 2)], [(2, "b"), (1, "a")], order_matters=False)
    True
    >>> spider_legacy_equal([(1, 1.5)], [(1.0, 1.5)], order_matters=False)  # quick rejection
    False
    """
    _check_sides(prediction, reference, "rows")
    pred, gold = prediction, reference
    if not pred and not gold:
        return True
    if len(pred) != len(gold):
        return False
    width = len(gold[0])
    if len(pred[0]) != width:
        return False
    unordered_gold = [_sorted_values(row) for row in gold]
    unordered_pred = [_sorted_values(row) for row in pred]
    if order_matters:
        if unordered_gold != unordered_pred:
            return False
    elif set(unordered_gold) != set(unordered_pred):
        return False
    if width == 1:
        return list(gold) == list(pred) if order_matters else _multiset_equal(gold, pred)
    return _bijection_exists(pred, gold, order_matters)


def bird_legacy_equal(prediction: Rows, reference: Rows) -> bool:
    """The official BIRD verdict: ``set(pred) == set(gold)``.

    >>> bird_legacy_equal([(1, "a"), (1, "a")], [(1.0, "a")])
    True
    >>> bird_legacy_equal([("a", 1)], [(1, "a")])
    False
    >>> bird_legacy_equal([], [])
    True
    """
    _check_sides(prediction, reference, "rows")
    return set(map(tuple, prediction)) == set(map(tuple, reference))


def _sorted_values(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(sorted(row, key=lambda value: str(value) + str(type(value))))


def _multiset_equal(a: Rows, b: Rows) -> bool:
    return len(a) == len(b) and Counter(map(tuple, a)) == Counter(map(tuple, b))


def _bijection_exists(pred: Rows, gold: Rows, order_matters: bool) -> bool:
    """Whether some bijection of predicted columns onto gold columns makes the rows equal
    (as lists when ``order_matters``, else as multisets).

    The original enumerates candidate permutations; this searches the same space with
    pruning that never loses a solution, so the verdict is the same: a gold column can
    only take a predicted column holding the same values (the same sequence when ordered,
    the same multiset otherwise); predicted columns identical row for row are one choice;
    and each partial mapping must keep the projected rows equal as multisets.
    """
    width = len(gold[0])
    gold_cols = [tuple(row[i] for row in gold) for i in range(width)]
    pred_cols = [tuple(row[j] for row in pred) for j in range(width)]

    def signature(column: tuple[Any, ...]) -> Hashable:
        return column if order_matters else frozenset(Counter(column).items())

    classes: dict[tuple[Any, ...], list[int]] = {}
    for j, column in enumerate(pred_cols):
        classes.setdefault(column, []).append(j)
    members = list(classes.values())
    pred_sig = [signature(pred_cols[m[0]]) for m in members]
    candidates = []
    for column in gold_cols:
        sig = signature(column)
        candidates.append([c for c, s in enumerate(pred_sig) if s == sig])
    if any(not c for c in candidates):
        return False
    if order_matters:  # equal sequences column by column: any perfect matching will do
        return _perfect_matching(candidates, [len(m) for m in members])
    order = sorted(range(width), key=lambda gi: len(candidates[gi]))
    free = [len(m) for m in members]
    chosen: dict[int, int] = {}

    def consistent() -> bool:
        keys = sorted(chosen)
        if len(keys) < 2:
            return True
        g = Counter(tuple(gold_cols[gi][r] for gi in keys) for r in range(len(gold)))
        p = Counter(
            tuple(pred_cols[members[chosen[gi]][0]][r] for gi in keys) for r in range(len(pred))
        )
        return g == p

    def place(depth: int) -> bool:
        if depth == width:
            return True
        gi = order[depth]
        for c in candidates[gi]:
            if free[c] == 0:
                continue
            free[c] -= 1
            chosen[gi] = c
            if consistent() and place(depth + 1):
                return True
            del chosen[gi]
            free[c] += 1
        return False

    return place(0)


def _perfect_matching(candidates: list[list[int]], capacity: list[int]) -> bool:
    """Whether every gold column can take a distinct predicted column (Kuhn's algorithm on
    classes with capacities)."""
    owner: dict[tuple[int, int], int] = {}

    def augment(gi: int, seen: set[tuple[int, int]]) -> bool:
        for c in candidates[gi]:
            for k in range(capacity[c]):
                slot = (c, k)
                if slot in seen:
                    continue
                seen.add(slot)
                if slot not in owner or augment(owner[slot], seen):
                    owner[slot] = gi
                    return True
        return False

    return all(augment(gi, set()) for gi in range(len(candidates)))


# -- Spider 2.0-lite ---------------------------------------------------------------------------


def spider2_column_value(values: Sequence[Any]) -> list[Any]:
    """A result column as Spider 2.0's evaluation sees it after a CSV round trip through
    pandas: all-integer text becomes ints, all-number text floats, empty cells NaN (here
    ``None``), anything else stays text.

    >>> spider2_column_value(["1", "2", None]), spider2_column_value(["1", "x"])
    ([1, 2, None], ['1', 'x'])
    """
    cells = ["" if v is None else (v if isinstance(v, str) else _csv_text(v)) for v in values]
    present = [c for c in cells if c != ""]
    for convert in (int, float):
        try:
            converted = [convert(c) for c in present]
        except ValueError:
            continue
        it = iter(converted)
        return [None if c == "" else next(it) for c in cells]
    return [None if c == "" else c for c in cells]


def _csv_text(value: Any) -> str:
    if isinstance(value, float) and value == int(value) and abs(value) < 2**53:
        return repr(value)  # "3.0" stays a float column, as pandas reads it
    return str(value)


def spider2_legacy_equal(
    prediction: Sequence[Sequence[Any]],
    reference: Sequence[Sequence[Any]],
    *,
    condition_cols: Sequence[int] = (),
    ignore_order: bool = False,
    abs_tol: float = 1e-2,
) -> bool:
    """Spider 2.0-lite's ``compare_pandas_table`` on the two results' columns (a list of
    column vectors each): every gold column (only those in
    ``condition_cols`` when given) must equal some predicted column as a vector (sorted
    first when ``ignore_order``); numbers within ``abs_tol`` (0.01), missing equals missing;
    names and extra predicted columns are ignored. Columns are as ``spider2_column_value``
    gives them.

    >>> spider2_legacy_equal([[1.001, 2.0], ["a", "b"], [9, 9]], [["a", "b"], [1, 2]])
    True
    >>> spider2_legacy_equal([[2, 1]], [[1, 2]])
    False
    >>> spider2_legacy_equal([[2, 1]], [[1, 2]], ignore_order=True)
    True
    """
    _check_sides(prediction, reference, "columns")
    chosen = [reference[i] for i in condition_cols] if condition_cols else list(reference)
    return all(any(_vectors_match(g, p, abs_tol, ignore_order) for p in prediction) for g in chosen)


def _order_key(value: Any) -> tuple[bool, str, bool]:
    shown = "nan" if value is None else str(value)  # pandas holds a missing cell as NaN
    return (False, shown, isinstance(value, int | float) or value is None)


def _vectors_match(a: Sequence[Any], b: Sequence[Any], tol: float, ignore_order: bool) -> bool:
    if ignore_order:
        a, b = sorted(a, key=_order_key), sorted(b, key=_order_key)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x is None and y is None:
            continue
        numbers = (int, float)
        if isinstance(x, numbers) and isinstance(y, numbers) and not isinstance(x, bool):
            if not math.isclose(float(x), float(y), abs_tol=tol):
                return False
        elif x != y:
            return False
    return True
