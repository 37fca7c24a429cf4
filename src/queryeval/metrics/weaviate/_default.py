"""Default mode of the Weaviate AST score: the seed's structure with its flaw fixed (a slot
present on one side only is a mismatch) and the seed's future work as options."""

from __future__ import annotations

from math import fsum
from typing import Any, NamedTuple

from queryeval.metrics.weaviate._match import (
    assign,
    integer_bound,
    normalize_text,
    resolve_name,
)
from queryeval.metrics.weaviate._model import (
    AGGREGATION_KEYS,
    FILTER_KEYS,
    Aggregation,
    Condition,
    Slot,
    WeaviateQuery,
)
from queryeval.metrics.weaviate._result import (
    ABSENT_SLOTS,
    COMPONENTS,
    NO_SLOTS,
    ComponentResult,
    ItemResult,
    Policy,
    QueryComparison,
    SlotResult,
    absent_component,
    constant,
    summarize,
)


def compare_default(p: WeaviateQuery, g: WeaviateQuery, policy: Policy) -> QueryComparison:
    w_col, w_search, w_filters, w_aggs, w_group = policy.weights
    same_collection = p.collection == g.collection
    collection = (
        constant("collection", "matched", 1.0, w_col)
        if same_collection
        else constant("collection", "wrong", 0.0, w_col)
    )
    if not same_collection and policy.collection_gate:
        # The AST root is wrong: nothing below it is compared, every item is unmatched.
        filters = _skipped("filters", w_filters, p.filters, g.filters, FILTER_KEYS)
        aggs = _skipped("aggregations", w_aggs, p.aggregations, g.aggregations, AGGREGATION_KEYS)
        rest = (
            ComponentResult("search", "skipped", None, w_search),
            filters,
            aggs,
            ComponentResult("groupby", "skipped", None, w_group),
        )
        components = dict(zip(COMPONENTS, (collection, *rest), strict=True))
        return QueryComparison(0.0, components, p, g)
    names = _Names(policy, g) if policy.fuzzy_properties else None
    if policy.numeric_equivalence and policy.schema is not None:
        policy = policy._replace(gold_types=policy.schema.properties(g.collection))
    search = _search_default(p.search_query, g.search_query, w_search, policy)
    filters = _family_component(
        "filters", w_filters, p.filters, g.filters, FILTER_KEYS, policy, names
    )
    aggs = _family_component(
        "aggregations", w_aggs, p.aggregations, g.aggregations, AGGREGATION_KEYS, policy, names
    )
    groupby = _groupby_default(p.groupby, g.groupby, w_group, names)
    components = {
        "collection": collection,
        "search": search,
        "filters": filters,
        "aggregations": aggs,
        "groupby": groupby,
    }
    scored = [c for c in (collection, search, filters, aggs, groupby) if c.score is not None]
    den = fsum([c.weight for c in scored])  # fsum: 0.85 stays 0.85, not 0.8500000000000001
    num = fsum([c.weight * c.score for c in scored])  # type: ignore[operator]
    total = min(1.0, max(0.0, num / den)) if den else 0.0
    return QueryComparison(total, components, p, g)


def _skipped(
    name: str, weight: float, pred: tuple[Slot, ...], gold: tuple[Slot, ...], keys: tuple[str, ...]
) -> ComponentResult:
    slots = tuple(
        SlotResult(key, "skipped", None, False, (), 0.0, len(ps or ()), len(gs or ()))
        for key, ps, gs in zip(keys, pred, gold, strict=True)
    )
    return ComponentResult(name, "skipped", None, weight, slots, ("wrong collection",))


def _search_default(
    pred: str | None, gold: str | None, weight: float, policy: Policy
) -> ComponentResult:
    if pred is None and gold is None:
        return constant("search", "absent", 1.0, weight)
    if pred is not None and pred == gold and pred.strip():
        return constant("search", "matched", 1.0, weight)
    ps, gs = normalize_text(pred), normalize_text(gold)
    if ps is None and gs is None:
        return constant("search", "absent", 1.0, weight)
    if gs is None:
        return constant("search", "spurious", 0.0, weight)
    if ps is None:
        return constant("search", "missing", 0.0, weight)
    if policy.search == "presence" or ps == gs:
        return constant("search", "matched", 1.0, weight)
    if policy.search == "exact":
        return constant("search", "wrong", 0.0, weight)
    if policy.similarity is None:
        return ComponentResult(
            "search", "unscored", None, weight, (), ("semantic search needs a similarity",)
        )
    assert pred is not None and gold is not None
    sim = float(policy.similarity(pred, gold))
    ok = sim >= policy.semantic_threshold
    note = f"similarity {sim:.3f} {'>=' if ok else '<'} {policy.semantic_threshold}"
    return ComponentResult(
        "search", "matched" if ok else "wrong", 1.0 if ok else 0.0, weight, (), (note,)
    )


