"""The audit of a suite's golds (docs/audit.md): every gold query run on its database and
checked; golds of the same question compared; systems' predictions compared with the gold.

Each check works through the engines' common interface where it can (`gold_fails`,
`non_discriminating` on empty or all-NULL results and on empty tables, `conflicting_golds`,
`disputed`: SQL, KQL, Cypher alike); `nondeterministic`, `unknown_literal` and the variants
of `non_discriminating` read a DuckDB or SQLite file and parse SQL (sqlglot).
"""

from __future__ import annotations

import re
import tempfile
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from queryeval.audit._model import AuditReport, Finding
from queryeval.cases import Case
from queryeval.config import SuiteConfig
from queryeval.engines import Engine, Execution
from queryeval.scorers import ScoringContext

MAX_ROWS_SHOWN = 20  # rows of a result kept as evidence
_HOW = {
    "reversed": "a copy of the database with every table's rows inserted in reverse order "
    "(SQLite: the declared columns without constraints; queryeval.audit._permute)",
    "shuffled": "a copy of the database with every table's rows inserted in the order "
    "random.Random(f'{seed}:{table}').shuffle gives (queryeval.audit._permute)",
}
NEAR_MATCHES = 5


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
    ) -> None:
        self.suite = suite
        self.cases = cases
        self.ctx = ctx
        self.variants = variants
        self.seed = seed
        self._scratch = tempfile.TemporaryDirectory(prefix="queryeval-audit-")
        self._permuted: dict[tuple[str, str], Engine | None] = {}
        self._twins: dict[str, Engine | None] = {}
        self._onvariants: dict[str, Any] = {}
        self._values: dict[tuple[str, str, str], list[Any]] = {}
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
                self._gold(gold)
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
        for variants in self._onvariants.values():
            if variants is not None:
                variants.close()
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
        if not self._non_discriminating(gold, engine, run) and sql:
            self._nondeterministic(gold, engine, run)
        if sql:
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
        from queryeval.audit._permute import ORDERS
        from queryeval.audit._static import order_patterns

        patterns = order_patterns(gold.text, engine.dialect)
        if engine.dialect != "sqlite":
            patterns = [p for p in patterns if p != "bare column"]  # DuckDB refuses them
        if not patterns:
            return
        policy = policy_of(self.suite, gold.case)
        for order in ORDERS:
            copy = self._permuted_engine(gold.database, engine, order)
            if copy is None:
                return
            other = copy.execute(gold.text)
            if other.ok and not same_result(other, run, policy, gold.text, engine.dialect):
                self._add(
                    gold,
                    "nondeterministic",
                    f"{', '.join(patterns)}: the result changes when the tables' rows "
                    f"are stored in {order} order",
                    patterns=patterns,
                    result=result_evidence(run),
                    permuted={
                        "order": order,
                        "seed": self.seed,
                        "how": _HOW[order],
                        "result": result_evidence(other),
                    },
                )
                return

    def _unknown_literals(self, gold: Gold, engine: Engine) -> None:
        from queryeval.audit._static import comparisons

        try:
            schema = engine.cached_schema()
        except Exception:  # no schema: no literal to resolve
            return
        for comp in comparisons(gold.text, engine.dialect, _column_names(schema)):
            if self._occurs(engine, comp):
                continue
            near = self._near(engine, comp)
            what = {"eq": "=", "neq": "!=", "in": "IN", "like": "LIKE", "ilike": "ILIKE"}[comp.op]
            hint = f"; near: {', '.join(repr(v) for v, _ in near)}" if near else ""
            self._add(
                gold,
                "unknown_literal",
                f"{comp.literal!r} never occurs in {comp.table}.{comp.column} "
                f"(compared with {what}){hint}",
                table=comp.table,
                column=comp.column,
                operator=comp.op,
                literal=comp.literal,
                check=_occurrence_query(engine.dialect, comp),
                near_matches=[{"value": v, "similarity": round(s, 1)} for v, s in near],
            )

    # -- helpers --------------------------------------------------------------------------

    def _occurs(self, engine: Engine, comp: Any) -> bool:
        check = engine.execute(_occurrence_query(engine.dialect, comp))
        if not check.ok or check.result is None:
            return True  # cannot tell: no finding
        return bool(check.result.rows)

    def _near(self, engine: Engine, comp: Any) -> list[tuple[Any, float]]:
        from rapidfuzz import fuzz, process, utils

        key = (engine.name, comp.table, comp.column)
        if key not in self._values:
            q = _quote(engine.dialect, comp.table)
            c = _quote(engine.dialect, comp.column)
            run = engine.execute(
                f"SELECT DISTINCT CAST({c} AS TEXT) FROM {q} WHERE {c} IS NOT NULL LIMIT 5000"
            )
            rows = run.result.rows if run.ok and run.result is not None else []
            self._values[key] = [r[0] for r in rows if r[0] is not None]
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
                suffix = ".sqlite" if engine.dialect == "sqlite" else ".duckdb"
                target = Path(self._scratch.name) / f"{order}-{len(self._permuted)}{suffix}"
                try:
                    permuted_copy(engine.dialect, path, target, order, self.seed)
                    copy = open_engine(engine.dialect, target, engine.limits)
                except Exception as exc:  # a database it cannot copy: noted, no check
                    self.report.notes.append(
                        f"nondeterministic: no {order} copy of {database!r}: {exc}"
                    )
            self._permuted[key] = copy
        return self._permuted[key]

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
