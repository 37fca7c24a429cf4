"""The audit of a suite's golds (docs/audit.md): every gold query run on its database and
checked; golds of the same question compared; systems' predictions compared with the gold.

Each check works through the engines' common interface where it can (`gold_fails`,
`non_discriminating` on empty or all-NULL results and on empty tables, `conflicting_golds`,
`disputed`: SQL, KQL, Cypher alike); `nondeterministic` and `unknown_literal` read the
gold's text (SQL with sqlglot; KQL and Cypher with `_languages`) and run on copies in
another row order (a DuckDB or SQLite file; the embedded KQL engine's DuckDB file; a graph
copied into a scratch ArcadeDB) and through the database's own engine; the variants of
`non_discriminating` are the verified-verdicts work's (`queryeval.verify`).
"""

from __future__ import annotations

import re
import tempfile
import unicodedata
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.audit._model import KINDS, AuditReport, Finding
from queryeval.cases import Case
from queryeval.config import SuiteConfig
from queryeval.scorers import ScoringContext

if TYPE_CHECKING:
    from queryeval.engines import Engine, Execution

MAX_ROWS_SHOWN = 20  # rows of a result kept as evidence
_HOW = {
    "reversed": "a copy of the database with every table's rows inserted in reverse order "
    "(SQLite: the declared columns without constraints; queryeval.audit._permute)",
    "shuffled": "a copy of the database with every table's rows inserted in the order "
    "random.Random(f'{seed}:{table}').shuffle gives (queryeval.audit._permute)",
}
NEAR_MATCHES = 5
GRAPH_ROWS = 20_000  # nodes of a label (relationships of a type) a reordered graph copy holds
_GRAPH_HOW = (
    "a copy of the graph (every node and relationship, read through its engine) in a "
    "scratch ArcadeDB, created in {order} order, beside a copy created in the order it "
    "was read (queryeval.verify._graph; queryeval.audit._permute.reorder)"
)
_OPS = {"eq": "=", "neq": "!=", "in": "IN", "like": "LIKE", "ilike": "ILIKE", "ieq": "=~",
        "ineq": "!~", "iin": "in~", "starts": "STARTS WITH", "ends": "ENDS WITH",
        "contains": "CONTAINS"}  # fmt: skip


@dataclass
class Gold:
    """One gold query of one case, on its database."""

    case: Case
    index: int
    database: str
    text: str
    run: Execution | None = None


def golds_of(
    suite: SuiteConfig, cases: Sequence[Case], ctx: ScoringContext
) -> tuple[list[Gold], int]:
    """Every gold query with a database of the suite, and how many have none."""
    from queryeval.scorers.execution import case_database, target_query

    out: list[Gold] = []
    missing = 0
    for case in cases:
        database = case_database(case, None, ctx)
        for index, target in enumerate(case.targets):
            query = target_query(target)
            if query is None:
                continue
            name = query.database or database
            if name is None or name not in suite.databases:
                missing += 1
                continue
            out.append(Gold(case, index, name, query.text))
    return out, missing


def result_evidence(run: Execution | None) -> dict[str, Any]:
    """A result as evidence: columns, the first rows (JSON values) and the row count, or the
    engine's error."""
    from queryeval.verify import result_record

    if run is None:
        return {"error": "not run"}
    record = result_record(run)
    if "rows" in record:
        record["rows"] = record["rows"][:MAX_ROWS_SHOWN]
    return record


def database_evidence(suite: SuiteConfig, name: str, engine: Engine) -> dict[str, Any]:
    """Where the database is: its name in the suite, engine, dialect, file and config."""
    config = suite.databases[name]
    out: dict[str, Any] = {
        "name": name,
        "engine": config.engine,
        "dialect": engine.dialect,
        "language": engine.language,
    }
    for key in ("path", "fixture", "url"):
        value = getattr(config, key, None)
        if value:
            out[key] = str(value)
    if config.options:  # a KQL clock (`now`), limits: what a re-check needs
        out["options"] = {k: v for k, v in config.options.items()
                          if isinstance(v, str | int | float | bool)}  # fmt: skip
    path = getattr(engine, "path", None)
    if path is not None:
        out["file"] = str(path)
    return out


def policy_of(suite: SuiteConfig, case: Case) -> dict[str, Any]:
    """The comparison policy of a case (the suite's, the case's override on top)."""
    policy = dict(suite.comparison)
    override = case.metadata.get("comparison")
    if isinstance(override, dict):
        policy.update(override)
    return policy


