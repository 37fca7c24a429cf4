"""The result comparison policy as a typed model: every keyword option of
`queryeval.metrics.compare_results`, with its own type (a `Literal` lists the valid
choices), checked wherever a policy is written (the suite's `comparison`, a scorer's
`comparison` option, a case's `metadata.comparison`).

The model is derived from `compare_results`' signature, so an option added there is typed
here at once; only the bounds below are added by hand (the signature cannot say them).
"""

from __future__ import annotations

import functools
import inspect
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from queryeval._validation import first_problem

# set by the scorers from the gold, the engine and the scorers configured, never by a suite
SET_BY_SCORER = frozenset({"gold_query", "language", "legacy"})
_BOUNDS: dict[str, dict[str, Any]] = {
    "abs_tol": {"ge": 0},
    "rel_tol": {"ge": 0},
    "max_permutations": {"ge": 1},
    "legacy_row_limit": {"ge": 1},
}


@functools.cache
def policy_model() -> type[BaseModel]:
    """The pydantic model of a comparison policy (unknown keys are errors)."""
    from queryeval.metrics import compare_results

    hints = typing.get_type_hints(compare_results)
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(compare_results).parameters.items():
        if param.kind is not param.KEYWORD_ONLY or name in SET_BY_SCORER:
            continue
        fields[name] = (hints[name], Field(default=param.default, **_BOUNDS.get(name, {})))
    return create_model(
        "ComparisonPolicy", __config__=ConfigDict(extra="forbid", strict=False), **fields
    )


def comparison_keys() -> set[str]:
    """The policy keys a suite or a case may set."""
    return set(policy_model().model_fields)


def comparison_policy(data: Any) -> dict[str, Any]:
    """`data` checked and typed (`"1e-9"` -> 1e-9), keeping only the keys it sets; a
    ValidationError names the bad key and what it expects.

    >>> comparison_policy({"rel_tol": "1e-9", "columns": "permutation"})
    {'columns': 'permutation', 'rel_tol': 1e-09}
    """
    model = policy_model().model_validate(data if data is not None else {})
    return model.model_dump(exclude_unset=True)


def policy_problem(data: Any) -> tuple[tuple[str | int, ...], str] | None:
    """(location inside the policy, what is wrong and expected), or None when it is valid."""
    try:
        comparison_policy(data)
    except ValidationError as exc:
        keys = ", ".join(sorted(comparison_keys()))
        loc, _, message = first_problem(exc, f"unknown comparison option; expected one of {keys}")
        return loc, message
    return None
