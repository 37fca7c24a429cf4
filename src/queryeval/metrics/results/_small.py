"""The fast path of `compare_results` for small results given as Python rows (what the
engines hand over): rows of canonical values counted with `collections.Counter`.

It answers only where its answer is provably the general path's (NULL equal to NULL; a
column mapping the permutation search would pick, and no search cap reached; ordered rows
only when identical or of different counts; floats under a tolerance only where the
tolerance cannot change any comparison, see `_tolerance_idle`, or the rows are equal
outright, or no number of the rows left unmatched is close to a different gold number,
see `_unequal`) and returns None everywhere else, so that the general path decides: mappings
with several candidates, the best mapping by value overlap, ties in ordered rows, floats
that differ by no more than about twice the tolerance.

Cells of the common plain types (ints, strings, NULLs, floats, decimals, dates) are read
column by column into values equal exactly when their canonical forms are (a float is
itself unless NaN, a decimal its float, a date itself when no other temporal type is
present): a date or a decimal costs no call of `canonical` per cell. Rows of plain types
are first compared as given (equal cells have equal canonical forms): an equal result is
answered there, and a wrong one mostly from the few rows left unmatched (`_unequal`; one
row a side, an aggregate most often, in one pass: `_one_row`).
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import math
import operator
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain
from math import factorial
from operator import itemgetter
from typing import Any

from queryeval.metrics.results._canonical import NAN, canonical
from queryeval.metrics.results._columns import (
    Alignment,
    Mapping,
    align_by_name,
    align_by_position,
    best_by_overlap,
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
_Bags = list[tuple[Sequence[Any], set[type]]]  # the gold's columns and the types in each
_NONE = type(None)
_NULL = frozenset({_NONE})
_EXACT_TYPES = frozenset({int, str, _NONE})  # their own canonical forms
# types read column by column without `canonical` per cell (see `_plain_columns`)
_PLAIN_TYPES = frozenset({int, str, _NONE, float, decimal.Decimal, dt.date})
_FLOATS = frozenset({float, decimal.Decimal})  # the types that make a column "float"
_NUMBERS = frozenset({int, float, decimal.Decimal, _NONE})
_EXACT_FLOAT_INT = 2**53  # integers of smaller magnitude are exact as floats
_INF = float("inf")
_SCALAR_NEIGHBOURS = 40  # sorted values past this many are checked with NumPy
_FEW_DECIMALS = 40  # gold rows past this many: their decimals sorted as decimals
_NOT_FINITE = frozenset({None, NAN, _INF, -_INF})
# the types of a plain value once converted (`_plain_value`)
_CONVERTED_TYPES = frozenset({int, str, _NONE, float, dt.date, type(NAN)})
_FLOAT, _DECIMAL, _INT = frozenset({float}), frozenset({decimal.Decimal}), frozenset({int})
_NUMBER_TYPES = frozenset({int, float, decimal.Decimal})
_IS_VALUE = functools.partial(operator.is_not, None)


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
    pred_rows, gold_rows = p.rows, g.rows
    k_pred, k_gold = len(p.columns), len(g.columns)
    if max(len(pred_rows), len(gold_rows)) > FAST_MAX_ROWS or not k_gold or not k_pred:
        return None
    types, gold_bags = _cell_types(pred_rows, gold_rows)
    # equal outright: tried on the rows as given (plain types: equal cells have equal
    # canonical forms), before any of them is converted; ints, strings and NULLs alone are
    # compared as given below anyway. Not equal as given, the rows left unmatched are
    # often enough to prove them unequal (`_unequal`), without converting the rest.
    residue: _Residue = _WHOLE
    if len(gold_rows) == 1 == len(pred_rows) and row_policy == "multiset":
        if types <= _PLAIN_TYPES:  # one row a side (an aggregate, most often)
            one = _one_row(p, g, columns, options, max_permutations, types)
            if one is not None:
                return one
    elif (
        types <= _PLAIN_TYPES
        and not types <= _EXACT_TYPES
        and _outright_applies(pred_rows, gold_rows, row_policy)
    ):
        outright, residue = _outright_as_given(p, g, row_policy, columns)
        if outright is not None:
            return outright
        if isinstance(residue, tuple):  # not equal as given: often not equal at all
            unequal = _unequal(p, g, residue, columns, options, max_permutations, types, gold_bags)
            if unequal is not None:
                return unequal
    try:
        both = _canonical_pair(pred_rows, gold_rows, k_pred, k_gold, options, types)
    except OverflowError:  # a decimal past a float's range: the general path reads it
        return None
    if both is None:  # floats within a tolerance, types read by `canonical` cell by cell
        return _equal_outright(p, g, row_policy, columns, options)
    pred, gold, pending = both
    if pending is not None:  # floats within a tolerance
        if isinstance(residue, str):  # _WHOLE
            outright = _equal_outright(p, g, row_policy, columns, options, (pred, gold))
        elif residue is not None and (pending[0].changed or pending[1].changed):
            outright = _equal_once_converted(residue, len(gold), options.policy)
        else:  # no mapping to try, or the rows as given are the converted ones
            outright = None
        if outright is not None:
            return outright
        if row_policy == "set" and _search_steps(k_gold) > max_permutations:
            return None  # the set policy's search tries every numeric pair there: its cap
        if len(pred) * len(gold) > MAX_CANDIDATE_PAIRS:
            return None  # a dense group may be matched greedily there (a note)
        if not _tolerance_idle(*pending, options.abs_tol, options.rel_tol):
            return None
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
    p: ResultSet,
    g: ResultSet,
    row_policy: str,
    columns: str,
    options: Options,
    canonical_rows: tuple[Rows, Rows] | None = None,
) -> tuple[Alignment, RowOutcome, tuple[str, ...]] | None:
    """The answer when the canonical rows are equal outright (the same multiset; for
    ``ordered``, the same sequence) under the mapping the general path takes or tries first
    (the names' when they pair up, the only one of a single column), which it then finds
    exact too: equal values are close, and no group of rows is large enough for its greedy
    matching (``MAX_CANDIDATE_PAIRS``). None otherwise: rows that differ are matched within
    the tolerance there. `canonical_rows`: both sides' rows in canonical form, in
    `_plain_columns`' or, when every cell is of a plain type, as given (cells equal as
    given have equal canonical forms: a decimal equal to a number has its value, dates
    equal are the same day); computed here when not given."""
    if not _outright_applies(p.rows, g.rows, row_policy):
        return None
    n = len(g.rows)
    alignment = _outright_alignment(p, g, columns)
    if alignment is None:
        return None
    picks = [j for _, j in alignment.pairs]
    gold: Rows
    if canonical_rows is None:
        policy = options.policy
        gold = [tuple(canonical(v, policy) for v in row) for row in g.rows]
        pred = [tuple(canonical(row[j], policy) for j in picks) for row in p.rows]
    else:
        pred_rows, gold = canonical_rows
        pred = _picked(pred_rows, picks)
    try:
        if row_policy == "ordered" or n == 1:
            same = pred == list(gold)
        else:
            same = Counter(pred) == Counter(gold)
    except (TypeError, ArithmeticError):  # a signalling NaN decimal, given as it is
        return None
    order_ok = True if row_policy == "ordered" else None
    return (alignment, RowOutcome(n, n, n, order_ok), ()) if same else None


# what the rows as given leave to compare once converted: the mapping tried and each side's
# rows it left unmatched (a multiset comparison); None: no mapping to try; _WHOLE: the
# converted rows compared whole (in order, or cells that cannot be hashed as given)
_WHOLE = "whole"
_Residue = tuple[Alignment, list[tuple[Any, ...]], list[tuple[Any, ...]]] | None | str


def _outright_as_given(
    p: ResultSet, g: ResultSet, row_policy: str, columns: str
) -> tuple[tuple[Alignment, RowOutcome, tuple[str, ...]] | None, _Residue]:
    """`_equal_outright` on the rows as given (every cell of a plain type), and when they
    are not equal what is left to compare once converted: for a multiset, only the rows
    left unmatched can become equal (the matched ones stay so)."""
    alignment = _outright_alignment(p, g, columns)
    if alignment is None:
        return None, None
    picks = [j for _, j in alignment.pairs]
    gold = g.rows
    n = len(gold)
    residue: _Residue
    try:
        if row_policy == "ordered":
            same, residue = _picked(p.rows, picks) == list(gold), _WHOLE
        elif n == 1:
            pred = _picked(p.rows, picks)
            same, residue = pred[0] == gold[0], (alignment, pred, list(gold))
        elif len(sp := set(_picking(p.rows, picks))) == n and len(sg := set(gold)) == n:
            # distinct rows on both sides: the sets are the multisets
            same, residue = sp == sg, (alignment, list(sp - sg), list(sg - sp))
        else:
            cp, cg = Counter(_picking(p.rows, picks)), Counter(gold)
            same = cp == cg
            residue = (alignment, list((cp - cg).elements()), list((cg - cp).elements()))
    except (TypeError, ArithmeticError):  # a signalling NaN decimal, given as it is
        return None, _WHOLE
    if not same:
        return None, residue
    return (alignment, RowOutcome(n, n, n, True if row_policy == "ordered" else None), ()), None


def _one_row(
    p: ResultSet,
    g: ResultSet,
    columns: str,
    options: Options,
    max_permutations: int,
    types: set[type],
) -> tuple[Alignment, RowOutcome, tuple[str, ...]] | None:
    """`_outright_as_given` and then `_unequal` for one row a side (a multiset of plain
    types), in one pass: the answer, or None where they leave it to the rest of the path
    (which then compares the converted row whole, as `_equal_once_converted` would)."""
    alignment = _outright_alignment(p, g, columns)
    if alignment is None:
        return None
    pred_row, gold_row = p.rows[0], g.rows[0]
    row = tuple([pred_row[j] for _, j in alignment.pairs])
    policy = options.policy
    try:
        if row == gold_row:
            return alignment, RowOutcome(1, 1, 1, None), ()
        # a string, date or NULL no gold cell equals: unequal under every mapping and
        # tolerance, converted or not (`_apart`)
        apart = _apart((row,), gold_row)
        if apart or types.isdisjoint(_FLOATS):  # ints, strings, NULLs, dates as they are
            pred, gold = row, gold_row
        else:
            pred, gold = _converted(row, policy), _converted(gold_row, policy)
            if pred == gold:
                return None  # equal once converted
            apart = _far_cell(pred, gold, options)
        notes: tuple[str, ...] = ()
        if columns == "permutation":  # as `_unequal` decides
            k = len(alignment.pairs)
            if _search_steps(k) > max_permutations:
                return None
            if not apart and set(pred) == set(gold) and Counter(pred) == Counter(gold):
                return None
            notes = _permutation_notes(alignment, g, p)
    except (TypeError, ArithmeticError):  # a signalling NaN decimal
        return None
    if not apart and _tolerance_may_match(options, types, [pred], gold_row):
        return None
    return alignment, RowOutcome(0, 1, 1, None), notes


def _equal_once_converted(
    residue: tuple[Alignment, list[tuple[Any, ...]], list[tuple[Any, ...]]], n: int, policy: Any
) -> tuple[Alignment, RowOutcome, tuple[str, ...]] | None:
    """The multiset answer of `_equal_outright` on the converted rows, from the rows the
    comparison as given left unmatched: converted (as `_plain_columns` converts them),
    they are the same multiset exactly when the whole converted rows are."""
    alignment, pred, gold = residue
    if len(pred) == 1:  # one row left a side (the other side has as many): cell by cell
        for x, y in zip(pred[0], gold[0], strict=True):
            if _plain_value(x, policy) != _plain_value(y, policy):
                return None
    else:
        left = Counter([tuple([_plain_value(v, policy) for v in row]) for row in pred])
        if left != Counter([tuple([_plain_value(v, policy) for v in row]) for row in gold]):
            return None
    return alignment, RowOutcome(n, n, n, None), ()


def _unequal(
    p: ResultSet,
    g: ResultSet,
    residue: tuple[Alignment, list[tuple[Any, ...]], list[tuple[Any, ...]]],
    columns: str,
    options: Options,
    max_permutations: int,
    types: set[type],
    gold_bags: _Bags,
) -> tuple[Alignment, RowOutcome, tuple[str, ...]] | None:
    """The answer for a multiset of rows of plain types that are not the same once
    converted, from the rows the comparison as given left unmatched (`residue`), where the
    tolerance provably changes nothing; None where it might, or where the rows are equal.

    The rows matched as given stay matched; the rest are matched once converted (as
    `_plain_columns` converts them): `matched` is the exact multiset intersection. The
    general path matches within the tolerance, and could match more only along an
    alternating path from a row left unmatched here, whose first step pairs that row with a
    gold row close to it but not equal; so if no number of the unmatched predicted rows is
    close to a different gold number (`_isolated`), the exact count is its count. Likewise
    for the permutation search: a mapping making the rows equal within the tolerance pairs
    every predicted cell with a close gold cell, impossible when the unmatched rows' cells
    differ as a multiset and none of them is close to a different gold number; so the
    search finds nothing and scores the names' mapping (or, for one column named
    differently, the only one), as `_permutation` says. Cheaper where it holds: each row
    left holds a string, date or NULL no gold cell equals (`_apart`): no such row can match
    at all."""
    alignment, pred_given, gold_given = residue
    policy = options.policy
    n = len(g.rows)
    try:
        # each row left holds a string, date or NULL that no gold cell equals (`_apart`):
        # none of them can match, converted, under another mapping or within the tolerance
        apart = bool(pred_given) and _apart(pred_given, gold_bags or g.rows[0])
        if apart:
            matched, pred_left = n - len(pred_given), pred_given
        elif len(pred_given) == 1 == len(gold_given):  # one row wrong (the most common)
            pred_row, gold_row = (
                _converted(pred_given[0], policy),
                _converted(gold_given[0], policy),
            )
            if pred_row == gold_row:
                return None  # equal once converted: `_equal_once_converted` says so
            matched, pred_left, gold_left = n - 1, [pred_row], [gold_row]
        else:
            pred_count = Counter([_converted(row, policy) for row in pred_given])
            gold_count = Counter([_converted(row, policy) for row in gold_given])
            common = pred_count & gold_count
            matched = n - len(pred_given) + sum(common.values())
            if matched == n:
                return None
            pred_left = list((pred_count - common).elements())
            gold_left = list((gold_count - common).elements())
        notes: tuple[str, ...] = ()
        if columns == "permutation":
            if _search_steps(len(g.columns)) > max_permutations:
                return None  # the search might stop at its cap (a note)
            if not apart:
                pred_cells = list(chain.from_iterable(pred_left))
                gold_cells = list(chain.from_iterable(gold_left))
                if set(pred_cells) == set(gold_cells) and Counter(pred_cells) == Counter(
                    gold_cells
                ):
                    return None  # another mapping might make the rows equal: the search
            notes = _permutation_notes(alignment, g, p)
    except (TypeError, ArithmeticError):  # a signalling NaN decimal
        return None
    if not apart and _tolerance_may_match(options, types, pred_left, gold_bags or g.rows[0]):
        return None  # 2+ rows: the bags
    return alignment, RowOutcome(matched, n, n, None), notes


def _permutation_notes(alignment: Alignment, g: ResultSet, p: ResultSet) -> tuple[str, ...]:
    """The note of an unequal answer under the permutation policy: the names pair up where
    the mapping tried has several columns (see `_outright_alignment`); one column each is the
    only mapping, named or not."""
    named = len(alignment.pairs) > 1 or not align_by_name(g.columns, p.columns).missing
    return (NAMES_NOTE,) if named else (BEST_NOTE,)


def _tolerance_may_match(
    options: Options, types: set[type], pred: Rows, gold: tuple[Any, ...] | _Bags
) -> bool:
    """Whether a number left unmatched might match a gold number within the tolerance
    (`_isolated` cannot prove otherwise); without floats or decimals none is compared so."""
    return options.tolerant and not types.isdisjoint(_FLOATS) and not _isolated(pred, gold, options)


def _apart(pred_left: Rows, gold: tuple[Any, ...] | _Bags) -> bool:
    """Whether every row of `pred_left` (of plain types, as given or converted: strings,
    dates and NULLs are their own converted forms) holds a string, a date or a NULL that
    no gold cell equals: such a row is equal to no gold row under any column mapping, and
    close to none either (the tolerance compares numbers only; a NULL equals only a NULL, a
    string or a date only a value of its type), so neither converting the rows, another
    mapping nor the tolerance can match it. Where it holds, no number is read (`_isolated`
    reads them all). `gold`: the one gold row, or the gold's columns and the types in each
    (`_cell_types`): only the columns holding the value's type are searched."""
    one_row = isinstance(gold, tuple)
    for row in pred_left:
        for value in row:
            kind = type(value)
            if kind is str or kind is dt.date or value is None:
                if one_row:
                    if value not in gold:
                        break
                elif not any(kind in held and value in column for column, held in gold):
                    break
        else:
            return False  # no such value in this row
    return True


