"""SDMX term selection (seed 001): per-dimension precision and recall of selected codes.

``term_selection(prediction, reference)`` compares the selected terms with the target's;
both are lists of ``{dataset_id, dimensions: [{dimension_name, values: [{id, name}]}]}``.

Policies the seed leaves open are explicit options:

- ``match_on``: ``"id"`` (default; names are kept for display only) or ``"id_and_name"``
  (the seed: a term matches only if both its ID and its name match).
- ``absent_dimension``: a dimension the target does not mention at all. ``"penalize"``
  (default, the seed): every selected term is a false positive and the dimension counts in
  the macro averages. ``"ignore"``: it is only listed in ``dimensions_not_in_target``.
  A dimension the target lists with ``values: []`` is *empty*, not absent: selecting nothing
  there is perfect, selecting anything is a false positive.
- ``zero_division``: the value of a 0/0 precision or recall. ``"agreement"`` (default): 1.0
  when both sides are empty for the dimension, else 0.0. ``"zero"``, ``"one"``, or
  ``"exclude"`` (None, left out of macro averages).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Generic, Literal, NamedTuple, TypeVar

__all__ = ["DimensionResult", "TermRef", "TermSelectionResult", "compare_terms", "term_selection"]

MatchOn = Literal["id", "id_and_name"]
AbsentPolicy = Literal["penalize", "ignore"]
ZeroDivision = Literal["agreement", "zero", "one", "exclude"]


def _check_selections(
    prediction: Any, reference: Any, match_on: str, absent_dimension: str, zero_division: str
) -> None:
    """Raise unless both sides are lists of datasets (or None) and the policies are known."""
    if type(prediction) is not list or type(reference) is not list:  # lists: the hot path
        for side, value in (("prediction", prediction), ("reference", reference)):
            if value is None or type(value) is list:
                continue
            if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
                kind = type(value).__name__
                raise TypeError(f"{side} must be a list of datasets or None, not {kind}")
    if match_on not in ("id", "id_and_name"):
        raise ValueError(f"match_on must be 'id' or 'id_and_name', not {match_on!r}")
    if absent_dimension not in ("penalize", "ignore"):
        raise ValueError(
            f"absent_dimension must be 'penalize' or 'ignore', not {absent_dimension!r}"
        )
    if zero_division not in ("agreement", "zero", "one", "exclude"):
        raise ValueError(f"unknown zero_division policy {zero_division!r}")


class TermRef(NamedTuple):
    """A term as shown in reports: its ID and (if known) its name. A named tuple, because
    cases hold many of them and tuples are built several times faster than dataclasses."""

    id: str
    name: str | None = None

    def label(self) -> str:
        """`ID: name`, or just the ID."""
        return _term_label(self)


Pair = tuple[str, str | None]  # (id, name): a term as `compare_terms` gives it
T = TypeVar("T", bound=Pair)  # TermRef, or a plain pair


def _term_label(term: Pair) -> str:
    """`ID: name`, or just the ID."""
    return f"{term[0]}: {term[1]}" if term[1] else term[0]


class DimensionResult(NamedTuple, Generic[T]):
    """TP/FP/FN and precision/recall for one dimension of one dataset (a named tuple: one is
    built per dimension per case, and tuples are built several times faster)."""

    dataset_id: str
    dimension_name: str
    true_positives: tuple[T, ...]
    false_positives: tuple[T, ...]
    false_negatives: tuple[T, ...]
    precision: float | None
    recall: float | None
    in_target: bool
    counted: bool

    @property
    def f1(self) -> float | None:
        """Harmonic mean of precision and recall (0 when both are 0)."""
        p, r = self.precision, self.recall
        if p is None or r is None:
            return None
        return 0.0 if p + r == 0 else 2 * p * r / (p + r)

    def details_text(self) -> str:
        """The seed's Excel cell block for this dimension."""
        lines = [f"[recall: {_fmt(self.recall)}, precision: {_fmt(self.precision)}]"]
        for title, terms in (
            ("True Positives", self.true_positives),
            ("False Negatives", self.false_negatives),
            ("False Positives", self.false_positives),
        ):
            lines.append(f"{title} [{len(terms)}]")
            lines.extend(f"  * {_term_label(t)}" for t in terms)
        return "\n".join(lines)