class _Names:
    """Resolves predicted property names against the schema (or the gold's own names)."""

    __slots__ = ("candidates", "max_edits")

    def __init__(self, policy: Policy, gold: WeaviateQuery) -> None:
        props = policy.schema.properties(gold.collection) if policy.schema is not None else {}
        if props:
            self.candidates = tuple(props)
        else:
            names = {
                item.property for slot in (*gold.filters, *gold.aggregations) for item in slot or ()
            }
            if gold.groupby is not None:
                names.add(gold.groupby)
            self.candidates = tuple(sorted(names))
        self.max_edits = policy.max_edit_distance

    def resolve(self, name: str) -> tuple[str, str | None]:
        return resolve_name(name, self.candidates, self.max_edits)


def _groupby_default(
    pred: str | None, gold: str | None, weight: float, names: _Names | None
) -> ComponentResult:
    if pred is None and gold is None:
        return constant("groupby", "absent", 1.0, weight)
    if gold is None:
        return constant("groupby", "spurious", 0.0, weight)
    if pred is None:
        return constant("groupby", "missing", 0.0, weight)
    notes: tuple[str, ...] = ()
    if names is not None and pred != gold:
        resolved, how = names.resolve(pred)
        if how is not None:
            notes = (f"property {pred!r} read as {resolved!r} ({how})",)
            pred = resolved
    ok = pred == gold
    if not notes:
        return (
            constant("groupby", "matched", 1.0, weight)
            if ok
            else constant("groupby", "wrong", 0.0, weight)
        )
    return ComponentResult(
        "groupby", "matched" if ok else "wrong", 1.0 if ok else 0.0, weight, (), notes
    )


def _family_component(
    name: str,
    weight: float,
    pred: tuple[Slot, ...],
    gold: tuple[Slot, ...],
    keys: tuple[str, ...],
    policy: Policy,
    names: _Names | None,
) -> ComponentResult:
    both = policy.both_absent
    if pred == NO_SLOTS and gold == NO_SLOTS:
        return absent_component(name, weight, keys, both)
    p0, p1, p2 = pred
    g0, g1, g2 = gold
    slots = (
        ABSENT_SLOTS[keys[0], both]
        if p0 is None and g0 is None
        else _slot_default(keys[0], p0, g0, "integer", policy, names),
        ABSENT_SLOTS[keys[1], both]
        if p1 is None and g1 is None
        else _slot_default(keys[1], p1, g1, "text", policy, names),
        ABSENT_SLOTS[keys[2], both]
        if p2 is None and g2 is None
        else _slot_default(keys[2], p2, g2, "boolean", policy, names),
    )
    total = 0.0
    count = 0
    for s in slots:
        if s.status == "unscored":
            notes = tuple(n for s in slots for i in s.items for n in i.notes if "similarity" in n)
            return ComponentResult(name, "unscored", None, weight, slots, notes)
        if s.counted and s.score is not None:
            total += s.score
            count += 1
    return ComponentResult(name, summarize(slots), total / count if count else 1.0, weight, slots)


def _slot_default(
    key: str,
    pred: Slot,
    gold: Slot,
    family: str,
    policy: Policy,
    names: _Names | None,
) -> SlotResult:
    ps = pred or ()
    gs = gold or ()
    if not ps and not gs:
        return ABSENT_SLOTS[key, policy.both_absent]
    n_p, n_g = len(ps), len(gs)
    if ps == gs and names is None and not (policy.semantic_values and family == "text"):
        same = tuple([ItemResult("matched", g, g, 1.0) for g in gs])
        return SlotResult(key, "matched", 1.0, True, same, float(n_g), n_p, n_g)
    if not gs:
        extra = tuple(ItemResult("spurious", None, p, 0.0) for p in ps)
        return SlotResult(key, "spurious", 0.0, True, extra, 0.0, n_p, 0)
    if not ps:
        lost = tuple(ItemResult("missing", g, None, 0.0) for g in gs)
        return SlotResult(key, "missing", 0.0, True, lost, 0.0, 0, n_g)
    evaluate = _condition_pair if key.endswith("_filter") else _aggregation_pair
    if n_p == 1 and n_g == 1:  # the usual case: no assignment to solve
        p, renamed_note = _rename(ps[0], names)
        e = evaluate(p, gs[0], family, policy)
        credit = e.partial if policy.partial_credit else (1.0 if e.exact else 0.0)
        status = "matched" if e.exact else "wrong"
        item = (ItemResult(status, gs[0], ps[0], credit, renamed_note + e.notes),)
        if e.unscored:
            return SlotResult(key, "unscored", None, False, item, 0.0, 1, 1)
        return SlotResult(key, status, credit, True, item, credit, 1, 1)
    renamed = [_rename(p, names) for p in ps]
    table = [[evaluate(p, g, family, policy) for g in gs] for p, _ in renamed]
    if policy.order_independent:
        # Exact matches first, then partial similarity: an exact pair is never traded away.
        big = float(max(n_p, n_g) + 1)
        pairs = assign([[(big if e.exact else 0.0) + e.partial for e in row] for row in table])
    else:
        pairs = [(i, i) for i in range(min(n_p, n_g))]
    items: list[ItemResult] = []
    unscored = False
    tp = 0.0
    for i, j in pairs:
        e = table[i][j]
        unscored = unscored or e.unscored
        credit = e.partial if policy.partial_credit else (1.0 if e.exact else 0.0)
        tp += credit
        items.append(
            ItemResult(
                "matched" if e.exact else "wrong", gs[j], ps[i], credit, renamed[i][1] + e.notes
            )
        )
    used_p = {i for i, _ in pairs}
    used_g = {j for _, j in pairs}
    items += [ItemResult("missing", g, None, 0.0) for j, g in enumerate(gs) if j not in used_g]
    items += [ItemResult("spurious", None, p, 0.0) for i, p in enumerate(ps) if i not in used_p]
    if unscored:
        return SlotResult(key, "unscored", None, False, tuple(items), 0.0, n_p, n_g)
    statuses = {it.status for it in items}
    status = statuses.pop() if len(statuses) == 1 else "wrong"
    return SlotResult(key, status, tp / max(n_p, n_g), True, tuple(items), tp, n_p, n_g)


