"""The scoring context: the run's shared resources, with typed accessors over the services.

It sits above the services it composes (engines, judges, embeddings, kg): they keep what
they build in a `queryeval.resources.RunResources` and never see this class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from queryeval.resources import RunResources

if TYPE_CHECKING:
    from queryeval.embeddings import Embedder
    from queryeval.engines import Blame, Engine, Execution
    from queryeval.judges import Judge
    from queryeval.kg import KGValidator, KGValidity
    from queryeval.languages import OrderInfo


class ScoringContext(RunResources):
    """What scorers (and live systems) may need beyond the case and the output: the suite,
    the cache folder, and the run's shared services, each built once on first use.

    >>> ctx = ScoringContext()
    >>> ctx.judge() is None, ctx.database_names()  # no suite: no judge, no databases
    (True, [])
    """

    def database_names(self) -> list[str]:
        """The suite's database names, in file order."""
        return list(self.suite.databases) if self.suite is not None else []

    def engine(self, database: str) -> Engine:
        """The engine of a suite database (InputError for an unknown name)."""
        from queryeval.engines import engine_from_context

        return engine_from_context(self, database)

    def execute(self, database: str, query: str) -> Execution:
        """A predicted query's execution on `database`, once per run whichever scorers ask."""
        from queryeval.engines import execute_query

        return execute_query(self, database, query)

    def run_prediction(self, database: str, query: str) -> tuple[Execution, Blame]:
        """A predicted query's execution and whose fault it is when it gave no rows."""
        from queryeval.engines import run_prediction

        return run_prediction(self, database, query)

    def gold_execution(self, database: str, query: str) -> Execution:
        """A gold query's execution (from the on-disk cache when it ran before)."""
        from queryeval.engines import gold_execution

        return gold_execution(self, database, query)

    def gold_order(self, database: str | None, query: str, language: str) -> OrderInfo | None:
        """A gold query's top-level ordering in `language` (None when it cannot be parsed),
        parsed once and kept with the gold cache."""
        from queryeval.engines import gold_order

        return gold_order(self, database, query, language)

    def judge(self) -> Judge | None:
        """The run's judge, or None when the suite configures none."""
        from queryeval.judges import judge_from_context

        return judge_from_context(self)

    def embedder(self) -> Embedder:
        """The run's embedder (the suite's `embeddings:` section, or the default model)."""
        from queryeval.embeddings import embedder_from_context

        return embedder_from_context(self)

    def kg_validator(self, database: str) -> KGValidator:
        """The KG validator of a Cypher database of the suite."""
        from queryeval.kg import kg_validator_from_context

        return kg_validator_from_context(self, database)

    def kg_validity(self, database: str, query: str) -> KGValidity:
        """KG validity of `query` on `database`, once per run (KGValidationError when it
        cannot be had)."""
        from queryeval.kg import validate_in_context

        return validate_in_context(self, database, query)