class TermSelectionResult(NamedTuple, Generic[T]):
    """The whole comparison of one case: per dimension, macro and micro averages."""

    per_dimension: dict[str, DimensionResult[T]]
    macro_precision: float | None
    macro_recall: float | None
    micro_precision: float | None
    micro_recall: float | None
    dimensions_not_in_target: tuple[str, ...]
    tp: int
    fp: int
    fn: int
    policy: dict[str, str] | None = None

    @property
    def macro_f1(self) -> float | None:
        """Harmonic mean of macro precision and macro recall."""
        return _f1(self.macro_precision, self.macro_recall)

    @property
    def micro_f1(self) -> float | None:
        """Harmonic mean of micro precision and micro recall."""
        return _f1(self.micro_precision, self.micro_recall)

    def details_text(self) -> str:
        """The seed's "indicator selection details" cell: one block per dimension."""
        multi = len({d.dataset_id for d in self.per_dimension.values()}) > 1
        blocks = []
        for key, dim in self.per_dimension.items():
            title = key if multi else dim.dimension_name
            if not dim.in_target:
                title += " (not in target)"
            blocks.append(f"{title}\n{dim.details_text()}")
        if self.dimensions_not_in_target:
            blocks.append("dimensions not in target: " + ", ".join(self.dimensions_not_in_target))
        return "\n\n".join(blocks)


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _f1(p: float | None, r: float | None) -> float | None:
    """Harmonic mean of a precision and a recall (0 when both are 0; None if one is)."""
    if p is None or r is None:
        return None
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def _ratio(num: int, den: int, both_empty: bool, policy: ZeroDivision) -> float | None:
    if den:
        return num / den
    if policy == "agreement":
        return 1.0 if both_empty else 0.0
    if policy == "exclude":
        return None
    return 1.0 if policy == "one" else 0.0


def _get(obj: Any, key: str) -> Any:
    # plain dicts and models first: an ABC isinstance check costs more than the lookup itself
    if type(obj) is dict:
        return obj.get(key)
    value = getattr(obj, key, _MISSING)
    if value is _MISSING:
        return obj.get(key) if isinstance(obj, Mapping) else None
    return value


_MISSING = object()
# tuple.__new__ skips the named tuples' Python-level __new__: this runs per term per case
_new = tuple.__new__


def _dimensions(
    selection: Iterable[Any] | None, match_on: MatchOn, ignore_case: bool
) -> dict[tuple[str, str], dict[Any, Pair]]:
    """{(dataset, dimension): {match key: term}} from the seed structure (models or dicts);
    the first occurrence of a key wins, so repeated terms count once."""
    plain = match_on == "id" and not ignore_case
    if plain and type(selection) is list:
        fast = _plain_dimensions(selection)
        if fast is not None:
            return fast
    out: dict[tuple[str, str], dict[Any, Pair]] = {}
    for dataset in selection or ():
        ds = str(_get(dataset, "dataset_id"))
        for dim in _get(dataset, "dimensions") or ():
            terms = out.setdefault((ds, str(_get(dim, "dimension_name"))), {})
            for value in _get(dim, "values") or ():
                if type(value) is dict:
                    ident, name = value.get("id"), value.get("name")
                else:
                    ident, name = _get(value, "id"), _get(value, "name")
                ident = ident if type(ident) is str else str(ident)
                if plain:  # the default, and the hot path: key on the ID as written
                    if ident not in terms:
                        terms[ident] = (ident, name)
                    continue
                key: Any = ident.casefold() if ignore_case else ident
                if match_on == "id_and_name":
                    label = name or ""
                    key = (key, label.casefold() if ignore_case else label)
                if key not in terms:
                    terms[key] = (ident, name)
    return out


def _plain_dimensions(selection: list[Any]) -> dict[tuple[str, str], dict[Any, Pair]] | None:
    """`_dimensions` for the common case, written out for speed: plain dicts (as cases and
    predictions hold them), matched on the ID as written; None if the datasets are not dicts."""
    out: dict[tuple[str, str], dict[Any, Pair]] = {}
    for dataset in selection:
        if type(dataset) is not dict:
            return None
        ds = dataset["dataset_id"]
        ds = ds if type(ds) is str else str(ds)
        for dim in dataset.get("dimensions") or ():
            name = dim["dimension_name"]
            key = (ds, name if type(name) is str else str(name))
            terms = out.get(key)
            if terms is None:
                terms = out[key] = {}
            for value in dim.get("values") or ():
                ident = value["id"]
                if type(ident) is not str:
                    ident = str(ident)
                if ident not in terms:
                    terms[ident] = (ident, value.get("name"))
    return out


