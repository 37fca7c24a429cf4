"""The scorer registry: names -> scorer classes, imported lazily so heavy ones cost nothing
until a suite uses them. Third-party scorers register with `register_scorer` or the
`queryeval.scorers` entry-point group."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from queryeval._registry import Registry
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


def _named(name: str, cls: type[Scorer]) -> type[Scorer]:
    if "name" not in cls.__dict__:  # the name is given once: here (a class never repeats it)
        cls.name = name
    return cls


SCORERS: Registry[type[Scorer]] = Registry(
    "scorer", builtins=_BUILTIN, group="queryeval.scorers", adapt=_named
)
_REGISTERED = SCORERS._registered  # the registered classes (tests put stand-ins here)


def register_scorer(name: str) -> Callable[[S], S]:
    """Class decorator: register a Scorer subclass under `name` (third-party scorers; the
    built-in ones are listed in `_BUILTIN`)."""

    def deco(cls: S) -> S:
        cls.name = name
        SCORERS.register(name, cls)
        return cls

    return deco


def known_scorers() -> set[str]:
    """Every scorer name a suite may use."""
    return set(SCORERS.names())


def scorer_class(name: str) -> type[Scorer]:
    """The class registered under `name` (an UnknownName, a KeyError, naming the known
    ones if unknown).

    >>> scorer_class("bleu").__name__
    'BleuScorer'
    """
    return SCORERS.get(name)


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
    return next((name for name, where in SCORERS.entry_points().items() if where == target), "")


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
        if config.name not in SCORERS:
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