def _far_cell(pred: tuple[Any, ...], gold: tuple[Any, ...], options: Options) -> bool:
    """Whether a cell of the one predicted row equals no cell of the one gold row and lies
    more than twice the tolerance's bound from each of its numbers (both rows converted):
    under any mapping that cell meets a gold cell neither equal nor close, so the row
    matches under none. One such cell is enough (`_isolated` checks every number). False
    where it cannot tell: a gold value that is no plain converted one (a decimal's
    canonical form), an integer of 2**53 or more, a value so small that the bound may
    underflow."""
    abs_tol, rel_tol = options.abs_tol, options.rel_tol
    tiny = 1e-300 / rel_tol if rel_tol else 0.0
    numbers = []
    for y in gold:
        kind = type(y)
        if kind not in _CONVERTED_TYPES:
            return False
        if (kind is float or kind is int) and y - y == 0:  # finite
            size_y = abs(y)
            if 0 < size_y < tiny or size_y >= _EXACT_FLOAT_INT:
                return False
            numbers.append((y, size_y))
    for x in pred:
        if x in gold:
            continue
        kind = type(x)
        if kind is not float and kind is not int:
            if kind in _CONVERTED_TYPES:  # a string, date, NULL or NaN equal to no cell
                return True
            continue
        if x - x != 0:  # an infinity equal to no cell: close to none
            return True
        size_x = abs(x)
        if 0 < size_x < tiny or size_x >= _EXACT_FLOAT_INT:
            continue
        for y, size_y in numbers:
            if abs(y - x) <= 2.0 * (rel_tol * (size_x + size_y) + abs_tol):
                break
        else:
            return True
    return False