def same_result(
    a: Execution, b: Execution, policy: dict[str, Any], gold: str, dialect: str
) -> bool:
    """Whether two executions' results are equal under the comparison policy."""
    from queryeval.metrics import compare_results

    if a.result is None or b.result is None:
        return False
    return bool(
        compare_results(a.result, b.result, **policy, gold_query=gold, language=dialect).exact
    )


def normalised_question(case: Case) -> str:
    """The user turns of a case, NFKC, case-folded, spaces collapsed, final punctuation off.

    >>> from queryeval.cases import Case
    >>> normalised_question(Case(id="a", conversation=[{"content": " How MANY  cats? "}]))
    'how many cats'
    """
    texts = [t.content for t in case.conversation if t.role == "user"] or [case.question]
    text = " | ".join(" ".join(unicodedata.normalize("NFKC", t).casefold().split()) for t in texts)
    return re.sub(r"[\s?.!]+$", "", text)


class Auditor:
    """The audit of one suite (see the module docstring): `run` returns the report."""

    def __init__(
        self,
        suite: SuiteConfig,
        cases: Sequence[Case],
        ctx: ScoringContext,
        *,
        variants: int = 12,
        seed: int = 0,
        checks: Collection[str] = KINDS,
    ) -> None:
        self.suite = suite
        self.checks = checks  # the kinds of finding looked for (`selftest`: two of them)
        self.cases = cases
        self.ctx = ctx
        self.variants = variants
        self.seed = seed
        self._scratch = tempfile.TemporaryDirectory(prefix="queryeval-audit-")
        self._permuted: dict[tuple[str, str], Engine | None] = {}
        self._twins: dict[str, Engine | None] = {}
        self._onvariants: dict[str, Any] = {}
        self._values: dict[tuple[str, str, str], list[Any]] = {}
        self._graphs: dict[str, Any] = {}
        self._trouble: dict[str, str | None] = {}
        self.report = AuditReport(suite.name, cases=len(cases))

    # -- the whole audit ------------------------------------------------------------------

    def run(
        self, predictions: dict[str, dict[str, str]] | None = None, agree: int = 3
    ) -> AuditReport:
        """Check every gold, then the golds of one question, then the predictions."""
        golds, missing = golds_of(self.suite, self.cases, self.ctx)
        self.report.golds = len(golds)
        self.report.not_executable = missing
        try:
            unusable: dict[str, list[Gold]] = {}
            for gold in golds:
                why = self._unusable(gold.database)
                if why is not None:
                    unusable.setdefault(gold.database, []).append(gold)
                    continue
                self.check(gold)
            for name, left in unusable.items():  # the evaluator's trouble, not the golds'
                self.report.notes.append(
                    f"database {name!r} cannot be used "
                    f"({self._trouble[name]}): {len(left)} gold(s) not checked"
                )
            golds = [g for g in golds if g.database not in unusable]
            self.report.golds = len(golds)
            self.report.unusable = sorted(unusable)
            self._conflicts(golds)
            if predictions:
                self.report.systems = sorted(predictions)
                if len(predictions) < agree:
                    self.report.notes.append(
                        f"disputed: {len(predictions)} system(s) given, fewer than the "
                        f"{agree} that must agree: not checked"
                    )
                else:
                    for gold in golds:
                        if gold.index == 0:
                            self._disputed(gold, predictions, agree)
        finally:
            self.close()
        return self.report

    def close(self) -> None:
        """Close the copies and variants made for the audit."""
        for engine in [*self._permuted.values(), *self._twins.values()]:
            if engine is not None:
                engine.close()
        for variants in [*self._onvariants.values(), *self._graphs.values()]:
            if variants is not None:
                variants.close()
        self._graphs.clear()
        self._permuted.clear()
        self._twins.clear()
        self._onvariants.clear()
        self._scratch.cleanup()

    def _unusable(self, database: str) -> str | None:
        """Why the evaluator cannot use `database` (None: it can), asked once."""
        if database not in self._trouble:
            try:
                self.ctx.engine(database)
                self._trouble[database] = None
            except Exception as exc:  # a server not reachable, a file it cannot open
                self._trouble[database] = " ".join(str(exc).split())[:300] or type(exc).__name__
        return self._trouble[database]

    def _add(self, gold: Gold, kind: str, message: str, **evidence: Any) -> None:
        engine = self.ctx.engine(gold.database)
        base = {
            "query": gold.text,
            "database": database_evidence(self.suite, gold.database, engine),
        }
        self.report.findings.append(
            Finding(gold.case.id, kind, message, gold.index, {**base, **evidence})
        )

    # -- one gold -------------------------------------------------------------------------

    def check(self, gold: Gold) -> list[Finding]:
        """The findings of one gold (those of `checks`), added to the report too."""
        before = len(self.report.findings)
        self._gold(gold)
        return self.report.findings[before:]

    def _gold(self, gold: Gold) -> None:
        engine = self.ctx.engine(gold.database)
        run = self.ctx.gold_execution(gold.database, gold.text)
        gold.run = run
        if not run.ok or run.result is None:
            o = run.outcome
            self._add(
                gold,
                "gold_fails",
                f"{o.kind}: {o.message}",
                outcome=o.kind,
                engine_message=o.message,
            )
            return
        if run.outcome.truncated:
            self._add(
                gold,
                "gold_fails",
                "the gold's result exceeds the row or size limit",
                outcome="truncated",
                result=result_evidence(run),
            )
            return
        sql = engine.language == "sql" and engine.dialect in ("duckdb", "sqlite")
        other = engine.language in ("kql", "cypher")
        order = "nondeterministic" in self.checks
        if not self._non_discriminating(gold, engine, run) and (sql or other) and order:
            self._nondeterministic(gold, engine, run)
        if (sql or other) and "unknown_literal" in self.checks:
            self._unknown_literals(gold, engine)

    def _non_discriminating(self, gold: Gold, engine: Engine, run: Execution) -> bool:
        result = run.result
        assert result is not None
        rows = result.rows
        if not rows:
            self._add(
                gold,
                "non_discriminating",
                "the gold returns no rows: any query returning nothing matches it",
                reason="empty",
                result=result_evidence(run),
            )
            return True
        if all(v is None for row in rows for v in row):
            self._add(
                gold,
                "non_discriminating",
                "the gold returns only NULL: any query returning NULL matches it",
                reason="null",
                result=result_evidence(run),
            )
            return True
        policy = policy_of(self.suite, gold.case)
        twin = self._twin(gold.database, engine)
        if twin is not None:
            empty = twin.execute(gold.text)
            if empty.ok and same_result(empty, run, policy, gold.text, engine.dialect):
                self._add(
                    gold,
                    "non_discriminating",
                    "the gold gives the same result on empty tables of the same schema: "
                    "a query that ignores the data matches it",
                    reason="same_on_empty",
                    result=result_evidence(run),
                    check="run the query on an empty copy of the database's schema",
                )
                return True
        variants = self._variants(gold.database, engine)
        if variants is None:
            return False
        runs = variants.results(gold.text)
        from queryeval.audit._variants import same_everywhere

        if same_everywhere([run, *runs], policy, gold.text, engine.dialect):
            self._add(
                gold,
                "non_discriminating",
                f"the gold gives the same result on all {len(runs)} database variants: "
                "whatever a prediction changes, it cannot be told apart",
                reason="same_on_variants",
                result=result_evidence(run),
                variants={
                    "count": len(runs),
                    "seed": self.seed,
                    "builder": "queryeval.verify.Verifier",
                    "settings": variants.settings(),
                    "results": [result_evidence(r) for r in runs[:5]],
                },
            )
            return True
        return False

    def _nondeterministic(self, gold: Gold, engine: Engine, run: Execution) -> None:
        from queryeval.audit._languages import cypher_patterns, kql_patterns
        from queryeval.audit._permute import ORDERS
        from queryeval.audit._static import order_patterns

        if engine.language == "kql":
            patterns = kql_patterns(gold.text)
        elif engine.language == "cypher":
            patterns = cypher_patterns(gold.text)
        else:
            patterns = order_patterns(gold.text, engine.dialect)
            if engine.dialect != "sqlite":
                patterns = [p for p in patterns if p != "bare column"]  # DuckDB refuses them
        if not patterns:
            return
        if engine.language == "cypher":
            self._nondeterministic_graph(gold, engine, run, patterns)
            return

        def copies() -> Iterator[tuple[str, Execution | None]]:
            for order in ORDERS:
                copy = self._permuted_engine(gold.database, engine, order)
                yield order, None if copy is None else copy.execute(gold.text)

        self._first_change(gold, engine, run, patterns, run, copies(),
                           "the tables' rows are stored in", _HOW.__getitem__)  # fmt: skip

    def _nondeterministic_graph(self, gold: Gold, engine: Engine, run: Execution,
                                patterns: list[str]) -> None:  # fmt: skip
        """A Cypher gold: its result on a copy of the graph created in the order it was
        read, beside copies created in reversed and shuffled order (a scratch ArcadeDB)."""
        from queryeval.audit._permute import ORDERS, reorder

        copied = self._graph_copy(gold.database, engine)
        if copied is None:
            return
        verifier, tables, data = copied
        forward = verifier.execute_on(tables, data, gold.text)
        if not forward.ok:
            return
        copies = (
            (order, verifier.execute_on(
                tables, {t: reorder(rows, order, self.seed, t) for t, rows in data.items()},
                gold.text))
            for order in ORDERS
        )  # fmt: skip
        self._first_change(gold, engine, run, patterns, forward, copies,
                           "the graph's nodes and relationships are created in",
                           lambda order: _GRAPH_HOW.format(order=order),
                           copy_result=result_evidence(forward))  # fmt: skip

    def _first_change(
        self,
        gold: Gold,
        engine: Engine,
        run: Execution,
        patterns: list[str],
        baseline: Execution,
        copies: Iterable[tuple[str, Execution | None]],
        what: str,
        how: Callable[[str], str],
        **evidence: Any,
    ) -> None:
        """A `nondeterministic` finding for the first copy (its row order, its result; None:
        no copy, stop) whose result differs from `baseline`; the copies are run lazily."""
        policy = policy_of(self.suite, gold.case)
        for order, other in copies:
            if other is None:
                return
            if other.ok and not same_result(other, baseline, policy, gold.text, engine.dialect):
                self._add(
                    gold,
                    "nondeterministic",
                    f"{', '.join(patterns)}: the result changes when {what} {order} order",
                    patterns=patterns,
                    result=result_evidence(run),
                    permuted={
                        "order": order,
                        "seed": self.seed,
                        "how": how(order),
                        "result": result_evidence(other),
                        **evidence,
                    },
                )
                return

    def _graph_copy(self, database: str, engine: Engine) -> Any:
        """(verifier, tables, rows) of the whole graph, read once; None (noted) when the
        graph is larger than GRAPH_ROWS a label or cannot be copied."""
        from queryeval.verify import Settings, Verifier

        if database not in self._graphs:
            self._graphs[database] = None
            try:
                verifier = Verifier(engine, Settings(seed=self.seed, rows=GRAPH_ROWS))
            except Exception as exc:  # a graph it cannot copy: noted, no check
                self.report.notes.append(f"nondeterministic: no copy of {database!r}: {exc}")
                return None
            try:
                data = verifier.base(list(verifier.schema.tables))
            except Exception as exc:  # its rows cannot be read: the scratch is released
                verifier.close()
                self.report.notes.append(f"nondeterministic: no copy of {database!r}: {exc}")
                return None
            if any(len(rows) >= GRAPH_ROWS for rows in data.values()):
                verifier.close()
                self.report.notes.append(f"nondeterministic: {database!r} has more than "
                                         f"{GRAPH_ROWS} nodes of a label: not copied")  # fmt: skip
                return None
            self._graphs[database] = verifier
        verifier = self._graphs[database]
        if verifier is None:
            return None
        tables = list(verifier.schema.tables)
        return verifier, tables, verifier.base(tables)

    def _unknown_literals(self, gold: Gold, engine: Engine) -> None:
        from queryeval.audit import _languages as lang
        from queryeval.audit._static import comparisons

        try:
            schema = engine.cached_schema()
        except Exception:  # no schema: no literal to resolve
            return
        if engine.language == "kql":
            found = lang.kql_comparisons(gold.text, _column_names(schema))
            occurrence, values = lang.kql_occurrence, lang.kql_values
        elif engine.language == "cypher":
            found = lang.cypher_comparisons(gold.text, _graph_keys(schema))
            occurrence, values = lang.cypher_occurrence, lang.cypher_values
        else:
            found = comparisons(gold.text, engine.dialect, _column_names(schema))
            dialect = engine.dialect

            def occurrence(comp: Any) -> str:
                return _occurrence_query(dialect, comp)

            def values(table: str, column: str, limit: int = 5000) -> str:
                return _values_query(dialect, table, column, limit)

        for comp in found:
            check = occurrence(comp)
            if self._occurs(engine, check):
                continue
            near = self._near(engine, comp, values(comp.table, comp.column))
            hint = f"; near: {', '.join(repr(v) for v, _ in near)}" if near else ""
            self._add(
                gold,
                "unknown_literal",
                f"{comp.literal!r} never occurs in {comp.table}.{comp.column} "
                f"(compared with {_OPS[comp.op]}){hint}",
                table=comp.table,
                column=comp.column,
                operator=comp.op,
                literal=comp.literal,
                check=check,
                near_matches=[{"value": v, "similarity": round(s, 1)} for v, s in near],
            )

    # -- helpers --------------------------------------------------------------------------

    def _occurs(self, engine: Engine, check_query: str) -> bool:
        check = engine.execute(check_query)
        if not check.ok or check.result is None:
            return True  # cannot tell: no finding
        return bool(check.result.rows)

    def _near(self, engine: Engine, comp: Any, values_query: str) -> list[tuple[Any, float]]:
        from rapidfuzz import fuzz, process, utils

        key = (engine.name, comp.table, comp.column)
        if key not in self._values:
            run = engine.execute(values_query)
            rows = run.result.rows if run.ok and run.result is not None else []
            self._values[key] = [str(r[0]) for r in rows if r[0] is not None]
        values = self._values[key]
        target = (
            comp.literal.replace("%", "").replace("_", " ") if "like" in comp.op else comp.literal
        )
        found = process.extract(
            target,
            values,
            scorer=fuzz.WRatio,
            processor=utils.default_process,
            limit=NEAR_MATCHES,
            score_cutoff=70,
        )
        return [(value, float(score)) for value, score, _ in found]

    def _twin(self, database: str, engine: Engine) -> Engine | None:
        from queryeval.engines import empty_twin

        if database not in self._twins:
            folder = Path(self._scratch.name) / f"empty-{len(self._twins)}"
            try:
                self._twins[database] = empty_twin(engine, folder)
            except Exception:  # an engine it cannot copy: no check on empty tables
                self._twins[database] = None
        return self._twins[database]

    def _variants(self, database: str, engine: Engine) -> Any:
        from queryeval.verify import supported

        if database not in self._onvariants:
            if supported(engine) is not None or self.variants <= 0:
                self._onvariants[database] = None
            else:
                from queryeval.audit._variants import GoldOnVariants

                self._onvariants[database] = GoldOnVariants(engine, self.variants, self.seed)
        return self._onvariants[database]

    def _permuted_engine(self, database: str, engine: Engine, order: str) -> Engine | None:
        from queryeval.audit._permute import permuted_copy
        from queryeval.verify import open_engine

        key = (database, order)
        if key not in self._permuted:
            path = getattr(engine, "path", None)
            copy: Engine | None = None
            if isinstance(path, Path):
                kql = engine.language == "kql"  # its tables are a DuckDB file's
                dialect = "duckdb" if kql else engine.dialect
                suffix = ".sqlite" if dialect == "sqlite" else ".duckdb"
                target = Path(self._scratch.name) / f"{order}-{len(self._permuted)}{suffix}"
                try:
                    permuted_copy(dialect, path, target, order, self.seed)
                    if kql:
                        copy = self._kql_engine(database, target)
                    else:
                        copy = open_engine(engine.dialect, target, engine.limits)
                except Exception as exc:  # a database it cannot copy: noted, no check
                    self.report.notes.append(
                        f"nondeterministic: no {order} copy of {database!r}: {exc}"
                    )
            self._permuted[key] = copy
        return self._permuted[key]

    def _kql_engine(self, database: str, path: Path) -> Engine:
        """The suite's KQL engine configuration (its clock, functions, limits) on the
        DuckDB file at `path`."""
        from queryeval.engines import build_engine

        config = self.suite.databases[database].model_copy(
            update={"path": str(path), "fixture": None}
        )
        return build_engine(f"{database}:permuted", config, self.suite.base_dir, path.parent)

    # -- across cases ---------------------------------------------------------------------

    def _conflicts(self, golds: list[Gold]) -> None:
        groups: dict[tuple[str, str], list[Gold]] = {}
        for gold in golds:
            if gold.index == 0 and gold.run is not None and gold.run.ok:
                groups.setdefault((normalised_question(gold.case), gold.database), []).append(gold)
        for (question, _), members in groups.items():
            if len({g.case.id for g in members}) < 2:
                continue
            first = members[0]
            engine = self.ctx.engine(first.database)
            policy = policy_of(self.suite, first.case)
            clusters: list[list[Gold]] = []
            for g in members:
                for cluster in clusters:
                    assert g.run is not None and cluster[0].run is not None
                    if same_result(g.run, cluster[0].run, policy, cluster[0].text, engine.dialect):
                        cluster.append(g)
                        break
                else:
                    clusters.append([g])
            if len(clusters) < 2:
                continue
            others = [
                {"case_id": g.case.id, "query": g.text, "result": result_evidence(g.run)}
                for g in members
            ]
            for g in members:
                self._add(
                    g,
                    "conflicting_golds",
                    f"{len(members)} cases ask {question!r} on {g.database!r} with golds "
                    f"giving {len(clusters)} different results",
                    question=question,
                    golds=others,
                )

    def _disputed(self, gold: Gold, predictions: dict[str, dict[str, str]], agree: int) -> None:
        run = gold.run
        if run is None or not run.ok or run.result is None:
            return
        engine = self.ctx.engine(gold.database)
        policy = policy_of(self.suite, gold.case)
        clusters: list[tuple[Execution, list[tuple[str, str]]]] = []
        for system in sorted(predictions):
            query = predictions[system].get(gold.case.id)
            if not query:
                continue
            pred = self.ctx.execute(gold.database, query)
            if not pred.ok or pred.result is None or pred.outcome.truncated:
                continue
            if same_result(pred, run, policy, gold.text, engine.dialect):
                continue
            for result, members in clusters:
                if same_result(pred, result, policy, gold.text, engine.dialect):
                    members.append((system, query))
                    break
            else:
                clusters.append((pred, [(system, query)]))
        for result, members in clusters:
            if len(members) >= agree:
                names = [s for s, _ in members]
                self._add(
                    gold,
                    "disputed",
                    f"{len(members)} systems ({', '.join(names)}) agree on one result "
                    "that differs from the gold's",
                    gold_result=result_evidence(run),
                    majority_result=result_evidence(result),
                    systems=[{"system": s, "query": q} for s, q in members],
                )


