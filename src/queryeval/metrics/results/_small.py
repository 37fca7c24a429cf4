"""The fast path of `compare_results` for small results given as Python rows (what the
engines hand over): rows of canonical values counted with `collections.Counter`.

It answers only where its answer is provably the general path's (exact values: no float
under tolerance, NULL equal to NULL; a column mapping the permutation search would pick,
and no search cap reached; ordered rows only when identical or of different counts; floats
under tolerance only when the rows are equal outright) and returns None everywhere else,
so that the general path decides: mappings with several candidates, the best mapping by
value overlap, ties in ordered rows, floats that differ.
"""

from __future__ import annotations

import decimal
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

from queryeval.metrics.results._canonical import canonical
from queryeval.metrics.results._columns import (
    Alignment,
    Mapping,
    align_by_name,
    align_by_position,
)
from queryeval.metrics.results._match import MAX_CANDIDATE_PAIRS
from queryeval.metrics.results._resultset import ResultSet
from queryeval.metrics.results._rows import Options, RowOutcome, rows_equal

FAST_MAX_ROWS = 10_000
"""Larger results take the general (vectorised) path."""

NAMES_NOTE = "no column permutation makes the rows equal; scored with the names"
BEST_NOTE = (
    "no column permutation makes the rows equal; scored with the mapping that "
    "keeps the most values in common"
)

Rows = Sequence[tuple[Any, ...]]
_EXACT_TYPES = frozenset({int, str, type(None)})  # their own canonical forms


def small_comparison(
    p: ResultSet,
    g: ResultSet,
    row_policy: str,
    columns: str,
    options: Options,
    max_permutations: int,
) -> tuple[Alignment, RowOutcome, tuple[str, ...]] | None:
    """(alignment, row outcome, notes) as the general path would find them, or None when
    this path cannot be sure."""
    if p.arrow is not None or g.arrow is not None or not options.null_equals_null:
        return None
    k_pred, k_gold = len(p.columns), len(g.columns)
    if max(len(p.rows), len(g.rows)) > FAST_MAX_ROWS or not k_gold or not k_pred:
        return None
    pred = _canonical_rows(p.rows, options)
    gold = _canonical_rows(g.rows, options) if pred is not None else None
    if pred is None or gold is None:  # floats within a tolerance
        return _equal_outright(p, g, row_policy, columns, options)
    rows = _Rows(pred, gold, k_pred, k_gold, row_policy)
    if columns == "permutation":
        return _permutation(p, g, rows, row_policy == "set", max_permutations)
    if columns == "by_position":
        alignment = align_by_position(g.num_columns, p.num_columns)
    else:
        alignment = align_by_name(g.columns, p.columns)
    if alignment.missing or (alignment.extra and columns != "gold_subset"):
        return None  # a column problem: the general path reports it
    outcome = rows.under(alignment.pairs)
    return None if outcome is None else (alignment, outcome, ())


def _equal_outright(
    p: ResultSet, g: ResultSet, row_policy: str, columns: str, options: Options
) -> tuple[Alignment, RowOutcome, tuple[str, ...]] | None:
    """Floats under a tolerance: the answer when the canonical rows are equal outright (the
    same multiset; for ``ordered``, the same sequence) under the mapping the general path
    takes or tries first (the names' when they pair up, the only one of a single column),
    which it then finds exact too: equal values are close, and no group of rows is large
    enough for its greedy matching (``MAX_CANDIDATE_PAIRS``). None otherwise: rows that
    differ are matched within the tolerance there."""
    n = p.num_rows
    if row_policy not in ("multiset", "ordered") or g.num_rows != n:
        return None
    if n * n > MAX_CANDIDATE_PAIRS:
        return None
    if columns == "by_position":
        alignment = align_by_position(g.num_columns, p.num_columns)
    elif columns == "permutation" and g.num_columns == p.num_columns == 1:
        alignment = Alignment(((0, 0),), (), ())
    else:
        alignment = align_by_name(g.columns, p.columns)
    if alignment.missing or alignment.extra:
        return None
    policy = options.policy
    picks = [j for _, j in alignment.pairs]
    gold = [tuple(canonical(v, policy) for v in row) for row in g.rows]
    pred = [tuple(canonical(row[j], policy) for j in picks) for row in p.rows]
    if row_policy == "ordered":
        return (alignment, RowOutcome(n, n, n, True), ()) if pred == gold else None
    return (alignment, RowOutcome(n, n, n, None), ()) if Counter(pred) == Counter(gold) else None


def _canonical_rows(rows: Rows, options: Options) -> Rows | None:
    """The rows with every value in canonical form (the rows themselves when ints, strings
    and NULLs only); None when a float or decimal would be compared within a tolerance."""
    types = set(map(type, chain.from_iterable(rows)))
    if types <= _EXACT_TYPES:
        return rows
    if options.tolerant and any(issubclass(t, float | decimal.Decimal) for t in types):
        return None
    policy = options.policy
    return [tuple(canonical(v, policy) for v in row) for row in rows]


