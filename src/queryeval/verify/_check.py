"""Run a gold and a prediction on the variants of a database; on a difference, shrink the
variant to a minimal witness (delta debugging over its rows) and replay its script.

Every variant is a new database file built in a scratch folder and opened by the same
engine kind, read-only, under the database's limits (time, memory, rows), with one thread.
Bounds are counts (variants, shrinking steps), never seconds: a slow machine changes no
verdict.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from queryeval.engines import Engine, Execution
from queryeval.verify._build import (
    Data,
    Unrenderable,
    build,
    build_sqlite,
    consistent,
    needed_tables,
    script,
)
from queryeval.verify._hints import Hints, analyse, analyse_kql
from queryeval.verify._schema import Schema, read_rows, read_schema
from queryeval.verify._variants import Observed, generate

# why two results differ (None: they agree), as the scorer's comparison says
Differs = Callable[[Execution, Execution], str | None]


@dataclass(frozen=True)
class Settings:
    """The search's bounds: `variants` databases a case, `rows` read per table, `steps`
    of shrinking; `observed_only` keeps every value to those the database holds."""

    seed: int = 0
    variants: int = 40
    rows: int = 200
    steps: int = 200
    observed_only: bool = False


@dataclass
class Outcome:
    """What the variants showed: how many were compared, skipped (and why), and the
    counterexample when one was found; `unverified` says why a witness found may not hold
    on the database itself (`unverified_witness`: it does not lower the score)."""

    checked: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    counterexample: dict[str, Any] | None = None
    note: str | None = None
    unverified: str | None = None
    unverified_witness: dict[str, Any] | None = None

    def skip(self, why: str) -> None:
        """Count a variant left out."""
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def details(self) -> dict[str, Any]:
        """The record kept in a score's details."""
        out: dict[str, Any] = {
            "checked": self.checked,
            "skipped": dict(sorted(self.skipped.items())),
        }
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class _Built:
    engine: Engine
    kept: Data
    golds: dict[str, Execution] = field(default_factory=dict)


def open_engine(dialect: str, path: Path, limits: Any) -> Engine:
    """A read-only engine of `dialect` on the database file at `path`, under `limits`
    with one DuckDB thread."""
    from queryeval.config import DatabaseConfig
    from queryeval.engines import build_engine

    options = {"timeout_s": limits.timeout_s, "max_rows": limits.max_rows,
               "max_bytes": limits.max_bytes, "memory_limit": limits.memory_limit}  # fmt: skip
    if limits.max_wall_s is not None:
        options["max_wall_s"] = limits.max_wall_s
    if dialect == "duckdb":
        options["threads"] = 1
    config = DatabaseConfig(engine=dialect, path=str(path), options=options)
    return build_engine(f"variant:{path.stem}", config, path.parent, path.parent)


def replay(text: str, dialect: str, queries: dict[str, str], limits: Any,
           now: str | None = None) -> dict[str, Execution]:  # fmt: skip
    """Build the database of a witness `text` (its CREATE and INSERT statements) in a
    scratch database (a SQLite file in a temporary folder; a catalog of an in-memory
    DuckDB; for KQL a DuckDB file opened by the embedded KQL engine with its clock at
    `now`) and run each query on it read-only: {name: execution}."""
    import sqlite3

    from queryeval.engines import DuckDBScratch

    if dialect == "kql":
        return _replay_kql(text, queries, limits, now)
    if dialect == "cypher":
        from queryeval.verify._graph import replay_graph

        return replay_graph(text, queries, limits)
    if dialect == "duckdb":
        scratch = DuckDBScratch(limits)
        try:
            catalog = scratch.create()
            catalog.write(text)
            return {name: catalog.execute(query) for name, query in queries.items()}
        finally:
            scratch.close()
    where = Path(tempfile.mkdtemp(prefix="queryeval-replay-"))
    try:
        path = where / "witness.sqlite"
        con = sqlite3.connect(path)
        con.executescript(text)
        con.commit()
        con.close()
        engine = open_engine(dialect, path, limits)
        try:
            return {name: engine.execute(query) for name, query in queries.items()}
        finally:
            engine.close()
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _replay_kql(text: str, queries: dict[str, str], limits: Any,
                now: str | None) -> dict[str, Execution]:  # fmt: skip
    """A KQL witness: its script into a DuckDB file, queried by the embedded KQL engine
    (the same engine as a run's, not the variants' scratch path)."""
    import duckdb

    from queryeval.config import DatabaseConfig
    from queryeval.engines import build_engine

    where = Path(tempfile.mkdtemp(prefix="queryeval-replay-"))
    try:
        path = where / "witness.duckdb"
        con = duckdb.connect(str(path))
        try:
            con.execute(text)
        finally:
            con.close()
        options: dict[str, Any] = {"timeout_s": limits.timeout_s, "max_rows": limits.max_rows,
                                   "threads": 1}  # fmt: skip
        if now is not None:
            options["now"] = now
        config = DatabaseConfig(engine="kql", path=str(path), options=options)
        engine = build_engine("variant:witness", config, where, where)
        try:
            return {name: engine.execute(query) for name, query in queries.items()}
        finally:
            engine.close()
    finally:
        shutil.rmtree(where, ignore_errors=True)


