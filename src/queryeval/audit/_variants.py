"""A thin adapter over the verified-verdicts work (`queryeval.verify`, issue 29): the
gold's result on every database variant the Verifier builds for it, through its public
`check` (a recorder as the comparison, a constant query as the prediction)."""

from __future__ import annotations

from typing import Any

from queryeval.engines import Engine, Execution

# a prediction that runs on every variant (the recorder only needs the gold's results)
_CONSTANT = {"sql": "SELECT 1", "kql": "print x = 1", "cypher": "RETURN 1 AS x"}


class GoldOnVariants:
    """The variants of one database (a `Verifier`), asked for one gold's results."""

    def __init__(self, engine: Engine, variants: int = 12, seed: int = 0) -> None:
        from queryeval.verify import Settings, Verifier

        self.verifier = Verifier(engine, Settings(seed=seed, variants=variants))

    def settings(self) -> dict[str, Any]:
        """The builder's settings: with the database, they rebuild the same variants."""
        from dataclasses import asdict

        return asdict(self.verifier.settings)

    def results(self, gold: str) -> list[Execution]:
        """The gold's executions on the variants that ran it (the sample first)."""
        seen: list[Execution] = []

        def record(prediction: Execution, gold_run: Execution) -> str | None:
            seen.append(gold_run)
            return None  # never "differs": every variant is visited

        self.verifier.check(gold, _CONSTANT.get(self.verifier.engine.language, "SELECT 1"), record)
        return seen

    def close(self) -> None:
        """Drop the variants."""
        self.verifier.close()


def same_everywhere(runs: list[Execution], policy: dict[str, Any], gold: str, dialect: str) -> bool:
    """Whether at least two variants ran the gold and every result equals the first."""
    from queryeval.metrics import compare_results

    ok = [r for r in runs if r.ok and r.result is not None]
    if len(ok) < 2:
        return False
    first = ok[0].result
    return all(
        compare_results(r.result, first, **policy, gold_query=gold, language=dialect).exact
        for r in ok[1:]
    )
