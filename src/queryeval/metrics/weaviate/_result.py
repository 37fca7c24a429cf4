"""Result types of the Weaviate AST score, the checked options, and helpers that build
slot results shared by the default and the legacy comparison."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from queryeval.metrics.weaviate._model import (
    AGGREGATION_KEYS,
    FILTER_KEYS,
    Aggregation,
    Condition,
    WeaviateQuery,
    WeaviateSchema,
)

Similarity = Callable[[str, str], float]

COMPONENTS: tuple[str, ...] = ("collection", "search", "filters", "aggregations", "groupby")
DEFAULT_WEIGHTS: dict[str, float] = {
    "collection": 0.4,
    "search": 0.15,
    "filters": 0.15,
    "aggregations": 0.15,
    "groupby": 0.15,
}
SLOT_NAMES: tuple[str, ...] = (*FILTER_KEYS, *AGGREGATION_KEYS)


# --- results ---------------------------------------------------------------------------


class ItemResult(NamedTuple):
    """One filter / aggregation: matched, wrong (paired but not equal), missing or spurious."""

    status: str
    gold: Condition | Aggregation | None
    predicted: Condition | Aggregation | None
    credit: float
    notes: tuple[str, ...] = ()


class SlotResult(NamedTuple):
    """One typed slot (e.g. `integer_property_filter`).

    `status`: matched | absent (on both sides) | missing | spurious | wrong | unscored.
    `score` is None when the slot is not counted (legacy one-sided slot, unscored).
    `tp` is the matched credit; `n_predicted` / `n_gold` the item counts (for P/R/F1).
    """

    slot: str
    status: str
    score: float | None
    counted: bool
    items: tuple[ItemResult, ...] = ()
    tp: float = 0.0
    n_predicted: int = 0
    n_gold: int = 0


class ComponentResult(NamedTuple):
    """One weighted component: its status, score (None = unscored / skipped) and slots."""

    name: str
    status: str
    score: float | None
    weight: float
    slots: tuple[SlotResult, ...] = ()
    notes: tuple[str, ...] = ()


class FamilyCounts(NamedTuple):
    """Item counts of one typed family, and precision / recall / F1 over them."""

    tp: float
    n_predicted: int
    n_gold: int

    @property
    def precision(self) -> float | None:
        """tp / #predicted items (None when nothing was predicted)."""
        return self.tp / self.n_predicted if self.n_predicted else None

    @property
    def recall(self) -> float | None:
        """tp / #gold items (None when the gold has none)."""
        return self.tp / self.n_gold if self.n_gold else None

    @property
    def f1(self) -> float | None:
        """2 tp / (#predicted + #gold); None when both are empty."""
        total = self.n_predicted + self.n_gold
        return 2 * self.tp / total if total else None


class QueryComparison(NamedTuple):
    """The comparison of one predicted query with one gold query."""

    score: float
    components: dict[str, ComponentResult]
    predicted: WeaviateQuery
    gold: WeaviateQuery


class QueryMatch(NamedTuple):
    """A pair of the cross-collection assignment; an unmatched query has no comparison and
    None for the other side's index."""

    predicted_index: int | None
    gold_index: int | None
    comparison: QueryComparison | None
    query: WeaviateQuery | None = None  # the unmatched query itself

    @property
    def score(self) -> float:
        """The pair's score; 0 for an unmatched query."""
        return self.comparison.score if self.comparison is not None else 0.0