def _row_numbers(rows: Iterable[Sequence[Any]]) -> list[float | int] | None:
    """The finite numbers of `rows` (of plain types) as the general path reads them (a
    decimal by its float), cell by cell; None where one is of magnitude 2**53 or more (a
    float may round it, a decimal's canonical form may then be no float), a decimal is past
    a float's range (read as an infinity) or a signalling NaN."""
    found: list[float | int] = []
    try:
        for row in rows:
            for value in row:
                kind = type(value)
                if kind is float or kind is int:
                    if value - value == 0:  # finite
                        found.append(value)
                elif kind is decimal.Decimal:
                    number = float(value)  # a signalling NaN raises ValueError
                    if number - number == 0:
                        found.append(number)
                    elif value.is_finite():  # past a float's range: read as an infinity
                        return None
    except ValueError:
        return None
    for number in found:
        if not -_EXACT_FLOAT_INT < number < _EXACT_FLOAT_INT:
            return None
    return found


def _gold_numbers(bags: _Bags) -> tuple[list[float], list[decimal.Decimal]] | None:
    """The finite numbers of the gold `rows` (of plain types), sorted: the floats and ints
    as floats, the decimals as floats too in a result of a few rows, else as decimals (a
    decimal's float is monotone in it, so its neighbours are found among the decimals
    themselves: no conversion of every one); None where `_row_numbers` would give None (or
    a NaN decimal makes the order unknown). `bags`: the gold's columns and the types in
    each (see `_cell_types`)."""
    floats: list[float] = []
    decimals: list[decimal.Decimal] = []
    few = bool(bags) and len(bags[0][0]) <= _FEW_DECIMALS
    for column, types in bags:
        if types.isdisjoint(_NUMBER_TYPES):
            continue
        present = list(filter(_IS_VALUE, column)) if _NONE in types else column
        held = types - _NULL
        if held == _FLOAT:
            total = sum(present, 0.0)
            if total - total == 0:  # no NaN, no infinity (nor a sum past a float's range)
                floats.extend(present)
            else:
                floats.extend(filter(math.isfinite, present))
        elif held == _INT:  # a larger one: past the limit, or OverflowError
            try:
                floats.extend(map(float, present))
            except OverflowError:
                return None
        elif held == _DECIMAL and not few:
            decimals.extend(present)
        elif held == _DECIMAL and _finite_floats(present, floats):
            pass  # a few rows: their decimals as floats
        else:  # numbers among other types (or decimals past a float): value by value
            found = _row_numbers([present])
            if found is None:
                return None
            floats.extend(map(float, found))
    floats.sort()
    if floats and (floats[0] <= -_EXACT_FLOAT_INT or floats[-1] >= _EXACT_FLOAT_INT):
        return None
    if decimals:
        try:  # a NaN raises InvalidOperation in the sort or the check below
            decimals.sort()
            if decimals[0] <= -_EXACT_FLOAT_INT or decimals[-1] >= _EXACT_FLOAT_INT:
                return None  # also past a float's range, or an infinity
        except ArithmeticError:
            return _decimals_as_floats(floats, decimals)
    return floats, decimals


