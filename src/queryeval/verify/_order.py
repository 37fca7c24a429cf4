"""Golds whose result depends on row order or on ties (`selftest`, issue 29): the gold runs
on its own variants, each built twice, its rows stored forward and in reverse; a result
that differs between the two (by the gold's own comparison: ordered when it orders its
rows, else as a multiset) depends on something no query fixes: the order rows are stored
in, or which of tied rows an ORDER BY ... LIMIT keeps. The first such variant is shrunk
(delta debugging, bounded by a count) to a small, replayable witness."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from queryeval.engines import Engine, Execution
from queryeval.verify._build import Data
from queryeval.verify._check import Settings, Verifier, result_record
from queryeval.verify._variants import generate

# why two runs of the gold differ (None: they agree)
Compare = Callable[[Execution, Execution], str | None]


def gold_order_problems(engine: Engine, gold: str, *, settings: Settings | None = None,
                        verifier: Verifier | None = None,
                        compare: Compare | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """The ways `gold`'s result on `engine`'s database (DuckDB, SQLite, embedded KQL)
    depends on row order or ties: [] when none of its variants shows one (a bounded
    search, not a proof), else one record: `kind` (`ties` when the variant tied an ORDER
    BY ... LIMIT column, else `row order`), `variant`, `reason`, `script` (CREATE + INSERT
    of the witness's rows), `rows`, and the gold's two results (`forward`, `reversed`:
    the same rows stored in reverse order). Pass a `verifier` to share variants across
    golds of one database (a run's resource); `compare` defaults to compare_results
    under the gold's own row policy.

    >>> import duckdb, tempfile, pathlib
    >>> from queryeval.config import DatabaseConfig
    >>> from queryeval.engines import build_engine
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> con = duckdb.connect(str(folder / "d.duckdb"))
    >>> _ = con.execute("CREATE TABLE t (a INT, b INT); INSERT INTO t VALUES (1, 1), (2, 2)")
    >>> con.close()
    >>> e = build_engine("d", DatabaseConfig(engine="duckdb", path="d.duckdb"), folder, folder)
    >>> [p["kind"] for p in gold_order_problems(e, "SELECT a FROM t ORDER BY b LIMIT 1")]
    ['ties']
    >>> gold_order_problems(e, "SELECT a FROM t ORDER BY b, a LIMIT 1")
    []
    >>> e.close()
    """
    own = verifier is None
    v = verifier or Verifier(engine, settings or Settings())
    try:
        with v._lock:
            return _problems(v, gold, compare or _compare(gold, v.dialect))
    finally:
        if own:
            v.close()


def _compare(gold: str, dialect: str) -> Compare:
    from queryeval.metrics import compare_results

    language = dialect if dialect in ("kql", "cypher") else "sql"

    def compare(first: Execution, second: Execution) -> str | None:
        result = compare_results(first.result, second.result, gold_query=gold,
                                 language=language)  # fmt: skip
        return None if result.exact else (result.reason or "results differ")

    return compare


def _problems(v: Verifier, gold: str, compare: Compare) -> list[dict[str, Any]]:
    hints = v.hints(gold)
    tables = v.tables_for(hints)
    if not tables:
        return []
    base = v.base(tables)
    variants = generate(v.schema, base, hints, seed=v.settings.seed, count=v.settings.variants,
                        observed_only=v.settings.observed_only, salt="order")  # fmt: skip
    for variant in variants:
        found = _differs(v, tables, variant.data, gold, compare)
        if found is None:
            continue
        data = _shrink(v, tables, found[0], gold, compare)
        final = _differs(v, tables, data, gold, compare) or found
        kept, forward, backward, why = final
        return [{
            "kind": "ties" if variant.name.startswith("ties") else "row order",
            "variant": variant.name,
            "reason": why,
            "rows": sum(len(r) for r in kept.values()),
            "script": v.script_of(tables, kept),
            "forward": result_record(forward),
            "reversed": result_record(backward),
        }]  # fmt: skip
    return []


def _differs(v: Verifier, tables: list[str], data: Data, gold: str, compare: Compare
             ) -> tuple[Data, Execution, Execution, str] | None:  # fmt: skip
    """(the rows kept, both runs, why) when the gold differs between `data` stored
    forward and in reverse; None when it agrees or cannot tell (fails, cut by max_rows)."""
    forward = v._build(tables, data, keep=False)
    try:
        kept = forward.kept
        backward = v._build(tables, {t: list(reversed(r)) for t, r in kept.items()}, keep=False)
        try:
            one, two = forward.engine.execute(gold), backward.engine.execute(gold)
        finally:
            v._drop(backward)
    finally:
        v._drop(forward)
    runs = (one, two)
    if not all(r.ok and not r.outcome.truncated for r in runs):
        return None
    why = compare(one, two)
    return None if why is None else (kept, one, two, why)


def _shrink(v: Verifier, tables: list[str], data: Data, gold: str, compare: Compare) -> Data:
    """Fewer rows that still show the difference (chunks of rows removed while it stays,
    at most `settings.steps` databases)."""
    steps = v.settings.steps
    items = [(t, r) for t in tables for r in data.get(t, [])]
    n = 2
    while len(items) >= 2 and steps > 0:
        size = max(1, len(items) // n)
        reduced = False
        for start in range(0, len(items), size):
            if steps <= 0:
                break
            steps -= 1
            rest = items[:start] + items[start + size :]
            grouped: Data = {t: [] for t in tables}
            for t, row in rest:
                grouped[t].append(row)
            found = _differs(v, tables, grouped, gold, compare)
            if found is not None:
                items = [(t, r) for t in tables for r in found[0].get(t, [])]
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if size == 1:
                break
            n = min(len(items), n * 2)
    out: Data = {t: [] for t in tables}
    for t, row in items:
        out[t].append(row)
    return out