class WeaviateAstResult(NamedTuple):
    """The score of a prediction (one query or several) against the gold query/queries.
    Immutable; `components` and `families` break the score down."""

    score: float
    mode: str
    matches: tuple[QueryMatch, ...]
    n_predicted: int
    n_gold: int
    weight_values: tuple[float, ...] = tuple(DEFAULT_WEIGHTS.values())

    @property
    def weights(self) -> dict[str, float]:
        """The component weights used."""
        return dict(zip(COMPONENTS, self.weight_values, strict=True))

    @property
    def exact(self) -> bool:
        """Every component right (score 1)."""
        return self.score >= 1.0 - 1e-9

    @property
    def components(self) -> dict[str, ComponentResult]:
        """The component breakdown: the single comparison's, or, with several queries, each
        component's score averaged over the larger set (unmatched queries count 0)."""
        paired = [m.comparison for m in self.matches if m.comparison is not None]
        if len(self.matches) == 1 and paired:
            return paired[0].components
        size = max(self.n_predicted, self.n_gold)
        out: dict[str, ComponentResult] = {}
        for name in COMPONENTS:
            values = [c.components[name].score for c in paired]
            scored = [v for v in values if v is not None]
            weight = self.weight_values[COMPONENTS.index(name)]
            unmatched = size - len(paired)
            n = len(scored) + unmatched
            score = sum(scored) / n if n else None
            status = "matched" if score is not None and score >= 1 - 1e-9 else "wrong"
            out[name] = ComponentResult(
                name, status if score is not None else "unscored", score, weight
            )
        return out

    @property
    def component_scores(self) -> dict[str, float | None]:
        """{component: score} (None when unscored)."""
        return {name: c.score for name, c in self.components.items()}

    @property
    def families(self) -> dict[str, FamilyCounts]:
        """Per typed slot (`integer_property_filter` ...) and pooled (`filters`,
        `aggregations`) item counts with precision / recall / F1; default mode only."""
        if self.mode != "default":
            return {}
        counts = {name: [0.0, 0, 0] for name in SLOT_NAMES}
        for m in self.matches:
            if m.comparison is not None:
                for comp in ("filters", "aggregations"):
                    for slot in m.comparison.components[comp].slots:
                        acc = counts[slot.slot]
                        acc[0] += slot.tp
                        acc[1] += slot.n_predicted
                        acc[2] += slot.n_gold
        for m in self.matches:  # unmatched queries: all their items are FP or FN
            query = m.query
            if m.comparison is None and query is not None:
                side = 1 if m.predicted_index is not None else 2
                for name, items in zip(
                    SLOT_NAMES, (*query.filters, *query.aggregations), strict=True
                ):
                    counts[name][side] += len(items or ())
        out = {name: FamilyCounts(c[0], int(c[1]), int(c[2])) for name, c in counts.items()}
        for comp, keys in (("filters", FILTER_KEYS), ("aggregations", AGGREGATION_KEYS)):
            out[comp] = FamilyCounts(
                sum(out[k].tp for k in keys),
                sum(out[k].n_predicted for k in keys),
                sum(out[k].n_gold for k in keys),
            )
        return out


class Policy(NamedTuple):
    """The checked options of one call (see `weaviate_ast`)."""

    mode: str
    weights: tuple[float, float, float, float, float]
    search: str
    order_independent: bool
    partial_credit: bool
    numeric_equivalence: bool
    fuzzy_properties: bool
    max_edit_distance: int
    similarity: Similarity | None
    semantic_threshold: float
    semantic_values: bool
    both_absent: str
    collection_gate: bool
    schema: WeaviateSchema | None
    gold_types: Mapping[str, str] | None = None  # data types of the gold collection


# --- helpers shared by both modes ---


_FINE = frozenset({"matched", "absent"})


def summarize(slots: Sequence[SlotResult]) -> str:
    """A component's status from its slots: matched / absent when all are, else the one kind
    of problem (missing, spurious ...) or `wrong` when they differ."""
    statuses = {s.status for s in slots}
    if statuses <= _FINE:
        return "matched" if "matched" in statuses else "absent"
    bad = statuses - _FINE
    return bad.pop() if len(bad) == 1 else "wrong"


ABSENT_SLOTS = {
    (key, policy): SlotResult(key, "absent", 1.0 if policy == "match" else None, policy == "match")
    for key in SLOT_NAMES
    for policy in ("match", "skip")
}
NO_SLOTS = (None, None, None)


@lru_cache(maxsize=64)
def absent_component(
    name: str, weight: float, keys: tuple[str, ...], both_absent: str
) -> ComponentResult:
    """A filters / aggregations component with nothing on either side (built once)."""
    slots = tuple(ABSENT_SLOTS[key, both_absent] for key in keys)
    return ComponentResult(name, "absent", 1.0, weight, slots)


@lru_cache(maxsize=256)
def constant(name: str, status: str, score: float | None, weight: float) -> ComponentResult:
    """A component without slots or notes (collection, search, group-by), built once."""
    return ComponentResult(name, status, score, weight)


def one_sided(pred: Any, gold: Any) -> str:
    if not gold and pred:
        return "spurious"
    if not pred and gold:
        return "missing"
    return "wrong"