def _rename(item: Any, names: _Names | None) -> tuple[Any, tuple[str, ...]]:
    if names is None:
        return item, ()
    resolved, how = names.resolve(item.property)
    if how is None:
        return item, ()
    return item._replace(property=resolved), (
        f"property {item.property!r} read as {resolved!r} ({how})",
    )


class _Pair(NamedTuple):
    exact: bool
    partial: float
    unscored: bool = False
    notes: tuple[str, ...] = ()


def _condition_pair(p: Condition, g: Condition, family: str, policy: Policy) -> _Pair:
    same_prop = p.property == g.property
    notes: tuple[str, ...] = ()
    unscored = False
    if (
        policy.numeric_equivalence
        and family == "integer"
        and same_prop
        and _integer_property(g.property, p.value, g.value, policy)
        and (p.operator, p.value) != (g.operator, g.value)
        and integer_bound(p.operator, p.value) == integer_bound(g.operator, g.value)
    ):
        same_op = same_value = True
        notes = (f"{p.operator} {p.value!r} is equivalent to {g.operator} {g.value!r} on integers",)
    else:
        same_op = p.operator == g.operator
        same_value, unscored, note = _value_equal(p.value, g.value, family, policy)
        if note:
            notes = (note,)
    parts = (same_prop + same_op + same_value) / 3
    return _Pair(same_prop and same_op and same_value, parts, unscored, notes)


def _integer_property(prop: str, pv: Any, gv: Any, policy: Policy) -> bool:
    """Whether `prop` holds integers: its type in the gold collection's schema, else (no
    schema, or the schema does not list it) whether both values are integers."""
    dtype = policy.gold_types.get(prop) if policy.gold_types else None
    if dtype is not None:
        return dtype.removesuffix("[]") == "int"
    return all(isinstance(v, int) and not isinstance(v, bool) for v in (pv, gv))


def _value_equal(pv: Any, gv: Any, family: str, policy: Policy) -> tuple[bool, bool, str]:
    """(equal, unscored, note)."""
    if family != "text":
        if family == "integer":
            return pv == gv, False, ""
        return (pv is gv or pv == gv) and type(pv) is type(gv), False, ""
    if normalize_text(pv) == normalize_text(gv):
        return True, False, ""
    if not policy.semantic_values:
        return False, False, ""
    if policy.similarity is None:
        return False, True, "text value needs a similarity (unscored)"
    sim = float(policy.similarity(pv, gv))
    ok = sim >= policy.semantic_threshold
    return (
        ok,
        False,
        f"value similarity {sim:.3f} {'>=' if ok else '<'} {policy.semantic_threshold}",
    )


def _aggregation_pair(p: Aggregation, g: Aggregation, family: str, policy: Policy) -> _Pair:
    same_prop = p.property == g.property
    pm, gm = set(p.metrics), set(g.metrics)
    union = pm | gm
    jaccard = len(pm & gm) / len(union) if union else 1.0
    parts = [1.0 if same_prop else 0.0, jaccard]
    exact = same_prop and pm == gm
    if g.top_occurrences_limit is not None:
        same_limit = p.top_occurrences_limit == g.top_occurrences_limit
        parts.append(1.0 if same_limit else 0.0)
        exact = exact and same_limit
    return _Pair(exact, sum(parts) / len(parts))