def _finite_floats(decimals: Sequence[decimal.Decimal], floats: list[float]) -> bool:
    """Whether every decimal is a finite float within 2**53 (then added to `floats`)."""
    try:
        converted = list(map(float, decimals))
    except ValueError:  # a signalling NaN
        return False
    total = sum(converted, 0.0)
    if (
        total - total != 0
        or not -_EXACT_FLOAT_INT < min(converted) <= max(converted) < _EXACT_FLOAT_INT
    ):
        return False
    floats.extend(converted)
    return True


def _decimals_as_floats(
    floats: list[float], decimals: list[decimal.Decimal]
) -> tuple[list[float], list[decimal.Decimal]] | None:
    """`_gold_numbers` where a decimal is a NaN: every decimal by its float."""
    found = _row_numbers([decimals])
    if found is None:
        return None
    floats = sorted([*floats, *map(float, found)])
    return floats, []


def _isolated(pred_left: Rows, gold: tuple[Any, ...] | _Bags, options: Options) -> bool:
    """Whether no number of the rows `pred_left` (converted) is close to a different number
    of the gold rows (as the general path reads them: floats, a decimal by its float),
    whatever the columns: the nearest gold numbers below and above each are more than
    twice the tolerance's bound away (a value's close numbers form an interval around it,
    and a farther number on one side is close only if the nearer one is). False where it
    cannot tell cheaply: integers of 2**53 or more, values so small that the bound may
    underflow, decimals that are no float. The few numbers of one gold row are checked one
    by one. `gold`: that row (a tuple), or the gold's columns and the types in each (see
    `_cell_types`)."""
    abs_tol, rel_tol = options.abs_tol, options.rel_tol
    tiny = 1e-300 / rel_tol if rel_tol else 0.0
    wanted = []  # the finite numbers, once checked for values it cannot tell about
    for x in set(chain.from_iterable(pred_left)):
        kind = type(x)
        if kind is float or kind is int:
            if x - x == 0:
                size_x = abs(x)
                if 0 < size_x < tiny or (kind is int and size_x >= _EXACT_FLOAT_INT):
                    return False
                wanted.append(x)
        elif kind not in _CONVERTED_TYPES:
            return False  # a decimal's canonical form that is no float
    if not wanted:
        return True
    if isinstance(gold, tuple):  # one row: every number, one by one
        numbers = _row_numbers((gold,))
        if numbers is None:
            return False
        for x in wanted:
            size_x = abs(x)
            for y in numbers:
                if y != x:
                    size_y = abs(y)
                    if 0 < size_y < tiny or abs(y - x) <= 2.0 * (
                        rel_tol * (size_x + size_y) + abs_tol
                    ):
                        return False
        return True
    found = _gold_numbers(gold)
    if found is None:
        return False
    floats, decimals = found
    last = len(floats) - 1
    for x in wanted:
        size_x = abs(x)
        near: list[float] = []
        if floats:
            i = bisect_left(floats, x)
            if i:
                near.append(floats[i - 1])  # the nearest below
            j = bisect_right(floats, x, i)
            if j <= last:
                near.append(floats[j])  # the nearest above
        if decimals:
            key = decimal.Decimal(x)  # exact
            i, j = bisect_left(decimals, key), bisect_right(decimals, key)
            # the decimals whose float is x (x itself, as the general path reads them) lie
            # in one run around x's place (a decimal's float is monotone in it): the
            # nearest different numbers are just outside it
            while i and float(decimals[i - 1]) == x:
                i -= 1
            while j < len(decimals) and float(decimals[j]) == x:
                j += 1
            if i:
                near.append(float(decimals[i - 1]))
            if j < len(decimals):
                near.append(float(decimals[j]))
        for y in near:
            size_y = abs(y)
            if 0 < size_y < tiny or abs(y - x) <= 2.0 * (rel_tol * (size_x + size_y) + abs_tol):
                return False
    return True