def _column_names(schema: dict[str, Any]) -> dict[str, list[str]]:
    """{table: column names} from an engine's schema description."""
    out: dict[str, list[str]] = {}
    for table, columns in (schema.get("tables") or {}).items():
        if isinstance(columns, dict):
            out[str(table)] = [str(c) for c in columns]
        elif isinstance(columns, list | tuple):
            out[str(table)] = [
                str(c.get("name")) if isinstance(c, dict) else str(c) for c in columns
            ]
    return out


def _graph_keys(schema: dict[str, Any]) -> dict[str, list[str]]:
    """{label or [:TYPE]: property keys} from a Cypher engine's schema description."""
    out: dict[str, list[str]] = {}
    for label, keys in (schema.get("labels") or {}).items():
        out[str(label)] = [str(k) for k in keys or []]
    for rel_type, keys in (schema.get("relationship_types") or {}).items():
        out[f"[:{rel_type}]"] = [str(k) for k in keys or []]
    return out


def _values_query(dialect: str, table: str, column: str, limit: int = 5000) -> str:
    """The SQL query listing the column's distinct values as text."""
    q, c = _quote(dialect, table), _quote(dialect, column)
    return f"SELECT DISTINCT CAST({c} AS TEXT) FROM {q} WHERE {c} IS NOT NULL LIMIT {int(limit)}"


def _quote(dialect: str, name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _occurrence_query(dialect: str, comp: Any) -> str:
    """The query that shows whether the literal occurs in the column (a row: it does).

    >>> from queryeval.audit._static import Comparison
    >>> _occurrence_query("sqlite", Comparison("t", "c", "like", "a%"))
    'SELECT 1 FROM "t" WHERE "c" LIKE \\'a%\\' LIMIT 1'
    """
    op = {"like": "LIKE", "ilike": "ILIKE"}.get(comp.op, "=")
    return (
        f"SELECT 1 FROM {_quote(dialect, comp.table)} WHERE {_quote(dialect, comp.column)} "
        f"{op} {_literal(comp.literal)} LIMIT 1"
    )
