"""Scorers: thin adapters from a case and an output to a metric, returning a Score."""

# ruff: noqa: F401 - names imported here and left out of `__all__` are for queryeval's own
# packages (the private-modules contract has them import through here), not a public interface

from queryeval.scorers._base import (
    AsyncScorer,
    NoOptions,
    Scorer,
    ShardableScorer,
    apply_rule,
    ascore_case,
    case_passed,
    score_case,
)
from queryeval.scorers._codelists import load_codelists
from queryeval.scorers._context import ScoringContext
from queryeval.scorers._estimate import estimate, judged_scorers
from queryeval.scorers._policy import comparison_keys, comparison_policy, policy_problem
from queryeval.scorers._registry import (
    build_scorer,
    build_scorers,
    known_scorers,
    register_scorer,
    scorer_class,
)

# What users call; the package's other names are for queryeval's own packages.
__all__ = [
    "AsyncScorer",
    "NoOptions",
    "Scorer",
    "ScoringContext",
    "ShardableScorer",
    "apply_rule",
    "ascore_case",
    "build_scorer",
    "build_scorers",
    "estimate",
    "known_scorers",
    "register_scorer",
    "score_case",
]