def _converted(row: tuple[Any, ...], policy: Any) -> tuple[Any, ...]:
    """A row of plain types as `_plain_columns` gives it (see `_plain_value`)."""
    return tuple([
        v if (kind := type(v)) is not float and kind is not decimal.Decimal
        else v if kind is float and v == v
        else _plain_value(v, policy)
        for v in row
    ])  # fmt: skip


def _plain_value(value: Any, policy: Any) -> Any:
    """One cell of a plain type as `_plain_columns` gives it."""
    kind = type(value)
    if kind is float:
        return NAN if value != value else value
    if kind is decimal.Decimal:
        return _decimal(value, policy)
    return value


def _outright_alignment(p: ResultSet, g: ResultSet, columns: str) -> Alignment | None:
    """The mapping `_equal_outright` tries (None when it has none)."""
    if columns == "by_position":
        alignment = align_by_position(g.num_columns, p.num_columns)
    elif columns == "permutation" and g.num_columns == p.num_columns == 1:
        alignment = Alignment(((0, 0),), (), ())
    else:
        alignment = align_by_name(g.columns, p.columns)
    return None if alignment.missing or alignment.extra else alignment


def _picked(rows: Rows, picks: list[int]) -> list[tuple[Any, ...]]:
    """The rows with the columns `picks`, in that order."""
    return list(_picking(rows, picks))


