"""Read weaviate-client v4 Python code into Gorilla query dicts, with `ast` only.

The code is untrusted model output, so it is parsed, never executed: literals are read with
`ast.literal_eval`, and simple assignments (`coll = client.collections.get("X")`,
`f = Filter.by_property(...)...`) are followed by name. No library reads this API's call
text without running it, hence this small walker.
"""

from __future__ import annotations

import ast
from typing import Any

from queryeval.metrics.weaviate._model import (
    METRICS,
    UnknownMetricError,
    UnknownOperatorError,
    WeaviateQueryError,
    WeaviateSchema,
)
from queryeval.metrics.weaviate._parse import family_of

_FILTER_METHODS = {
    "equal": "=",
    "not_equal": "!=",
    "less_than": "<",
    "less_or_equal": "<=",
    "greater_than": ">",
    "greater_or_equal": ">=",
    "like": "LIKE",
}
_TEXT_SEARCHES = frozenset({"near_text", "bm25", "hybrid"})
_QUERY_METHODS = _TEXT_SEARCHES | {"fetch_objects", "near_vector", "near_object", "near_image"}
_AGGREGATE_METHODS = frozenset({"over_all", "near_text", "hybrid", "near_vector", "near_object"})
_METRIC_KINDS = {
    "integer": "integer",
    "int_": "integer",
    "number": "integer",
    "text": "text",
    "boolean": "boolean",
    "bool_": "boolean",
}
_METRIC_ARGS = {
    "integer": {
        "count": "COUNT",
        "maximum": "MAX",
        "minimum": "MIN",
        "mean": "MEAN",
        "median": "MEDIAN",
        "mode": "MODE",
        "sum_": "SUM",
        "sum": "SUM",
    },
    "text": {
        "count": "COUNT",
        "top_occurrences_count": "TOP_OCCURRENCES",
        "top_occurrences_value": "TOP_OCCURRENCES",
    },
    "boolean": {
        "count": "COUNT",
        "percentage_false": "PERCENTAGE_FALSE",
        "percentage_true": "PERCENTAGE_TRUE",
        "total_false": "TOTAL_FALSE",
        "total_true": "TOTAL_TRUE",
    },
}
_MAX_ALIAS_DEPTH = 20


