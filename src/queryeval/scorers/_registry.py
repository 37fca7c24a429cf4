"""The scorer registry: names -> scorer classes, imported lazily so heavy ones cost nothing
until a suite uses them. Third-party scorers register with `register_scorer` or the
`queryeval.scorers` entry-point group."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, TypeVar

from queryeval.scorers._base import Scorer

if TYPE_CHECKING:
    from queryeval.config import ScorerConfig, SuiteConfig

S = TypeVar("S", bound=type[Scorer])

# Built-in scorers: name -> "module:Class", the only place a built-in's name is written (the
# class gets it when loaded). One line each; the module is imported on first use.
_BUILTIN: dict[str, str] = {
    "term_selection": "queryeval.scorers.sdmx:TermSelectionScorer",
    "answer": "queryeval.scorers.answer:AnswerScorer",
    "retrieval": "queryeval.scorers.retrieval:RetrievalScorer",
    "composite": "queryeval.scorers.composite:CompositeScorer",
    "llm_query_similarity": "queryeval.scorers.judged:QuerySimilarityScorer",
    "llm_answer_correctness": "queryeval.scorers.judged:AnswerCorrectnessScorer",
    "executes": "queryeval.scorers.execution:ExecutesScorer",
    "execution_match": "queryeval.scorers.execution:ExecutionMatchScorer",
    "verified_match": "queryeval.scorers.verified_match:VerifiedMatchScorer",
    "results_f1": "queryeval.scorers.execution:ResultsF1Scorer",
    "results_match_legacy": "queryeval.scorers.execution:ResultsMatchLegacyScorer",
    "bleu": "queryeval.scorers.text:BleuScorer",
    "rouge_l": "queryeval.scorers.text:RougeLScorer",
    "jaro_winkler": "queryeval.scorers.text:JaroWinklerScorer",
    "jaccard": "queryeval.scorers.text:JaccardScorer",
    "exact_match": "queryeval.scorers.text:ExactMatchScorer",
    "agentic": "queryeval.scorers.agentic:AgenticScorer",
    "llmetric_q": "queryeval.scorers.llmetric:LLMetricQScorer",
    "kg_valid": "queryeval.scorers.llmetric:KGValidScorer",
    "weaviate_ast": "queryeval.scorers.weaviate:WeaviateAstScorer",
    "spider_exact_match": "queryeval.scorers.benchmarks:SpiderExactMatchScorer",
    "bird_ves": "queryeval.scorers.benchmarks:BirdVesScorer",
    "kql_syntax": "queryeval.scorers.kql_validity:KqlSyntaxScorer",
    "kql_semantic": "queryeval.scorers.kql_validity:KqlSemanticScorer",
    "task_tests": "queryeval.scorers.task_tests:TaskTestsScorer",
}
_REGISTERED: dict[str, type[Scorer]] = {}


def register_scorer(name: str) -> Callable[[S], S]:
    """Class decorator: register a Scorer subclass under `name` (third-party scorers; the
    built-in ones are listed in `_BUILTIN`)."""

    def deco(cls: S) -> S:
        cls.name = name
        _REGISTERED[name] = cls
        return cls

    return deco


@cache
def _plugins() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group="queryeval.scorers")}


def known_scorers() -> set[str]:
    """Every scorer name a suite may use."""
    return set(_BUILTIN) | set(_REGISTERED) | set(_plugins())


def scorer_class(name: str) -> type[Scorer]:
    """The class registered under `name` (KeyError if unknown)."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    target = _BUILTIN.get(name) or _plugins().get(name)
    if target is None:
        raise KeyError(name)
    module, _, attr = target.partition(":")
    cls: type[Scorer] = getattr(importlib.import_module(module), attr)
    if "name" not in cls.__dict__:  # the name is given once: here (a class never repeats it)
        cls.name = name
    _REGISTERED.setdefault(name, cls)
    return cls


def builtin_name(cls: type[Scorer]) -> str:
    """The name a built-in or entry-point scorer class is registered under ("" if none).

    >>> from queryeval.scorers.sdmx import TermSelectionScorer
    >>> builtin_name(TermSelectionScorer)
    'term_selection'
    """
    target = f"{cls.__module__}:{cls.__qualname__}"
    for name, where in _BUILTIN.items():
        if where == target:
            return name
    if cls.__module__.startswith("queryeval."):
        return ""  # not a built-in: no entry point to scan for (importlib.metadata is slow)
    return next((name for name, where in _plugins().items() if where == target), "")


def build_scorer(config: ScorerConfig) -> Scorer:
    """A scorer instance from its suite configuration (options validated by its model)."""
    cls = scorer_class(config.name)
    options = cls.Options.model_validate(config.options)
    return cls(options, config)


def build_scorers(suite: SuiteConfig) -> dict[str, Scorer]:
    """Every scorer the suite configures, by label. An unknown name, or options that do not
    validate, is an InputError at its line of the suite file."""
    from pydantic import ValidationError

    scorers: dict[str, Scorer] = {}
    for i, config in enumerate(suite.scorers):
        if config.name not in known_scorers():
            expected = ", ".join(sorted(known_scorers()))
            raise suite.entry_error(
                ("scorers", i), f"unknown scorer {config.name!r}; expected one of {expected}"
            )
        try:
            scorers[config.label] = build_scorer(config)
        except ValidationError as exc:
            raise suite.options_error(exc, ("scorers", i, "options")) from None
        except (ValueError, TypeError) as exc:
            raise suite.entry_error(("scorers", i), str(exc)) from None
    return scorers
