"""Verified verdicts on a server database reached by a SQLAlchemy URL (PostgreSQL, MySQL,
...): the tables the two queries read (and the tables their foreign keys refer to) are
copied, a bounded sample of each (`rows_per_table`), into a local file — SQLite for a
SQLite URL, else DuckDB with both queries translated by sqlglot — and the variants are
built from that copy as for a DuckDB or SQLite database. The server is only read.

What this assumes, and says in every witness (`assumptions`, kind `local_copy`): the
witness is a local database, not the server; its queries are the translations. Where every
copied table is complete, the translated queries must give the server's own results on the
copy (by the scorer's comparison), else the case stays unverified (a translation or a type
that does not carry over is the evaluator's limit, never the prediction's fault).

A witness counts (verified = 0) only where the copy is proven to behave as the server: the
same engine kind (a SQLite server copied into SQLite, its queries unchanged) and every
column's type kept. A witness found on a copy whose queries sqlglot translated, or with a
column copied as text, may exist only on the copy (`x > 30` and `x >= 31` differ on the
text '300'): the case keeps EX's verdict and the witness is reported under
`Outcome.unverified` with the reason. A bounded (incomplete) sample alone does not stop a
witness: its database is replayed by the server's own engine kind with the original
queries, whatever rows the sample held.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from queryeval.engines import Engine, Execution
from queryeval.verify._check import Differs, Outcome, Settings, Verifier, open_engine


class Unverifiable(RuntimeError):
    """The local copy cannot stand for the server for this pair of queries."""


class SampledVerifier(Verifier):
    """Variants of local copies of a server's tables; one copy (and its `Verifier`) per set
    of tables the cases read, at most `capacity` kept."""

    def __init__(self, engine: Engine, settings: Settings, capacity: int = 8) -> None:
        self.origin = engine
        self.engine = engine
        self.settings = settings
        self.backend = str(getattr(engine, "backend", engine.dialect))
        self.source = engine.dialect
        self.target = "sqlite" if self.backend == "sqlite" else "duckdb"
        self.dialect = self.target
        self.limits = engine.limits
        self.now = None
        self._capacity = capacity
        self._copies: OrderedDict[tuple[str, ...], tuple[Verifier, Engine, Any]] = OrderedDict()
        self._folder = Path(tempfile.mkdtemp(prefix="queryeval-sampled-"))
        self._lock = threading.RLock()
        self._count = 0

    def translate(self, query: str) -> str:
        """`query` in the copy's dialect (itself when the server is SQLite)."""
        if self.target == self.source:
            return query
        import sqlglot

        try:
            out = sqlglot.transpile(query, read=self.source, write=self.target)
        except Exception as exc:
            raise Unverifiable(f"sqlglot cannot translate the query from {self.source} to "
                               f"{self.target}: {exc}") from None  # fmt: skip
        if len(out) != 1:
            raise Unverifiable("the query is not one statement")
        return out[0]

    def _tables(self, queries: list[str]) -> list[str]:
        import sqlglot
        from sqlglot import exp

        from queryeval.engines import related_tables

        wanted: set[str] = set()
        for query in queries:
            try:
                tree = sqlglot.parse_one(query, read=self.source)
            except Exception:
                continue
            wanted |= {t.name for t in tree.find_all(exp.Table) if t.name}
        return related_tables(self.origin, wanted)

    def _copy(self, tables: list[str]) -> tuple[Verifier, Engine, Any]:
        from queryeval.engines import copy_sample

        key = tuple(tables)
        found = self._copies.get(key)
        if found is not None:
            self._copies.move_to_end(key)
            return found
        self._count += 1
        path = self._folder / f"copy{self._count}.{self.target}"
        copied = copy_sample(self.origin, tables, path, self.target, self.settings.rows)
        local = open_engine(self.target, path, self.limits)
        verifier = Verifier(local, self.settings)
        self._copies[key] = (verifier, local, copied)
        while len(self._copies) > self._capacity:
            _, (old, old_engine, _) = self._copies.popitem(last=False)
            old.close()
            old_engine.close()
        return self._copies[key]

    def check(self, gold: str, pred: str, differs: Differs) -> Outcome:
        """`Verifier.check` on a local copy of the tables both queries read (Unverifiable
        when the copy cannot stand for the server)."""
        with self._lock:
            tables = self._tables([gold, pred])
            if not tables:
                outcome = Outcome()
                outcome.note = "the queries read no table of the database: nothing to vary"
                return outcome
            local_gold, local_pred = self.translate(gold), self.translate(pred)
            verifier, local, copied = self._copy(tables)
            complete = all(c.complete for c in copied.values())
            if complete:
                self._faithful(local, gold, local_gold, pred, local_pred, differs)
            outcome = verifier.check(local_gold, local_pred, differs)
            if outcome.counterexample is not None:
                self._annotate(outcome.counterexample, gold, pred, copied, complete)
                why = self.unproven(copied)
                if why is not None:
                    outcome.unverified = f"witness on a copy not proven faithful: {why}"
                    outcome.unverified_witness = outcome.counterexample
                    outcome.counterexample = None
            return outcome

    def unproven(self, copied: dict[str, Any]) -> str | None:
        """Why a witness found on the copy may not hold on the server (None: the copy is
        the server's engine kind, its queries unchanged, every column's type kept)."""
        why = []
        if self.target != self.source:
            why.append(f"its queries were translated by sqlglot from {self.source} to "
                       f"{self.target}")  # fmt: skip
        unmapped = sorted(f"{c.name}.{u}" for c in copied.values() for u in c.unmapped)
        if unmapped:
            why.append(f"columns copied as text: {', '.join(unmapped)}")
        return "; ".join(why) or None

    def _faithful(self, local: Engine, gold: str, local_gold: str, pred: str,
                  local_pred: str, differs: Differs) -> None:  # fmt: skip
        """Raise Unverifiable unless both translated queries give the server's results on
        a complete copy."""
        for name, on_server, on_copy in (("gold", gold, local_gold), ("prediction", pred,
                                                                       local_pred)):  # fmt: skip
            server: Execution = self.origin.execute(on_server)
            copy: Execution = local.execute(on_copy)
            if not server.ok or not copy.ok:
                raise Unverifiable(f"the {name} runs on the server or on its {self.target} copy "
                                   f"but not on both")  # fmt: skip
            why = differs(copy, server)
            if why is not None:
                raise Unverifiable(f"the {self.target} copy does not reproduce the server's "
                                   f"result of the {name} ({why})")  # fmt: skip

    def _annotate(self, witness: dict[str, Any], gold: str, pred: str, copied: dict[str, Any],
                  complete: bool) -> None:  # fmt: skip
        sizes = ", ".join(f"{c.name}: {c.rows}{'' if c.complete else '+'}"
                          for c in copied.values())  # fmt: skip
        text = (f"the witness is a local {self.target} database built from "
                f"{'a copy' if complete else 'a bounded sample'} of the {self.backend} "
                f"server's tables (rows copied: {sizes}; + marks a table cut at "
                f"{self.settings.rows} rows)")  # fmt: skip
        if self.target != self.source:
            text += f", its queries translated by sqlglot from {self.source} to {self.target}"
        unmapped = sorted(f"{c.name}.{u}" for c in copied.values() for u in c.unmapped)
        if unmapped:
            text += f"; copied as text: {', '.join(unmapped)}"
        witness["assumptions"] = [
            {"table": None, "column": None, "kind": "local_copy", "value": None,
             "text": text + "; it was not run on the server"},
            *witness.get("assumptions", []),
        ]  # fmt: skip
        witness["server"] = {"backend": self.backend, "dialect": self.source,
                             "queries": {"gold": gold, "prediction": pred},
                             "complete_copy": complete}  # fmt: skip

    def hints(self, query: str) -> Any:
        raise NotImplementedError("a SampledVerifier checks through local copies")

    def close(self) -> None:
        with self._lock:
            for verifier, local, _ in self._copies.values():
                verifier.close()
                local.close()
            self._copies.clear()
            shutil.rmtree(self._folder, ignore_errors=True)