def python_queries(text: str, schema: WeaviateSchema | None = None) -> list[dict[str, Any]]:
    """One Gorilla dict per `collection.query.*` / `collection.aggregate.*` call, in order."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise WeaviateQueryError(
            f"neither JSON nor Python code ({exc.msg}, line {exc.lineno})"
        ) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise WeaviateQueryError(f"neither JSON nor Python code ({exc})") from None
    reader = _Reader(schema)
    try:
        reader.visit(tree)
    except RecursionError:
        raise WeaviateQueryError("Python code nested too deeply to read") from None
    if not reader.queries:
        raise WeaviateQueryError(
            "not a Weaviate query: no collection.query.* or collection.aggregate.* call found"
        )
    return reader.queries


def _code(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 80 else text[:77] + "..."


class _Reader(ast.NodeVisitor):
    """Walks the module in source order, binding simple names and collecting query calls."""

    def __init__(self, schema: WeaviateSchema | None) -> None:
        self.schema = schema
        self.names: dict[str, ast.expr] = {}
        self.queries: list[dict[str, Any]] = []

    # --- walking ------------------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.names[node.targets[0].id] = node.value

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Attribute)
            and func.value.attr in ("query", "aggregate", "generate")
        ):
            kind = "aggregate" if func.value.attr == "aggregate" else "query"
            methods = _AGGREGATE_METHODS if kind == "aggregate" else _QUERY_METHODS
            collection = self._collection(func.value.value)
            if collection is None and func.attr in methods:
                raise WeaviateQueryError(
                    f"cannot tell the collection of {_code(func)}(...); expected "
                    'client.collections.get("Name") or a name bound to it',
                    _line(node),
                )
            if collection is not None:
                if func.attr not in methods:
                    raise WeaviateQueryError(
                        f"unknown {kind} method {func.attr!r}; expected one of "
                        f"{', '.join(sorted(methods))}",
                        f"line {node.lineno}",
                    )
                self.queries.append(self._query(node, collection, func.attr))
                return
        self.generic_visit(node)

    # --- resolving ----------------------------------------------------------------------

    def _resolve(self, node: ast.expr) -> ast.expr:
        for _ in range(_MAX_ALIAS_DEPTH):
            if isinstance(node, ast.Name) and node.id in self.names:
                node = self.names[node.id]
            else:
                break
        return node

    def _collection(self, node: ast.expr) -> str | None:
        node = self._resolve(node)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "use")
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "collections"
        ):
            arg = node.args[0] if node.args else _kwarg(node, "name")
            if arg is None:
                raise WeaviateQueryError("collections.get() without a name", f"line {node.lineno}")
            name = self._literal(arg)
            if not isinstance(name, str):
                raise WeaviateQueryError(
                    f"collection name must be a string, got {name!r}", f"line {node.lineno}"
                )
            return name
        return None

    def _literal(self, node: ast.expr) -> Any:
        node = self._resolve(node)
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise WeaviateQueryError(
                f"cannot read {_code(node)!r} without running the code", _line(node)
            ) from None

    # --- one call -------------------------------------------------------------------------

    def _query(self, call: ast.Call, collection: str, method: str) -> dict[str, Any]:
        out: dict[str, Any] = {"target_collection": collection, "search_query": None}
        if method in _TEXT_SEARCHES:
            arg = call.args[0] if call.args else _kwarg(call, "query")
            if arg is not None:
                value = self._literal(arg)
                if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
                    value = " ".join(value)
                if value is not None and not isinstance(value, str):
                    raise WeaviateQueryError(f"query must be text, got {value!r}", _line(arg))
                out["search_query"] = value
        slots: dict[str, list[dict[str, Any]]] = {}
        filters = _kwarg(call, "filters")
        if filters is not None:
            for family, cond in self._conditions(filters, collection):
                slots.setdefault(f"{family}_property_filter", []).append(cond)
        metrics = _kwarg(call, "return_metrics")
        if metrics is not None:
            for family, agg in self._metrics(metrics, collection):
                slots.setdefault(f"{family}_property_aggregation", []).append(agg)
        out.update({key: items for key, items in slots.items()})
        group_by = _kwarg(call, "group_by")
        if group_by is not None:
            out["groupby_property"] = self._group_by(group_by)
        return out

    def _conditions(self, node: ast.expr, collection: str) -> list[tuple[str, dict[str, Any]]]:
        node = self._resolve(node)
        if isinstance(node, ast.Constant) and node.value is None:
            return []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
            return self._conditions(node.left, collection) + self._conditions(
                node.right, collection
            )
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            raise WeaviateQueryError(
                "OR filters (`|`) cannot be written in the Gorilla query structure", _line(node)
            )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr in ("all_of", "any_of") and _ends_with(node.func.value, "Filter"):
                if attr == "any_of":
                    raise WeaviateQueryError(
                        "OR filters (Filter.any_of) cannot be written in the Gorilla query "
                        "structure",
                        _line(node),
                    )
                items = self._resolve(node.args[0]) if node.args else None
                if not isinstance(items, ast.List | ast.Tuple):
                    raise WeaviateQueryError("Filter.all_of needs a list", _line(node))
                out: list[tuple[str, dict[str, Any]]] = []
                for item in items.elts:
                    out.extend(self._conditions(item, collection))
                return out
            target = node.func.value
            if (
                isinstance(target, ast.Call)
                and isinstance(target.func, ast.Attribute)
                and target.func.attr == "by_property"
            ):
                return [self._condition(node, target, collection)]
        raise WeaviateQueryError(
            f"not a filter expression: {_code(node)!r} (expected Filter.by_property(...)"
            ".<operator>(...), Filter.all_of([...]) or `&`)",
            _line(node),
        )

    def _condition(
        self, call: ast.Call, by_property: ast.Call, collection: str
    ) -> tuple[str, dict[str, Any]]:
        method = call.func.attr  # type: ignore[attr-defined]
        op = _FILTER_METHODS.get(method)
        if op is None:
            raise UnknownOperatorError(
                f"unknown filter operator {method!r}; expected one of "
                f"{', '.join(sorted(_FILTER_METHODS))}",
                _line(call),
            )
        prop_node = by_property.args[0] if by_property.args else _kwarg(by_property, "name")
        if prop_node is None:
            raise WeaviateQueryError("Filter.by_property() without a name", _line(by_property))
        prop = self._literal(prop_node)
        if not isinstance(prop, str):
            raise WeaviateQueryError(f"property name must be text, got {prop!r}", _line(call))
        value_node = call.args[0] if call.args else _kwarg(call, "val")
        if value_node is None:
            raise WeaviateQueryError(f"{method}() without a value", _line(call))
        value = self._literal(value_node)
        family = self._family(collection, prop, op, value, call)
        return family, {"property_name": prop, "operator": op, "value": value}

    def _family(self, collection: str, prop: str, op: str, value: Any, node: ast.AST) -> str:
        known = self.schema.data_type(collection, prop) if self.schema is not None else None
        family = family_of(known)
        if family is not None:
            return family
        if op == "LIKE" or isinstance(value, str):
            return "text"
        if isinstance(value, bool):
            return "boolean"
        if isinstance(value, int | float):
            return "integer"
        raise WeaviateQueryError(
            f"cannot tell the type of filter value {value!r} on {prop!r}", _line(node)
        )

    def _metrics(self, node: ast.expr, collection: str) -> list[tuple[str, dict[str, Any]]]:
        node = self._resolve(node)
        if isinstance(node, ast.List | ast.Tuple):
            out: list[tuple[str, dict[str, Any]]] = []
            for item in node.elts:
                out.extend(self._metrics(item, collection))
            return out
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Call)
            and _ends_with(node.func.value.func, "Metrics")
        ):
            ctor = node.func.value
            prop_node = ctor.args[0] if ctor.args else _kwarg(ctor, "property_")
            prop = self._literal(prop_node) if prop_node is not None else None
            if not isinstance(prop, str):
                raise WeaviateQueryError("Metrics() needs a property name", _line(ctor))
            kind = node.func.attr
            if kind == "returning":
                type_node = ctor.args[1] if len(ctor.args) > 1 else _kwarg(ctor, "type_")
                family = self._metrics_type(type_node, collection, prop)
            elif kind in _METRIC_KINDS:
                family = _METRIC_KINDS[kind]
            else:
                raise UnknownMetricError(
                    f"unsupported aggregation kind Metrics(...).{kind}(); expected one of "
                    f"{', '.join(sorted(_METRIC_KINDS))}",
                    _line(node),
                )
            return [(family, self._aggregation(node, family, prop))]
        raise WeaviateQueryError(
            f"not an aggregation: {_code(node)!r} (expected Metrics(prop).integer(...) "
            "and the like)",
            _line(node),
        )

    def _metrics_type(self, node: ast.expr | None, collection: str, prop: str) -> str:
        name = None
        if isinstance(node, ast.Attribute):
            name = node.attr.lower()
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value.lower()
        elif node is None and self.schema is not None:
            name = self.schema.data_type(collection, prop)
        family = family_of(name)
        if family is None:
            raise UnknownMetricError(
                f"cannot tell the data type of Metrics({prop!r}) (int, number, text or boolean)",
                _line(node) if node is not None else "",
            )
        return family

    def _aggregation(self, call: ast.Call, family: str, prop: str) -> dict[str, Any]:
        allowed = _METRIC_ARGS[family]
        chosen: set[str] = set()
        limit = None
        for kw in call.keywords:
            if kw.arg in ("limit", "min_occurrences") and family == "text":
                limit = self._literal(kw.value)
                continue
            if kw.arg not in allowed:
                raise UnknownMetricError(
                    f"unknown {family} metric {kw.arg!r}; expected one of "
                    f"{', '.join(sorted(allowed))}",
                    _line(kw.value),
                )
            if self._literal(kw.value):
                chosen.add(allowed[kw.arg])
        if not chosen:  # the client returns every metric of the type when none is chosen
            chosen = set(METRICS[family]) - {"TYPE"}
        out: dict[str, Any] = {"property_name": prop, "metrics": sorted(chosen)}
        if limit is not None:
            out["top_occurrences_limit"] = limit
        return out

    def _group_by(self, node: ast.expr) -> Any:
        node = self._resolve(node)
        if isinstance(node, ast.Call) and (
            _ends_with(node.func, "GroupByAggregate") or _ends_with(node.func, "GroupBy")
        ):
            arg = node.args[0] if node.args else _kwarg(node, "prop")
            if arg is None:
                raise WeaviateQueryError("group_by without a property", _line(node))
            return self._literal(arg)
        return self._literal(node)


def _kwarg(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _ends_with(node: ast.expr, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name
    return isinstance(node, ast.Attribute) and node.attr == name


def _line(node: ast.AST) -> str:
    lineno = getattr(node, "lineno", None)
    return f"line {lineno}" if lineno is not None else ""