def _picking(rows: Rows, picks: list[int]) -> Iterable[tuple[Any, ...]]:
    """`_picked` as an iterator (no list built)."""
    if picks == list(range(len(picks))):
        return rows
    if len(picks) == 1:
        return [(row[picks[0]],) for row in rows]
    return map(itemgetter(*picks), rows)


def _outright_applies(pred_rows: Rows, gold_rows: Rows, row_policy: str) -> bool:
    """Whether `_equal_outright` may answer: as many rows a side, not a set, and no group
    of rows large enough for the general path's greedy matching."""
    n = len(gold_rows)
    return (
        row_policy in ("multiset", "ordered")
        and len(pred_rows) == n
        and n * n <= MAX_CANDIDATE_PAIRS
    )


def _cell_types(pred_rows: Rows, gold_rows: Rows) -> tuple[set[type], _Bags]:
    """The types of every cell of both sides, and the gold's columns with the types each
    holds (none for one row: `_one_row` reads it as a row) for `_gold_numbers`."""
    types = set(map(type, chain.from_iterable(pred_rows)))
    if len(gold_rows) == 1:
        types.update(map(type, gold_rows[0]))
        return types, []
    bags: _Bags = [(column, set(map(type, column))) for column in zip(*gold_rows, strict=True)]
    for _, held in bags:
        types |= held
    return types, bags


def _canonical_pair(
    pred_rows: Rows,
    gold_rows: Rows,
    k_pred: int,
    k_gold: int,
    options: Options,
    types: set[type] | None,
) -> tuple[Rows, Rows, tuple[_Columns, _Columns] | None] | None:
    """Both sides' rows with every value in a form equal exactly when the canonical forms
    are (the rows themselves when ints, strings and NULLs only), and, when floats or
    decimals are compared within a tolerance, both sides' columns for `_tolerance_idle`
    (else None). None when such floats come with types read by `canonical` cell by cell.
    `types`: the types of all cells of both sides (None: not known yet)."""
    if types is not None and types <= _EXACT_TYPES:  # most results: ints, strings, NULLs
        return pred_rows, gold_rows, None
    pred = _plain_columns(pred_rows, k_pred, options)
    gold = _plain_columns(gold_rows, k_gold, options)
    types = pred.types | gold.types
    tolerant = options.tolerant and any(issubclass(t, float | decimal.Decimal) for t in types)
    if not types <= _PLAIN_TYPES:  # canonical forms cell by cell
        if tolerant:
            return None
        policy = options.policy
        return (
            [tuple(canonical(v, policy) for v in row) for row in pred_rows],
            [tuple(canonical(v, policy) for v in row) for row in gold_rows],
            None,
        )
    return _rows_of(pred_rows, pred), _rows_of(gold_rows, gold), (pred, gold) if tolerant else None


