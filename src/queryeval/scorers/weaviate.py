"""Scorer `weaviate_ast` (seed 000): structural score of a generated Weaviate query.

Gold: `case.target.weaviate_query` (a query object, or a list for cross-collection
questions; alternatives are any-of). Prediction: `output.final.weaviate_query` (object, list
or tool calls) or `output.final.query` (JSON text or weaviate-client Python code).
Schemas: the `schemas` option names a YAML/JSON file (relative to the suite) of named
schemas; `case.metadata["schema"]` picks one (or holds one inline), else option `schema`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from queryeval.cases import Case, Output, Score
from queryeval.errors import InputError
from queryeval.metrics import WeaviateAstResult, WeaviateQuery, weaviate_ast
from queryeval.metrics.weaviate import (
    WeaviateQueryError,
    WeaviateSchema,
    check_weaviate_ast_options,
    legacy_queries,
    parse_queries,
    parse_schema,
)
from queryeval.scorers._base import Scorer, ScoringContext

COMPONENT_NAMES = ("collection", "search", "filters", "aggregations", "groupby")


class WeaviateAstOptions(BaseModel):
    """Options of `weaviate_ast`; see `queryeval.metrics.weaviate_ast` for each policy."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["default", "legacy"] = "default"
    weights: dict[str, float] | None = None
    search: Literal["exact", "presence", "semantic"] | None = Field(
        default=None, description="default mode: exact; legacy: presence (the original's final)"
    )
    order_independent: bool = True
    partial_credit: bool = False
    numeric_equivalence: bool = False
    fuzzy_properties: bool = False
    max_edit_distance: int = Field(default=2, ge=0, le=10)
    semantic_values: bool = False
    semantic_threshold: float = Field(default=0.85, ge=0.0, le=1.0)
    both_absent: Literal["match", "skip"] | None = None
    collection_gate: bool = True
    schemas: str | None = Field(default=None, description="YAML/JSON file of named schemas")
    schema_name: str | None = Field(
        default=None, alias="schema", description="schema for cases whose metadata names none"
    )
    schema_blocks: int | None = Field(
        default=None,
        ge=1,
        description="add the Gorilla experiment's own figures (`as_published`): its average "
        "and per-schema scores, schemas switched every N cases in suite order (64 there)",
    )
    invalid_prediction: Literal["zero"] = Field(
        default="zero",
        description="kept for older suites: a prediction that is not a Weaviate query is "
        "always a failure, 0 in every mean (as the method's authors count it)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> WeaviateAstOptions:
        check_weaviate_ast_options(**self.metric_options())
        return self

    def metric_options(self) -> dict[str, Any]:
        """The keyword arguments of `weaviate_ast` these options stand for."""
        return {
            "mode": self.mode,
            "weights": self.weights,
            "search": self.search,
            "order_independent": self.order_independent,
            "partial_credit": self.partial_credit,
            "numeric_equivalence": self.numeric_equivalence,
            "fuzzy_properties": self.fuzzy_properties,
            "max_edit_distance": self.max_edit_distance,
            "semantic_values": self.semantic_values,
            "semantic_threshold": self.semantic_threshold,
            "both_absent": self.both_absent,
            "collection_gate": self.collection_gate,
        }

    @property
    def needs_similarity(self) -> bool:
        """Whether some comparison may call for an embedding similarity."""
        return self.mode == "default" and (self.search == "semantic" or self.semantic_values)


def load_schemas(path: Path) -> dict[str, WeaviateSchema]:
    """Named schemas from a YAML/JSON file: `{schemas: {name: schema}}`, or one schema
    (named after the file) in any form `parse_schema` reads."""
    if path.suffix.lower() == ".json":
        import orjson

        try:
            data = orjson.loads(path.read_bytes())
        except OSError as exc:
            raise InputError(f"cannot read schemas ({exc.strerror})", path=path) from exc
        except orjson.JSONDecodeError as exc:
            raise InputError(f"invalid JSON ({exc})", path=path) from exc
    else:
        from queryeval._yaml import load_yaml

        data = load_yaml(path).data
    if isinstance(data, dict) and isinstance(data.get("schemas"), dict):
        named = data["schemas"]
    else:
        named = {path.stem: data}
    out: dict[str, WeaviateSchema] = {}
    for name, schema in named.items():
        try:
            out[str(name)] = parse_schema(schema)
        except WeaviateQueryError as exc:
            raise InputError(exc.message, path=path, where=f"schemas.{name}: {exc.where}") from None
    return out


class WeaviateAstScorer(Scorer):
    """Weighted AST comparison (collection 0.4, search / filters / aggregations / group-by
    0.15 each). A case passes when its score reaches the threshold (default 1.0: exact)."""

    Options = WeaviateAstOptions
    default_threshold = 1.0
    reads = "weaviate"
    options: WeaviateAstOptions

    def sub_metrics(self) -> frozenset[str]:
        """Each component's score, and (default mode) precision / recall / F1 of filters and
        aggregations."""
        if self.options.mode == "legacy":
            return frozenset(COMPONENT_NAMES)
        families = [f"{f}_{m}" for f in ("filters", "aggregations") for m in ("precision",
                    "recall", "f1")]  # fmt: skip
        return frozenset([*COMPONENT_NAMES, *families])

    def not_applicable(self, case: Case) -> str | None:
        """A case without a `weaviate_query` target."""
        if any(t.weaviate_query is not None for t in case.targets):
            return None
        return "the case has no weaviate_query target"

    # --- resources ------------------------------------------------------------------------

    def _schemas(self, ctx: ScoringContext) -> dict[str, WeaviateSchema]:
        if not self.options.schemas:
            return {}
        base = ctx.suite.resolve(self.options.schemas) if ctx.suite else Path(self.options.schemas)
        return ctx.resource(f"weaviate-schemas:{base}", lambda: load_schemas(base))

    def _schema_for(
        self, case: Case, ctx: ScoringContext
    ) -> tuple[str | None, WeaviateSchema | None]:
        ref = case.metadata.get("schema", self.options.schema_name)
        if ref is None:
            schemas = self._schemas(ctx)
            if len(schemas) == 1:
                return next(iter(schemas.items()))
            return None, None
        if isinstance(ref, dict | list):
            return "inline", parse_schema(ref)
        schemas = self._schemas(ctx)
        name = str(ref)
        if name not in schemas:
            known = ", ".join(sorted(schemas)) or "none loaded; set the 'schemas' option"
            raise InputError(
                f"unknown schema {name!r} (known: {known})",
                where=f"case {case.id}: metadata.schema",
            )
        return name, schemas[name]

    def _similarity(self, ctx: ScoringContext) -> tuple[Callable[[str, str], float] | None, str]:
        """The embedder's similarity, or None and why (then semantic parts are unscored)."""

        def build() -> tuple[Callable[[str, str], float] | None, str]:
            try:
                embeddings = importlib.import_module("queryeval.embeddings")
            except ImportError as exc:
                return None, f"no embeddings layer ({exc})"
            factory = getattr(embeddings, "embedder_from_context", None)
            if factory is None:
                return None, "the embeddings layer has no embedder_from_context"
            try:
                embedder = factory(ctx)
            except Exception as exc:  # an unavailable model is "unscored", never a crash
                return None, f"embedder unavailable ({type(exc).__name__}: {exc})"
            if embedder is None:
                return None, "no embedder configured"
            rejected = getattr(embeddings, "EmbeddingsRejected", None)
            return (_refusal_aware(embedder, rejected) if rejected else embedder.similarity), ""

        return ctx.resource("weaviate_ast:similarity", build)

    def _read(
        self, raw: Any, schema: WeaviateSchema | None, prediction: bool
    ) -> tuple[WeaviateQuery, ...]:
        if self.options.mode == "legacy":
            return legacy_queries(raw, prediction=prediction, schema=schema)
        return parse_queries(raw, schema=schema)

    def _golds(self, case: Case, schema: WeaviateSchema | None) -> list[tuple[WeaviateQuery, ...]]:
        golds: list[tuple[WeaviateQuery, ...]] = []
        for i, target in enumerate(case.targets):
            if target.weaviate_query is None:
                continue
            where = "target.weaviate_query" if i == 0 else f"alternatives[{i - 1}].weaviate_query"
            try:
                golds.append(self._read(target.weaviate_query, schema, prediction=False))
            except WeaviateQueryError as exc:
                raise InputError(f"gold query: {exc}", where=f"case {case.id}: {where}") from None
        return golds

    def config_problems(self, suite: Any) -> list[tuple[tuple[str | int, ...], str]]:
        """The `schemas` file exists."""
        return [*super().config_problems(suite), *self.missing_files(suite, schemas="schemas file")]

    def check_inputs(self, cases: Sequence[Case], ctx: ScoringContext) -> None:
        """Every case's schema is known and every gold query reads (InputError naming the
        case)."""
        for case in cases:
            _, schema = self._schema_for(case, ctx)
            self._golds(case, schema)

    def prepare(self, cases: Sequence[Case], ctx: ScoringContext) -> None:
        """Load the schemas and check every gold query once, so bad input stops the run
        before any scoring (InputError naming the case)."""
        self.check_inputs(cases, ctx)

    # --- scoring --------------------------------------------------------------------------

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        try:
            schema_name, schema = self._schema_for(case, ctx)
            golds = self._golds(case, schema)
        except InputError as exc:
            return Score.failed(str(exc))
        if not golds:
            return Score.unscored("the case has no weaviate_query target")
        final = output.final
        assert final is not None  # `score_case` fails an output without one
        raw = final.weaviate_query if final.weaviate_query is not None else final.query
        try:
            predicted = self._read(raw, schema, prediction=True)
        except WeaviateQueryError as exc:
            return self._invalid(exc)
        o = self.options
        kwargs = o.metric_options()
        why_unscored = ""
        if o.needs_similarity:
            kwargs["similarity"], why_unscored = self._similarity(ctx)
        results = [weaviate_ast(predicted, gold, schema=schema, **kwargs) for gold in golds]
        best = max(range(len(results)), key=lambda i: results[i].score)
        result = results[best]
        details = self._details(result, predicted, golds[best], schema_name)
        if len(golds) > 1:
            details["matched_gold"] = best
            details["gold_scores"] = [r.score for r in results]
        if why_unscored and any(c.status == "unscored" for c in result.components.values()):
            details["semantic_unavailable"] = why_unscored
        return Score(value=result.score, details=details, explanation=details["text"])

    def _invalid(self, exc: WeaviateQueryError) -> Score:
        """Not a Weaviate query: the system's failure (0 everywhere), never left out."""
        details = {"parse_error": str(exc), "error_kind": type(exc).__name__}
        return Score.failure("invalid_output", f"invalid prediction: {exc}", **details)

    def _details(
        self,
        result: WeaviateAstResult,
        predicted: tuple[WeaviateQuery, ...],
        gold: tuple[WeaviateQuery, ...],
        schema_name: str | None,
    ) -> dict[str, Any]:
        components = result.components
        metrics: dict[str, float | None] = {
            name: components[name].score for name in COMPONENT_NAMES
        }
        families = result.families
        for name in ("filters", "aggregations"):
            if name in families:
                counts = families[name]
                metrics[f"{name}_precision"] = counts.precision
                metrics[f"{name}_recall"] = counts.recall
                metrics[f"{name}_f1"] = counts.f1
        details: dict[str, Any] = {
            "metrics": metrics,
            "mode": result.mode,
            "exact": result.exact,
            "components": {name: _component(c) for name, c in components.items()},
            "families": {
                name: {
                    "tp": c.tp,
                    "n_predicted": c.n_predicted,
                    "n_gold": c.n_gold,
                    "precision": c.precision,
                    "recall": c.recall,
                    "f1": c.f1,
                }
                for name, c in families.items()
            },
            "predicted": [q.to_dict() for q in predicted],
            "gold": [q.to_dict() for q in gold],
            "text": _text(result),
        }
        if len(result.matches) > 1:
            details["matches"] = [
                {"predicted": m.predicted_index, "gold": m.gold_index, "score": m.score}
                for m in result.matches
            ]
            details["pairs"] = [
                {name: _component(c) for name, c in m.comparison.components.items()}
                for m in result.matches
                if m.comparison is not None
            ]
        ignored = sorted({k for q in predicted for k in q.ignored_keys})
        if ignored:
            details["ignored_keys"] = ignored
        if schema_name is not None:
            details["schema"] = schema_name
        return details

    # --- dataset level --------------------------------------------------------------------

    def aggregate(self, cases: Sequence[Case], scores: Sequence[Score]) -> dict[str, Any]:
        """Gorilla's per-component table (mean score of each component), pooled per-family
        precision / recall / F1, exact-match rate, and mean score per schema and per tag."""
        from queryeval.metrics.aggregate import mean_or_none

        ok = [s for s in scores if s.status == "ok" and "metrics" in s.details]
        per_component = {
            name: {
                "mean": mean_or_none(s.details["metrics"].get(name) for s in ok),
                "cases": sum(s.details["metrics"].get(name) is not None for s in ok),
            }
            for name in COMPONENT_NAMES
        }
        pooled: dict[str, list[float]] = {}
        for s in ok:
            for name, c in s.details.get("families", {}).items():
                acc = pooled.setdefault(name, [0.0, 0.0, 0.0])
                acc[0] += c["tp"]
                acc[1] += c["n_predicted"]
                acc[2] += c["n_gold"]
        per_family = {
            name: {
                "tp": tp,
                "n_predicted": int(n_p),
                "n_gold": int(n_g),
                "precision": tp / n_p if n_p else None,
                "recall": tp / n_g if n_g else None,
                "f1": 2 * tp / (n_p + n_g) if n_p + n_g else None,
            }
            for name, (tp, n_p, n_g) in pooled.items()
        }
        by_schema: dict[str, list[float]] = {}
        by_tag: dict[str, list[float]] = {}
        for case, s in zip(cases, scores, strict=False):
            if s.status != "ok" or s.value is None:
                continue
            schema = s.details.get("schema") or case.metadata.get("schema")
            if isinstance(schema, str):
                by_schema.setdefault(schema, []).append(s.value)
            for tag in case.tags:
                by_tag.setdefault(tag, []).append(s.value)
        invalid = sum(1 for s in scores if "parse_error" in s.details)
        out: dict[str, Any] = {
            "per_component": per_component,
            "per_family": per_family,
            # every scored case: a failed or refused prediction (0) is not an exact match
            "exact_match_rate": mean_or_none(
                1.0 if s.details.get("exact") else 0.0 for s in scores if s.status == "ok"
            ),
            "invalid_predictions": invalid,
            "per_schema": {k: _group(v) for k, v in sorted(by_schema.items())},
            "per_tag": {k: _group(v) for k, v in sorted(by_tag.items())},
        }
        if self.options.schema_blocks:
            out["as_published"] = as_published(scores, self.options.schema_blocks)
        return out

    @classmethod
    def report_tables(cls, aggregate: dict[str, Any]) -> list[tuple[str, list[list[Any]]]]:
        """Gorilla's per-component and per-schema tables (with the experiment's own figures
        when `schema_blocks` is set), for the console."""
        tables: list[tuple[str, list[list[Any]]]] = []
        components = aggregate.get("per_component") or {}
        if components:
            rows = [[name, c.get("mean"), c.get("cases")] for name, c in components.items()]
            tables.append(("per component", [["component", "mean", "cases"], *rows]))
        schemas = aggregate.get("per_schema") or {}
        if schemas:
            rows = [[name, g["mean"], g["cases"]] for name, g in schemas.items()]
            tables.append(("per schema", [["schema", "mean", "cases"], *rows]))
        published = aggregate.get("as_published")
        if published:
            rows = [["average", published["average_ast_score"], published["cases"]]]
            rows += [[f"schema {k}", v, None] for k, v in published["per_schema_scores"].items()]
            tables.append(("as weaviate-gorilla reports it", [["figure", "value", "cases"], *rows]))
        return tables


def as_published(scores: Sequence[Score], block: int) -> dict[str, Any]:
    """weaviate-gorilla's experiment figures, computed as it did, over the cases in suite order
    (a case without a value counts 0, as the experiment's failed predictions did):
    `average_ast_score` = sum / n; `per_schema_scores[k]` = the sum of the last `block`
    results at the end of block k (cases k*block ... k*block+block-1), divided by `block`.
    The last block of the published data is short (59 of 64), so its figure takes in the
    previous block's last cases, as the experiment's `detailed_results[-64:]` did.

    >>> from queryeval.cases import Score
    >>> as_published([Score(value=v) for v in (1.0, 0.5, 0.0)], 2)["per_schema_scores"]
    {'0': 0.75, '1': 0.25}
    """
    values = [s.value if s.status == "ok" and s.value is not None else 0.0 for s in scores]
    n = len(values)
    per_schema = {}
    for k in range(0, (n + block - 1) // block):
        end = min((k + 1) * block, n)
        per_schema[str(k)] = sum(values[max(0, end - block) : end]) / block
    return {
        "cases": n,
        "average_ast_score": sum(values) / n if n else None,
        "per_schema_scores": per_schema,
    }


def _group(values: list[float]) -> dict[str, Any]:
    return {"cases": len(values), "mean": sum(values) / len(values)}


def _component(c: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"status": c.status, "score": c.score, "weight": c.weight}
    if c.notes:
        out["notes"] = list(c.notes)
    if c.slots:
        out["slots"] = {
            s.slot: {
                "status": s.status,
                "score": s.score,
                "counted": s.counted,
                "items": [
                    {
                        "status": i.status,
                        "gold": i.gold.render() if i.gold is not None else None,
                        "predicted": i.predicted.render() if i.predicted is not None else None,
                        "credit": i.credit,
                        **({"notes": list(i.notes)} if i.notes else {}),
                    }
                    for i in s.items
                ],
            }
            for s in c.slots
            if s.status != "absent"
        }
    return out


def _text(result: WeaviateAstResult) -> str:
    """One line per component: `filters 0.50 wrong (integer_property_filter: ...)`."""
    lines = [f"AST score {result.score:.3f} ({result.mode})"]
    for name, c in result.components.items():
        score = "n/a" if c.score is None else f"{c.score:.2f}"
        line = f"{name}: {score} {c.status}"
        bad = [
            f"{s.slot} {s.status}" + ("" if s.counted else " (not counted)")
            for s in c.slots
            if s.status not in ("absent", "matched")
        ]
        if bad:
            line += f" [{'; '.join(bad)}]"
        if c.notes:
            line += f" ({'; '.join(c.notes)})"
        lines.append(line)
    return "\n".join(lines)


def _refusal_aware(embedder: Any, rejected: type[Exception]) -> Callable[[str, str], float]:
    """`embedder.similarity(predicted, gold)`, where a predicted text the embeddings
    endpoint refuses (a text over its context), while it embeds the gold, is as far from
    the gold as can be (-1.0: the component is wrong, the system's text being at fault);
    any other trouble raises as before."""

    def similarity(predicted: str, gold: str) -> float:
        try:
            return float(embedder.similarity(predicted, gold))
        except rejected:
            # the gold sent to the backend itself (not the cache): raises where it is
            # refused too, or the endpoint is down: then not the system's fault
            embedder.backend.embed([gold])
            return -1.0

    return similarity