class _Rows:
    """Row outcomes of the canonical rows under a mapping (gold columns in their order)."""

    def __init__(self, pred: Rows, gold: Rows, k_pred: int, k_gold: int, policy: str) -> None:
        self.pred, self.gold, self.policy = pred, gold, policy
        self.k_pred, self.k_gold = k_pred, k_gold
        self.identity = tuple(range(k_pred))
        # the rows of each side left unmatched by the last `under` (distinct rows, as a
        # multiset): what the cells of the two sides can differ by; None when not known
        self.unmatched: tuple[Any, Any] | None = None

    def columns(self, side: str) -> list[tuple[Any, ...]]:
        """The canonical columns of one side."""
        rows, k = (self.pred, self.k_pred) if side == "pred" else (self.gold, self.k_gold)
        return list(zip(*rows, strict=True)) if rows else [()] * k

    def under(self, pairs: Mapping) -> RowOutcome | None:
        """The outcome under `pairs` (every gold column, in order); None for ordered rows
        that need the tie analysis."""
        picks = tuple(j for _, j in pairs)
        gr: Rows = self.gold
        if picks == self.identity:
            pr: Rows = self.pred
        elif len(picks) == 1:
            pr = [(r[picks[0]],) for r in self.pred]
        else:
            pr = list(map(itemgetter(*picks), self.pred))
        if self.policy == "set":
            sp, sg = set(pr), set(gr)
            return RowOutcome(len(sp & sg), len(sp), len(sg), None)
        self.unmatched = None
        if len(pr) == 1 == len(gr):  # one row a side: no multiset to count
            matched = 1 if pr[0] == gr[0] else 0
        elif len(sp := set(pr)) == len(pr) and len(sg := set(gr)) == len(gr):
            # distinct rows on both sides (the common case): the sets are the multisets
            if sp == sg:
                matched = len(pr)
            else:
                matched = len(sp & sg)
                self.unmatched = (sp - sg, sg - sp)
        else:
            cp, cg = Counter(pr), Counter(gr)
            if dict.__eq__(cp, cg):  # positive counts only: the same multiset
                matched = len(pr)
            else:  # the multiset intersection's size, without building it
                matched = sum(min(n, cg[row]) for row, n in cp.items() if row in cg)
        if self.policy != "ordered":
            return RowOutcome(matched, len(pr), len(gr), None)
        if len(pr) != len(gr):
            return RowOutcome(matched, len(pr), len(gr), False)
        return RowOutcome(matched, len(pr), len(gr), True) if tuple(pr) == tuple(gr) else None


def _permutation(
    p: ResultSet, g: ResultSet, rows: _Rows, as_set: bool, max_permutations: int
) -> tuple[Alignment, RowOutcome, tuple[str, ...]] | None:
    """The general path's permutation search, where its answer is forced: the names'
    mapping when exact, else the only mapping whose columns hold the same values."""
    k = rows.k_gold
    if rows.k_pred != k:
        return None  # matched by name, with a note: the general path
    names = align_by_name(g.columns, p.columns)
    pair_up = not names.missing and not names.extra  # then `names` is the whole mapping
    first = rows.under(names.pairs) if pair_up else None
    if pair_up:
        if first is None:
            return None
        if rows_equal(first, rows.policy):
            return names, first, ()
    found: Mapping | None = ((0, 0),)  # one column: one mapping, exact or the best there is
    if k > 1:
        forced, found = _forced_mapping(rows, as_set, len(rows.pred) == len(rows.gold))
        if not forced:
            return None  # several candidates: the general path searches
    if found is not None:
        if k > max_permutations:
            return None  # the search may stop at its cap
        outcome = rows.under(found)
        if outcome is None:
            return None
        if rows_equal(outcome, rows.policy):
            return Alignment(found, (), ()), outcome, ()
    # no mapping makes the rows equal
    if pair_up:
        assert first is not None
        return names, first, (NAMES_NOTE,)
    if k == 1:  # the best mapping of one column is the only one
        outcome = rows.under(((0, 0),))
        return None if outcome is None else (Alignment(((0, 0),), (), ()), outcome, (BEST_NOTE,))
    return None


def _forced_mapping(rows: _Rows, as_set: bool, same_rows: bool) -> tuple[bool, Mapping | None]:
    """(True, None) when no mapping can make the rows equal (as the search finds before it
    starts); (True, the one candidate mapping) when each gold column has exactly one
    predicted column with the same values (all distinct); else (False, None)."""
    if not (same_rows or as_set):
        return True, None
    if not as_set:
        # a mapping making the rows equal keeps the multiset of cells; rows matched under
        # the last mapping tried hold the same cells on both sides, so only the unmatched
        # ones can tell the two multisets apart (equal hash sums prove nothing: go on)
        pred_rows, gold_rows = rows.unmatched or (rows.pred, rows.gold)
        if _hash_sum(chain.from_iterable(pred_rows), False) != _hash_sum(
            chain.from_iterable(gold_rows), False
        ):
            return True, None  # the cells differ as a multiset: no mapping makes equal rows
    pred = rows.columns("pred")
    if len(set(pred)) < len(pred):
        return False, None  # identical predicted columns: interchangeable in the search
    signature = (lambda c: frozenset(c)) if as_set else Counter
    # equal values hash equal, so different hash sums prove different value multisets:
    # a cheap filter before the exact signatures
    pred_hash = [_hash_sum(c, as_set) for c in pred]
    pred_sig: dict[int, Any] = {}
    chosen: list[int] = []
    for column in rows.columns("gold"):
        digest = _hash_sum(column, as_set)
        near = [j for j, h in enumerate(pred_hash) if h == digest]
        if near:
            sig = signature(column)
            for j in near:
                if j not in pred_sig:
                    pred_sig[j] = signature(pred[j])
            near = [j for j in near if pred_sig[j] == sig]
        if not near:
            return True, None
        if len(near) > 1:
            return False, None
        chosen.append(near[0])
    if len(set(chosen)) < len(chosen):
        return False, None
    return True, tuple(enumerate(chosen))


def _hash_sum(column: Iterable[Any], as_set: bool) -> int:
    return sum(map(hash, set(column) if as_set else column))