def term_selection(
    prediction: Sequence[Any] | None,
    reference: Sequence[Any] | None,
    *,
    match_on: MatchOn = "id",
    absent_dimension: AbsentPolicy = "penalize",
    zero_division: ZeroDivision = "agreement",
    ignore_case: bool = False,
) -> TermSelectionResult[TermRef]:
    """Compare a selected SDMX indicator selection (`prediction`) with the target
    (`reference`), seed 001.

    Both sides are lists of ``{dataset_id, dimensions: [{dimension_name, values: [{id,
    name}]}]}`` (dicts or queryeval models). Precision = TP/(TP+FP), recall = TP/(TP+FN) per
    dimension; macro = mean over counted dimensions; micro = pooled over their terms.

    >>> def selection(*ids):
    ...     values = [{"id": i} for i in ids]
    ...     return [{"dataset_id": "WEO", "dimensions": [
    ...         {"dimension_name": "INDICATOR", "values": values}]}]
    >>> r = term_selection(selection("NGDP", "LUR"), selection("NGDP", "PCPI", "BCA"))
    >>> r.macro_precision, round(r.macro_recall, 3)
    (0.5, 0.333)
    >>> r.per_dimension["INDICATOR"].false_negatives
    (TermRef(id='PCPI', name=None), TermRef(id='BCA', name=None))
    """
    result = compare_terms(
        prediction,
        reference,
        match_on=match_on,
        absent_dimension=absent_dimension,
        zero_division=zero_division,
        ignore_case=ignore_case,
    )
    refs = TermRef._make
    return result._replace(
        per_dimension={
            key: d._replace(
                true_positives=tuple(map(refs, d.true_positives)),
                false_positives=tuple(map(refs, d.false_positives)),
                false_negatives=tuple(map(refs, d.false_negatives)),
            )
            for key, d in result.per_dimension.items()
        }
    )  # type: ignore[return-value]  # the same result with its pairs as TermRefs


def compare_terms(
    prediction: Sequence[Any] | None,
    reference: Sequence[Any] | None,
    *,
    match_on: MatchOn = "id",
    absent_dimension: AbsentPolicy = "penalize",
    zero_division: ZeroDivision = "agreement",
    ignore_case: bool = False,
) -> TermSelectionResult[Pair]:
    """`term_selection` with the terms as plain (id, name) tuples: what the scorer stores,
    without building a TermRef per term.

    >>> chosen = [{"dataset_id": "WEO", "dimensions": [
    ...     {"dimension_name": "INDICATOR", "values": [{"id": "NGDP", "name": "GDP"}]}]}]
    >>> compare_terms(chosen, chosen).per_dimension["INDICATOR"].true_positives
    (('NGDP', 'GDP'),)
    """
    _check_selections(prediction, reference, match_on, absent_dimension, zero_division)
    gold = _dimensions(reference, match_on, ignore_case)
    pred = _dimensions(prediction, match_on, ignore_case)
    datasets = {ds for ds, _ in gold}
    datasets.update(ds for ds, _ in pred)
    multi = len(datasets) > 1
    penalize = absent_dimension == "penalize"
    per_dimension: dict[str, DimensionResult] = {}
    not_in_target: list[str] = []
    tp_all = fp_all = fn_all = 0
    precisions: list[float] = []
    recalls: list[float] = []
    keys = list(gold)
    keys.extend(k for k in pred if k not in gold)
    for key in keys:
        ds, name = key
        label = f"{ds}/{name}" if multi else name
        g = gold.get(key)
        in_target = g is not None
        if g is None:
            g = {}
            not_in_target.append(label)
        p = pred.get(key) or {}
        counted = in_target or penalize
        tps = tuple([g[k] for k in g if k in p])
        fns = tuple([g[k] for k in g if k not in p])
        fps = tuple([p[k] for k in p if k not in g])
        n_tp, n_fp, n_fn = len(tps), len(fps), len(fns)
        # _ratio written out for the common case: this loop runs per dimension per case
        both_empty = not g and not p
        if n_tp + n_fp:
            precision: float | None = n_tp / (n_tp + n_fp)
        else:
            precision = _ratio(0, 0, both_empty, zero_division)
        if n_tp + n_fn:
            recall: float | None = n_tp / (n_tp + n_fn)
        else:
            recall = _ratio(0, 0, both_empty, zero_division)
        per_dimension[label] = _new(
            DimensionResult, (ds, name, tps, fps, fns, precision, recall, in_target, counted)
        )
        if counted:
            tp_all += n_tp
            fp_all += n_fp
            fn_all += n_fn
            if precision is not None:
                precisions.append(precision)
            if recall is not None:
                recalls.append(recall)
    if not precisions and not recalls and not any(d.counted for d in per_dimension.values()):
        empty = _ratio(0, 0, True, zero_division)
        macro_p = macro_r = micro_p = micro_r = empty
    else:
        macro_p = sum(precisions) / len(precisions) if precisions else None
        macro_r = sum(recalls) / len(recalls) if recalls else None
        micro_p = _ratio(tp_all, tp_all + fp_all, tp_all + fp_all + fn_all == 0, zero_division)
        micro_r = _ratio(tp_all, tp_all + fn_all, tp_all + fp_all + fn_all == 0, zero_division)
    policy = {
        "match_on": match_on,
        "absent_dimension": absent_dimension,
        "zero_division": zero_division,
    }
    return _new(
        TermSelectionResult,
        (
            per_dimension,
            macro_p,
            macro_r,
            micro_p,
            micro_r,
            tuple(not_in_target),
            tp_all,
            fp_all,
            fn_all,
            policy,
        ),
    )
