"""Verified verdicts: database variants derived from a database and two queries, where
execution match on one database may be fooled (issue 29; docs/verified.md).

`Verifier` builds the variants of one DuckDB or SQLite database, an embedded KQL engine's
tables, a graph on the embedded ArcadeDB (`_graph`: a scratch ArcadeDB of its own) or a
bounded sample of a SQLAlchemy server's tables copied locally (`_sampled`) —
deterministic from a seed, cached per run — runs a gold and a prediction on them inside
the engines' sandbox and shrinks the first difference to a minimal, replayable witness;
`replay` rebuilds a witness; `gold_order_problems` finds golds whose result depends on
row order or ties (`selftest`).
"""

from queryeval.verify._check import (
    Differs,
    Outcome,
    Settings,
    Verifier,
    open_engine,
    replay,
    result_record,
)
from queryeval.verify._hints import Hints, analyse, analyse_kql
from queryeval.verify._order import gold_order_problems
from queryeval.verify._schema import read_schema, supported

__all__ = [
    "Differs",
    "Hints",
    "Outcome",
    "Settings",
    "Verifier",
    "analyse",
    "analyse_kql",
    "gold_order_problems",
    "open_engine",
    "read_schema",
    "replay",
    "result_record",
    "supported",
]