class _Columns:
    """One side's columns in plain form (`changed`: some values differ from the rows'),
    each column's kind as `numeric_kind` gives it, and the types of all its cells."""

    __slots__ = ("changed", "kinds", "types", "values")

    def __init__(
        self, values: list[Sequence[Any]], kinds: list[str], changed: bool, types: set[type]
    ) -> None:
        self.values, self.kinds, self.changed, self.types = values, kinds, changed, types


def _plain_columns(rows: Rows, k: int, options: Options) -> _Columns:
    """The columns of rows holding plain types only, each value replaced by one equal to
    the others exactly when their canonical forms are: a float by itself (NaN by the NaN
    token), a decimal by its float (its canonical form where that float is not exact),
    a date by itself (no other temporal type is present: dates equal as dates exactly when
    their midnights are the same instant). Columns of other types are left as they are
    (the caller reads such rows by `canonical`)."""
    if len(rows) == 1:
        return _plain_row(rows[0], options)
    columns: list[Sequence[Any]] = list(zip(*rows, strict=True)) if rows else [()] * k
    kinds = []
    changed = False
    types: set[type] = set()
    for i, column in enumerate(columns):
        held = frozenset(map(type, column))
        types |= held
        kind, decimals, floats, only = _column_kind(held)
        kinds.append(kind)
        if decimals:
            column = columns[i] = _decimals(column, only, options)
            changed = True
        if floats and _has_nan(column):
            columns[i] = [NAN if v != v else v for v in column]
            changed = True
    return _Columns(columns, kinds, changed, types)


def _plain_row(row: tuple[Any, ...], options: Options) -> _Columns:
    """`_plain_columns` of one row, value by value (a decimal by `_decimal`, as a column
    of decimals converts each of its values)."""
    values: list[Sequence[Any]] = []
    kinds = []
    changed = False
    for value in row:
        kind = type(value)
        kinds.append(_column_kind(frozenset((kind,)))[0])
        if kind is decimal.Decimal:
            value = _decimal(value, options.policy)
            changed = True
        elif kind is float and value != value:
            value = NAN
            changed = True
        values.append((value,))
    return _Columns(values, kinds, changed, set(map(type, row)))


@functools.lru_cache(maxsize=256)
def _column_kind(held: frozenset[type]) -> tuple[str, bool, bool, bool]:
    """(kind as `numeric_kind` gives it, holds decimals to convert, holds floats to check
    for NaN, holds decimals and NULLs only) of a column of plain types `held` (kind
    "other" and nothing to do otherwise)."""
    held = held - {_NONE}
    if not held:
        return "null", False, False, False
    if not held <= _PLAIN_TYPES:
        return "other", False, False, False
    kind = "other"
    if held <= _NUMBERS:
        kind = "float" if float in held or decimal.Decimal in held else "int"
    return kind, decimal.Decimal in held, float in held, held == {decimal.Decimal}


def _decimals(column: Sequence[Any], only: bool, options: Options) -> list[Any]:
    """A column holding decimals, each by its float where that float is exactly its
    canonical form: an integral decimal of magnitude below 2**53 is its own float, a
    fractional one becomes its float anyway; NaN, infinities and larger integers by
    `canonical` (also for the whole column when the quick conversion cannot tell)."""
    if only:  # decimals and NULLs only: one conversion a value
        try:
            floats = [v if v is None else float(v) for v in column]
        except ValueError:  # a signalling NaN
            floats = None
        if floats is not None:
            present = [f for f in floats if f is not None]
            total = sum(present, 0.0)
            if total - total == 0.0 and (  # no NaN, no infinity
                not present or -_EXACT_FLOAT_INT < min(present) <= max(present) < _EXACT_FLOAT_INT
            ):
                return floats
    policy = options.policy
    return [_decimal(v, policy) if type(v) is decimal.Decimal else v for v in column]


def _decimal(value: decimal.Decimal, policy: Any) -> Any:
    """A decimal's canonical form (see `_decimals`); OverflowError for a finite one past a
    float's range (the general path reads it as an infinity within a tolerance: this path
    then declines)."""
    if value.is_finite():
        f = float(value)
        if -_EXACT_FLOAT_INT < f < _EXACT_FLOAT_INT:
            return f
        if f - f != 0:
            raise OverflowError("a decimal past a float's range")
    return canonical(value, policy)