class Verifier:
    """The variants of one database, shared by every case on it (a run's resource): a
    graph on ArcadeDB gets a `GraphVerifier` (`queryeval.verify._graph`), a server reached
    by a SQLAlchemy URL a `SampledVerifier` (`queryeval.verify._sampled`)."""

    def __new__(cls, engine: Engine, settings: Settings, capacity: int = 64) -> Verifier:
        if cls is Verifier and engine.language == "cypher":
            from queryeval.verify._graph import GraphVerifier

            cls = GraphVerifier
        elif cls is Verifier and _sqlalchemy(engine):
            from queryeval.verify._sampled import SampledVerifier

            cls = SampledVerifier
        return super().__new__(cls)

    def __init__(self, engine: Engine, settings: Settings, capacity: int = 64) -> None:
        self.engine = engine
        self.settings = settings
        self.dialect = engine.dialect
        self.limits = replace(engine.limits, threads=1)
        self.schema: Schema = read_schema(engine)
        self._rows: dict[str, list[tuple[Any, ...]]] = {}
        self._hints: dict[str, Hints] = {}
        self._built: OrderedDict[str, _Built] = OrderedDict()
        self._capacity = capacity
        self._folder = Path(tempfile.mkdtemp(prefix="queryeval-variants-"))
        self._scratch: Any = None
        self.now: str | None = None
        if self.dialect == "kql":  # the KQL engine's DuckDB tables, queried in KQL
            from queryeval.engines import KqlScratch

            self._scratch = KqlScratch(engine, self.limits)
            self.now = engine.now.isoformat()  # type: ignore[attr-defined]
        elif self.dialect == "duckdb":
            from queryeval.engines import DuckDBScratch

            self._scratch = DuckDBScratch(self.limits)
        self._lock = threading.RLock()
        self._count = 0

    # -- inputs ---------------------------------------------------------------------------

    def hints(self, query: str) -> Hints:
        """The query's hints (parsed once)."""
        if query not in self._hints:
            if self.dialect == "kql":
                translate = getattr(self.engine, "translate", None)
                self._hints[query] = analyse_kql(query, self.schema, translate)
            else:
                self._hints[query] = analyse(query, self.dialect, self.schema)
        return self._hints[query]

    def base(self, tables: list[str]) -> Data:
        """The first `rows` rows of each table (read once)."""
        for name in tables:
            if name not in self._rows:
                self._rows[name] = read_rows(self.engine, name, self.settings.rows)[1]
        return {name: self._rows[name] for name in tables}

    def tables_for(self, hints: Hints) -> list[str]:
        """The tables a variant holds for queries with `hints` (parents first)."""
        return needed_tables(self.schema, hints.tables)

    def script_of(self, tables: list[str], data: Data) -> str:
        """The replayable script of `data` (CREATE and INSERT statements)."""
        return script(self.schema, tables, data)

    def replay_witness(self, text: str, queries: dict[str, str]) -> dict[str, Execution]:
        """`replay` of a witness's script, as this verifier's engine runs it."""
        return replay(text, self.dialect, queries, self.limits, self.now)

    def assumptions_of(self, data: Data, observed: Observed) -> list[dict[str, Any]]:
        """What a witness holds that the database's rows never do."""
        return _assumptions(self.schema, data, observed)

    def execute_on(self, tables: list[str], data: Data, query: str) -> Execution:
        """Run `query` on the variant holding `data` in `tables` (built once, cached):
        how other packages (the gold audit) query a copy with its rows reordered."""
        with self._lock:
            return self._build(tables, data).engine.execute(query)

    # -- building -------------------------------------------------------------------------

    def _build(self, tables: list[str], data: Data, *, keep: bool = True) -> _Built:
        key = hashlib.sha256(repr((tables, sorted(data.items()))).encode()).hexdigest()
        found = self._built.get(key)
        if found is not None:
            self._built.move_to_end(key)
            return found
        if self._scratch is not None:
            built = self._build_duckdb(tables, data)
        else:
            self._count += 1
            path = self._folder / f"v{self._count}.sqlite"
            kept = build_sqlite(self.schema, tables, data, path)
            built = _Built(open_engine(self.dialect, path, self.limits), kept)
        if keep:
            self._built[key] = built
            while len(self._built) > self._capacity:
                _, old = self._built.popitem(last=False)
                self._drop(old)
        return built

    def _build_duckdb(self, tables: list[str], data: Data) -> _Built:
        """A catalog built by one script (the usual case: the rows already keep their
        foreign keys, and the engine refuses none), else statement by statement."""
        catalog = self._scratch.create()
        kept = consistent(self.schema, tables, data)
        try:
            catalog.write(script(self.schema, tables, kept))
            return _Built(catalog, kept)
        except Unrenderable:
            catalog.close()
            raise
        except Exception:  # a row the engine refuses: find it, one statement at a time
            catalog.close()
        catalog = self._scratch.create()
        return _Built(catalog, build(self.schema, tables, data, catalog.write))

    def _drop(self, built: _Built) -> None:
        path = getattr(built.engine, "path", None)
        built.engine.close()
        if isinstance(path, Path):
            path.unlink(missing_ok=True)
            Path(str(path) + ".wal").unlink(missing_ok=True)

    def close(self) -> None:
        """Close every variant's engine and remove the scratch folder."""
        with self._lock:
            if self._scratch is not None:
                self._scratch.close()  # every catalog with it
            else:
                for built in self._built.values():
                    self._drop(built)
            self._built.clear()
            shutil.rmtree(self._folder, ignore_errors=True)

    # -- checking -------------------------------------------------------------------------

    def check(self, gold: str, pred: str, differs: Differs) -> Outcome:
        """Compare `pred` with `gold` on the variants; the first difference found (in the
        variants' fixed order) is shrunk to a witness."""
        with self._lock:
            return self._check(gold, pred, differs)

    def _check(self, gold: str, pred: str, differs: Differs) -> Outcome:
        outcome = Outcome()
        hints = self.hints(gold).merge(self.hints(pred))
        tables = self.tables_for(hints)
        if not tables:
            outcome.note = "the queries read no table of the database: nothing to vary"
            return outcome
        base = self.base(tables)
        variants = generate(self.schema, base, hints, seed=self.settings.seed,
                            count=self.settings.variants,
                            observed_only=self.settings.observed_only)  # fmt: skip
        for variant in variants:
            built = self._build(tables, variant.data)
            why = self._differs(built, gold, pred, differs, outcome)
            if why is None:
                continue
            if hints.limited and self._tie_explained(tables, built.kept, gold, pred, differs):
                outcome.skip("differs only by tie order under LIMIT")
                continue
            observed = Observed(self.schema, base)
            outcome.counterexample = self._witness(tables, built.kept, gold, pred, differs,
                                                   hints, observed, variant.name)  # fmt: skip
            return outcome
        return outcome

    def _differs(self, built: _Built, gold: str, pred: str, differs: Differs,
                 outcome: Outcome | None = None) -> str | None:  # fmt: skip
        """Why `pred` differs from `gold` on a built variant (None when they agree or the
        variant cannot tell: a query that fails or is cut by the row cap)."""
        if gold not in built.golds:
            built.golds[gold] = built.engine.execute(gold)
        g = built.golds[gold]
        if not g.ok or g.outcome.truncated:
            if outcome is not None:
                outcome.skip("gold did not run" if not g.ok else "gold cut by max_rows")
            return None
        p = built.engine.execute(pred)
        if not p.ok or p.outcome.truncated:
            if outcome is not None:
                outcome.skip("prediction did not run" if not p.ok else "prediction cut by max_rows")
            return None
        if outcome is not None:
            outcome.checked += 1
        return differs(p, g)

    def _tie_explained(self, tables: list[str], kept: Data, gold: str, pred: str,
                       differs: Differs) -> bool:  # fmt: skip
        """Whether, with each table's rows stored in reverse order, the prediction's and
        the gold's results cross-match (a tie broken differently, not a wrong query)."""
        reverse = {t: list(reversed(rows)) for t, rows in kept.items()}
        flipped = self._build(tables, reverse, keep=False)
        try:
            forward = self._build(tables, kept)
            pairs = [(forward, flipped), (flipped, forward), (flipped, flipped)]
            for on_pred, on_gold in pairs:
                g = on_gold.engine.execute(gold)
                p = on_pred.engine.execute(pred)
                if g.ok and p.ok and differs(p, g) is None:
                    return True
            return False
        finally:
            self._drop(flipped)

    def _still(self, tables: list[str], data: Data, gold: str, pred: str, differs: Differs,
               limited: bool) -> Data | None:  # fmt: skip
        """The rows the engine kept when `data` still shows the difference, else None."""
        built = self._build(tables, data, keep=False)
        try:
            if self._differs(built, gold, pred, differs) is None:
                return None
        finally:
            self._drop(built)
        kept = built.kept
        if limited and self._tie_explained(tables, kept, gold, pred, differs):
            return None
        return kept

    def _witness(self, tables: list[str], kept: Data, gold: str, pred: str, differs: Differs,
                 hints: Hints, observed: Observed, variant: str) -> dict[str, Any]:  # fmt: skip
        """Shrink `kept` (delta debugging over its rows) and replay the witness's script."""
        steps = [self.settings.steps]

        def test(data: Data) -> Data | None:
            if steps[0] <= 0:
                return None
            steps[0] -= 1
            return self._still(tables, data, gold, pred, differs, hints.limited)

        current = kept
        for name in tables:  # whole tables first
            if current.get(name):
                smaller = test({**current, name: []})
                if smaller is not None:
                    current = smaller
        items = [(t, r) for t in tables for r in current.get(t, [])]
        minimal = True
        n = 2
        while len(items) >= 1:
            if steps[0] <= 0:
                minimal = False
                break
            chunks = [items[i * len(items) // n : (i + 1) * len(items) // n] for i in range(n)]
            chunks = [c for c in chunks if c]
            reduced = False
            for chunk in chunks:
                rest = [it for it in items if it not in chunk]
                if len(chunks) == 1 and rest:
                    continue
                smaller = test(_grouped(tables, rest))
                if smaller is not None:
                    items = [(t, r) for t in tables for r in smaller.get(t, [])]
                    n = max(n - 1, 2)
                    reduced = True
                    break
            if not reduced:
                if n >= len(items):
                    break
                n = min(len(items), 2 * n)
            if steps[0] <= 0 and not reduced:
                minimal = False
                break
        data = _grouped(tables, items)
        text = self.script_of(tables, data)
        runs = self.replay_witness(text, {"gold": gold, "prediction": pred})
        why = differs(runs["prediction"], runs["gold"])
        return {
            "variant": variant,
            "dialect": self.dialect,
            **({"now": self.now} if self.now is not None else {}),
            "script": text,
            "rows": sum(len(v) for v in data.values()),
            "minimal": minimal,
            "tables": {
                t: {
                    "columns": list(self.schema.tables[t].columns),
                    "rows": [[_jsonable(v) for v in r] for r in data.get(t, [])],
                }
                for t in tables
                if data.get(t)
            },
            "queries": {"gold": gold, "prediction": pred},
            "gold": _result(runs["gold"]),
            "prediction": _result(runs["prediction"]),
            "reason": why,
            "replayed": why is not None,
            "assumptions": self.assumptions_of(data, observed),
            "seed": self.settings.seed,
        }


def _sqlalchemy(engine: Engine) -> bool:
    """Whether `engine` is SQL on a database reached by a SQLAlchemy URL (not a file)."""
    return engine.language == "sql" and hasattr(engine, "url") and hasattr(engine, "backend")


def _grouped(tables: list[str], items: list[tuple[str, tuple[Any, ...]]]) -> Data:
    out: Data = {t: [] for t in tables}
    for t, row in items:
        out[t].append(row)
    return out


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return "0x" + bytes(value).hex()
    return str(value)


def result_record(execution: Execution) -> dict[str, Any]:
    """An execution as a witness stores it: columns and rows (JSON values), or the error."""
    return _result(execution)


def _result(execution: Execution) -> dict[str, Any]:
    if not execution.ok or execution.result is None:
        return {"error": f"{execution.outcome.kind}: {execution.outcome.message}"}
    result = execution.result
    return {"columns": list(result.columns),
            "rows": [[_jsonable(v) for v in row] for row in result.rows[:200]],
            "row_count": result.num_rows}  # fmt: skip


def _assumptions(schema: Schema, data: Data, observed: Observed) -> list[dict[str, Any]]:
    """What the witness holds that the database's rows (as read) never do: a NULL in a
    column without one, a number or date outside the column's range, a text never seen."""
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for t, rows in data.items():
        columns = list(schema.tables[t].columns)
        keyed = {c for key in schema.tables[t].keys for c in key}
        for row in rows:
            for c, v in zip(columns, row, strict=False):
                if observed.holds(t, c, v):
                    continue
                if v is None:
                    kind, text = "null", f"NULL in {t}.{c}, which holds none"
                else:
                    span = observed.range(t, c)
                    inside = False
                    if span is not None:
                        try:
                            inside = span[0] <= v <= span[1]
                        except TypeError:
                            inside = False
                    if inside:
                        continue
                    if c in keyed:
                        kind, text = "new_key", f"a new key value {v!r} in {t}.{c}"
                    elif span is not None:
                        kind = "outside_range"
                        text = f"{v!r} in {t}.{c}, outside its range [{span[0]!r}, {span[1]!r}]"
                    else:
                        kind, text = "unobserved", f"{v!r} in {t}.{c}, a value it never holds"
                key = (t, c, kind)
                if key in seen:
                    continue
                seen.add(key)
                out.append({"table": t, "column": c, "kind": kind, "value": _jsonable(v),
                            "text": text})  # fmt: skip
    return out