def _has_nan(column: Sequence[Any]) -> bool:
    """Whether a column may hold a NaN (True also where it cannot tell cheaply)."""
    try:
        total = sum(filter(None, column), 0.0)  # NaN is truthy; a NaN makes the sum NaN
    except (TypeError, OverflowError):  # strings, canonical forms, ints past a float
        return any(v != v for v in column)
    return bool(total != total)


def _rows_of(rows: Rows, columns: _Columns) -> Rows:
    return list(zip(*columns.values, strict=True)) if columns.changed and rows else rows


@functools.lru_cache(maxsize=64)
def _search_steps(k: int) -> int:
    """The most steps the permutation search takes over k columns (every partial mapping)."""
    return sum(factorial(k) // factorial(k - d) for d in range(1, k + 1))


def _tolerance_idle(pred: _Columns, gold: _Columns, abs_tol: float, rel_tol: float) -> bool:
    """Whether the tolerance can make no two different values close (then every decision
    of the general path is the exact one: a column pair holds close values exactly when
    it holds equal ones).

    A value of a gold column compares under the tolerance with values of predicted columns
    only: a float column with any numeric one, an integer column with a float one. Sort the
    distinct finite values that can meet so (as floats: the general path's form). If some
    gold value x and predicted value y != x are close, some two neighbours between them,
    one from each side, are closer still (``math.isclose`` holds on every sub-interval of
    a close pair), so it is enough to see that no such neighbours lie within twice the
    bound (the margin covers the rounding of both). Integers of 2**53 or more, which floats
    would round, and values so small that the bound may underflow, decline."""
    pred_float = "float" in pred.kinds
    gold_float = "float" in gold.kinds
    if not (pred_float or gold_float):
        return True
    sides = []
    for columns, other_float in ((gold, pred_float), (pred, gold_float)):
        values: set[Any] = set()
        for column, kind in zip(columns.values, columns.kinds, strict=True):
            if kind == "float" or (kind == "int" and other_float):
                values.update(column)
        sides.append(values - _NOT_FINITE)
    gold_values, pred_values = sides
    if not gold_values or not pred_values:
        return True
    joint = sorted(gold_values | pred_values)
    if (joint[0] <= -_EXACT_FLOAT_INT or joint[-1] >= _EXACT_FLOAT_INT) and any(
        type(v) is int and abs(v) >= _EXACT_FLOAT_INT for v in joint
    ):
        return False  # floats would round it: the general path
    return not any(
        (a in gold_values and b in pred_values) or (a in pred_values and b in gold_values)
        for a, b in _near_neighbours(joint, abs_tol, rel_tol)
    )


def _near_neighbours(joint: list[Any], abs_tol: float, rel_tol: float) -> list[tuple[Any, Any]]:
    """Neighbours ``a < b`` of a sorted list of distinct numbers with ``b - a`` at most
    ``2 * (rel_tol * (|a| + |b|) + abs_tol)`` (at least twice ``math.isclose``'s bound), or
    with a nonzero value below ``1e-300 / rel_tol`` (where ``rel_tol * value`` may lose
    its relative precision)."""
    tiny = 1e-300 / rel_tol if rel_tol else 0.0
    if len(joint) <= _SCALAR_NEIGHBOURS:
        near = []
        a, size_a = joint[0], abs(joint[0])
        for b in joint[1:]:
            size_b = abs(b)
            if b - a <= 2.0 * (rel_tol * (size_a + size_b) + abs_tol) or (
                0 < size_a < tiny or 0 < size_b < tiny
            ):
                near.append((a, b))
            a, size_a = b, size_b
        return near
    import numpy as np

    values = np.array(joint, dtype=np.float64)
    size = np.abs(values)
    bound = size[1:] + size[:-1]
    bound *= rel_tol
    bound += abs_tol
    bound *= 2.0
    close = (values[1:] - values[:-1]) <= bound
    if tiny:
        small = (size > 0) & (size < tiny)
        close |= small[1:] | small[:-1]
    return [(joint[i], joint[i + 1]) for i in np.flatnonzero(close).tolist()]


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
    if rows.policy != "multiset" or _search_steps(k) > max_permutations:
        return None  # the search might stop at its cap (a note)
    # the general path scores the mapping keeping the most values in common: the same
    # assignment on the same overlaps (canonical values are equal exactly when their codes
    # are, and the tolerance changes no comparison here)
    best = best_by_overlap(_overlaps(rows))
    outcome = rows.under(best)
    return None if outcome is None else (Alignment(best, (), ()), outcome, (BEST_NOTE,))


def _overlaps(rows: _Rows) -> list[list[int]]:
    """For each gold column, the size of its value multiset's intersection with each
    predicted column's (`multiset_overlap` of their codes in the general path)."""
    pred = [Counter(column) for column in rows.columns("pred")]
    return [
        [sum((counts & other).values()) for other in pred]
        for counts in map(Counter, rows.columns("gold"))
    ]


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
