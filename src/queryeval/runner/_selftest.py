"""Self-test of a suite: every gold is scored against its own case by the suite's scorers,
as if a system had answered with it, one scorer family after the other: execution scorers run
the gold query (`execution_match`, `executes`, ...), query-text scorers compare its text,
Weaviate scorers its query, term selection its selection, keyword answers its answer,
retrieval its relevant ids. The share of golds that get full marks from every scorer is the
suite's ceiling; below 1.0 a gold is broken (fails, times out, is nondeterministic under the
comparison policy, lacks a keyword it expects ...), or the metric cannot reach 1 (recall@k
with more relevant ids than k).

Scorers that ask a judge or compare embeddings are not self-tested (an answer is similar to
itself by construction; a judge costs calls): the report names them. A suite whose scorers
run no query but that has databases still runs every gold (`execution_match`), as before.
Golds that cannot be executed (no database of the suite for the case) are counted, not listed
("nothing executable" when none can); a database the evaluator cannot use (a server not
reachable, a file it cannot open) is reported once, with the golds it left unchecked.

`gold_findings` also flags golds that cannot tell a right prediction from a wrong one
(`non-discriminating`): a gold that returns no rows (any query returning nothing matches
it), or one that returns the same result on empty tables of the same schema (a query that
ignores the data matches it: a `count()` of an empty `ago()` window is 0 either way); and
golds the language's independent validity check finds invalid against their database's
schema (`invalid`: KQL by Kusto.Language), even when the engine runs them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queryeval.cases import Attempt, Case, Output, Score, Target
from queryeval.config import ScorerConfig, SuiteConfig
from queryeval.engines import Engine, empty_twin
from queryeval.errors import InputError
from queryeval.scorers import Scorer, ScoringContext


@dataclass(frozen=True)
class SelftestItem:
    """One gold scored by one scorer: `ok` (full marks), `mismatch` (below), or
    `gold_error` (the gold fails as a prediction, or could not be scored)."""

    case_id: str
    gold: int
    status: str  # ok | mismatch | gold_error
    explanation: str = ""
    scorer: str = "execution_match"

    def line(self) -> str:
        """One line for a terminal."""
        return (
            f"{self.case_id} (gold {self.gold}): {self.scorer}: {self.status}: {self.explanation}"
        )


@dataclass(frozen=True)
class GoldFinding:
    """A problem with one gold: `failed` (it does not run), `non_discriminating`, or
    `order_dependent` (its result depends on row order or ties: verify.gold_order_problems)."""

    case_id: str
    gold: int
    kind: str  # failed | invalid | no_rows | same_on_empty | order_dependent
    message: str

    def line(self) -> str:
        """One line for a terminal."""
        return f"{self.case_id} (gold {self.gold}): {self.kind.replace('_', ' ')}: {self.message}"


@dataclass(frozen=True)
class ScorerCheck:
    """What one scorer's self-test covered: golds checked and with full marks."""

    label: str
    checked: int = 0
    full: int = 0

    @property
    def ceiling(self) -> float | None:
        """Golds with full marks / golds checked (None when none was)."""
        return self.full / self.checked if self.checked else None


@dataclass(frozen=True)
class SelftestReport:
    items: list[SelftestItem] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # cases without a gold the scorers read
    findings: list[GoldFinding] = field(default_factory=list)  # non-discriminating golds
    scorers: list[ScorerCheck] = field(default_factory=list)
    not_tested: dict[str, str] = field(default_factory=dict)  # scorer label -> why not
    not_executable: int = 0  # golds an execution scorer could not run: no database named
    nothing_executable: str | None = None  # why no gold could be executed, when none could
    # the evaluator's trouble, once per database: (database, message, golds left unchecked)
    trouble: list[tuple[str, str, int]] = field(default_factory=list)

    @property
    def checked(self) -> int:
        """Golds scored by at least one scorer."""
        return len({(i.case_id, i.gold) for i in self.items})

    @property
    def ceiling(self) -> float | None:
        """Golds with full marks from every scorer that checked them / golds checked (None
        when none could be checked)."""
        golds: dict[tuple[str, int], bool] = {}
        for i in self.items:
            key = (i.case_id, i.gold)
            golds[key] = golds.get(key, True) and i.status == "ok"
        return sum(golds.values()) / len(golds) if golds else None

    @property
    def failures(self) -> list[SelftestItem]:
        return [i for i in self.items if i.status != "ok"]


def selftest(suite: SuiteConfig, cases: Sequence[Case], ctx: ScoringContext) -> SelftestReport:
    """Score each gold of each case with the suite's scorers (see the module docstring)."""
    from queryeval.scorers import build_scorers

    testable, not_tested = _testable(build_scorers(suite), suite, cases, ctx)
    trouble = _unusable_databases(suite, cases, testable, ctx)
    items: list[SelftestItem] = []
    skipped: list[str] = []
    left: dict[str, int] = dict.fromkeys(trouble, 0)
    not_executable = 0
    executable = 0
    runner = _Runner()
    try:
        prepared = _prepare(testable, cases, ctx, not_tested)
        for case in cases:
            golds = [(i, a) for i, t in enumerate(case.targets) if (a := gold_attempt(t))]
            if not golds:
                skipped.append(case.id)
                continue
            bad = _case_databases(case, prepared.values(), ctx) & set(trouble)
            if bad:
                left[sorted(bad)[0]] += len(golds)
                continue
            for label, scorer in prepared.items():
                if scorer.not_applicable(case) is not None:
                    continue
                if scorer.needs_database:
                    database = _database(case, scorer, ctx)
                    if database is None or database not in suite.databases:
                        not_executable += len(golds)
                        continue
                    executable += 1
                for index, attempt in golds:
                    if not _reads(scorer, attempt):
                        continue
                    score = runner.score(scorer, case, Output(attempts=[attempt]), ctx)
                    items.append(SelftestItem(case.id, index, _status(score),
                                              score.explanation, label))  # fmt: skip
    finally:
        runner.close()
    usable = [name for name in suite.databases if name not in trouble]
    findings = [f for f in gold_findings(suite, cases, ctx, skip=trouble) if f.kind != "failed"]
    checks = [_check(label, items) for label in prepared]
    nothing = None
    if not executable and not trouble and _has_gold_queries(cases):
        nothing = (
            "the suite has no database: the gold queries were not run"
            if not usable
            else "no case names a database of the suite: the gold queries were not run"
        )
    return SelftestReport(
        items=items,
        skipped=skipped,
        findings=findings,
        scorers=checks,
        not_tested=not_tested,
        not_executable=not_executable,
        nothing_executable=nothing,
        trouble=[(name, why, left[name]) for name, why in trouble.items()],
    )


# --- the gold as a system's answer ----------------------------------------------------------


def gold_attempt(target: Target) -> Attempt | None:
    """The attempt a system answering with this gold would make: its query (with its
    language and database), Weaviate query, selection, answer and relevant ids, as far as
    the target has them; None for a target with none (expected rows only).

    >>> gold_attempt(Target(query="SELECT 1")).query
    'SELECT 1'
    >>> gold_attempt(Target(relevant={"p1": 1.0, "p2": 2.0})).retrieved
    ['p2', 'p1']
    """
    from queryeval.scorers.execution import target_query

    parts: dict[str, Any] = {}
    query = target_query(target)
    if query is not None:
        parts.update(query=query.text, language=query.language)
        if query.database:
            parts["database"] = query.database
    if target.weaviate_query is not None:
        parts["weaviate_query"] = target.weaviate_query
    if target.indicator_selection is not None:
        parts["indicator_selection"] = target.indicator_selection
    if target.answer is not None:
        parts["answer"] = (
            target.answer.text if not isinstance(target.answer, str) else target.answer
        )
    if target.relevant:
        relevant = target.relevant
        if isinstance(relevant, dict):  # the best-graded first
            ranked = sorted((g, -i, r) for i, (r, g) in enumerate(relevant.items()) if g > 0)
            parts["retrieved"] = [r for _, _, r in reversed(ranked)]
        else:
            parts["retrieved"] = list(relevant)
    return Attempt(**parts) if parts else None


def _reads(scorer: Scorer, attempt: Attempt) -> bool:
    """Whether the gold attempt has what `scorer` reads."""
    reads = scorer.reads
    if reads in ("query", "attempts"):
        return attempt.query is not None
    if reads == "weaviate":
        return attempt.weaviate_query is not None or attempt.query is not None
    if reads == "output":
        return True
    return getattr(attempt, reads, None) is not None


def _status(score: Score) -> str:
    if score.status != "ok" or score.failure_reason is not None:
        return "gold_error"
    if score.passed is True or (score.passed is None and (score.value or 0.0) >= 1.0 - 1e-9):
        return "ok"
    return "mismatch"


def _check(label: str, items: list[SelftestItem]) -> ScorerCheck:
    mine = [i for i in items if i.scorer == label]
    return ScorerCheck(label, len(mine), sum(1 for i in mine if i.status == "ok"))


# --- which scorers, which databases ------------------------------------------------------------


def _testable(
    scorers: dict[str, Scorer], suite: SuiteConfig, cases: Sequence[Case], ctx: ScoringContext
) -> tuple[dict[str, Scorer], dict[str, str]]:
    """The scorers a gold can be scored by (a composite's own components in its place), and
    why the others are not; `execution_match` added when no scorer runs the golds but the
    suite has databases."""
    from queryeval.scorers import build_scorer

    testable: dict[str, Scorer] = {}
    not_tested: dict[str, str] = {}
    todo = list(scorers.items())
    while todo:
        label, scorer = todo.pop(0)
        components = getattr(scorer, "components", None)
        if isinstance(components, list) and components:
            todo[:0] = [(f"{label}.{c.label}", c) for c in components]
            continue
        why = _not_self_tested(scorer)
        if why is not None:
            not_tested[label] = why
        else:
            testable[label] = scorer
    runs_golds = any(s.needs_database for s in testable.values())
    resolved = any(_database_of(case, None, ctx) in suite.databases for case in cases)
    if suite.databases and not runs_golds and resolved:
        testable["execution_match"] = build_scorer(ScorerConfig(name="execution_match"))
    return testable, not_tested


def _not_self_tested(scorer: Scorer) -> str | None:
    from queryeval.scorers import judged_scorers

    if next(judged_scorers([scorer]), None) is not None:
        return "asks a judge"
    method = getattr(scorer, "method", None)
    if scorer.reads == "answer" and method not in (None, "keyword", "keyword_legacy"):
        return f"{method}: an answer compared with itself is similar by construction"
    return None


def _prepare(
    scorers: dict[str, Scorer],
    cases: Sequence[Case],
    ctx: ScoringContext,
    not_tested: dict[str, str],
) -> dict[str, Scorer]:
    prepared: dict[str, Scorer] = {}
    for label, scorer in scorers.items():
        try:
            scorer.prepare(cases, ctx)
        except InputError:
            raise
        except Exception as exc:  # the evaluator's: reported, the other scorers go on
            not_tested[label] = f"could not be prepared: {_short(exc)}"
            continue
        prepared[label] = scorer
    return prepared


def _database_of(case: Case, fallback: str | None, ctx: ScoringContext) -> str | None:
    from queryeval.scorers.execution import case_database

    return case_database(case, fallback, ctx)


def _database(case: Case, scorer: Scorer, ctx: ScoringContext) -> str | None:
    return _database_of(case, scorer.database_option, ctx)


def _case_databases(case: Case, scorers: Any, ctx: ScoringContext) -> set[str]:
    """Every database of the suite a scorer would use for `case`."""
    from queryeval.scorers.execution import target_query

    names = {_database_of(case, None, ctx)}
    names.update(_database(case, s, ctx) for s in scorers)
    names.update(q.database for t in case.targets if (q := target_query(t)) and q.database)
    known = ctx.suite.databases if ctx.suite is not None else {}
    return {n for n in names if n is not None and n in known}


def _unusable_databases(
    suite: SuiteConfig, cases: Sequence[Case], scorers: dict[str, Scorer], ctx: ScoringContext
) -> dict[str, str]:
    """The databases the golds need that the evaluator cannot use, with why (each tried
    once: a server not reachable, a file it cannot open)."""
    needed: set[str] = set()
    for case in cases:
        needed |= _case_databases(case, scorers.values(), ctx)
    trouble: dict[str, str] = {}
    for name in suite.databases:
        if name not in needed:
            continue
        try:
            ctx.engine(name)
        except InputError:
            raise
        except Exception as exc:
            trouble[name] = _short(exc)
    return trouble


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


def _has_gold_queries(cases: Sequence[Case]) -> bool:
    from queryeval.scorers.execution import target_query

    return any(target_query(t) is not None for c in cases for t in c.targets)


class _Runner:
    """Scores one gold with one scorer: plain scorers directly, coroutine ones on one event
    loop kept for the whole self-test."""

    def __init__(self) -> None:
        self._loop: Any = None

    def score(self, scorer: Scorer, case: Case, output: Output, ctx: ScoringContext) -> Score:
        from queryeval.scorers import ascore_case, score_case

        if not scorer.is_async:
            return score_case(scorer, case, output, ctx)
        if self._loop is None:
            import asyncio

            self._loop = asyncio.new_event_loop()
        result: Score = self._loop.run_until_complete(ascore_case(scorer, case, output, ctx))
        return result

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()


def gold_findings(
    suite: SuiteConfig, cases: Sequence[Case], ctx: ScoringContext, *, skip: Collection[str] = ()
) -> list[GoldFinding]:
    """Every gold query run (from the gold cache when it ran before) and checked: does it
    run, does it return rows, does it return something else than on empty tables (the
    databases in `skip` are left alone: the evaluator cannot use them)."""
    import tempfile

    from queryeval.metrics import compare_results
    from queryeval.scorers.execution import case_database, target_query

    found: list[GoldFinding] = []
    twins: dict[str, Engine | None] = {}
    verifiers: dict[int, Any] = {}  # engine id -> its Verifier (variants shared by its golds)
    scratch = tempfile.TemporaryDirectory(prefix="queryeval-empty-")
    try:
        for case in cases:
            database = case_database(case, None, ctx)
            for index, target in enumerate(case.targets):
                query = target_query(target)
                if query is None:
                    continue
                name = query.database or database
                if name is None or name not in suite.databases or name in skip:
                    continue
                invalid = _invalid(ctx.engine(name), query.text)
                if invalid is not None:
                    found.append(GoldFinding(case.id, index, "invalid", invalid))
                run = ctx.gold_execution(name, query.text)
                if not run.ok:
                    o = run.outcome
                    found.append(GoldFinding(case.id, index, "failed", f"{o.kind}: {o.message}"))
                    continue
                assert run.result is not None
                if not run.result.rows:
                    why = "the gold returns no rows: a query returning nothing matches it"
                    found.append(GoldFinding(case.id, index, "no_rows", why))
                    continue
                if name not in twins:
                    folder = Path(scratch.name) / str(len(twins))
                    twins[name] = empty_twin(ctx.engine(name), folder)
                twin = twins[name]
                if twin is None:
                    continue
                empty = twin.execute(query.text)
                if not empty.ok or empty.result is None:
                    continue
                policy = dict(suite.comparison)
                override = case.metadata.get("comparison")
                if isinstance(override, dict):
                    policy.update(override)
                same = compare_results(empty.result, run.result, **policy, gold_query=query.text,
                                       language=twin.dialect)  # fmt: skip
                if same.exact:
                    why = ("the gold gives the same result on empty tables: a query that "
                           "ignores the data matches it")  # fmt: skip
                    found.append(GoldFinding(case.id, index, "same_on_empty", why))
                    continue
                if suite.databases[name].engine in _VARIANT_ENGINES and _ORDER_SENSITIVE.search(
                    query.text
                ):
                    found += _order_findings(
                        case.id, index, ctx.engine(name), query.text, verifiers
                    )
    finally:
        for verifier in verifiers.values():
            verifier.close()
        for twin in twins.values():
            if twin is not None:
                twin.close()
        scratch.cleanup()
    return found


# Engines whose databases the verified-verdicts variants can copy (docs/verified.md), and the
# constructs under which a result can depend on row order or ties (a LIMIT, top or take; a
# column SQLite picks from a group; arg_max and any in KQL); other golds are not searched.
_VARIANT_ENGINES = frozenset({"duckdb", "sqlite", "kql", "duckdb-kql"})
_ORDER_SENSITIVE = re.compile(
    r"\b(limit|top|take|fetch|group\s+by|summarize|arg_max|arg_min|any)\b", re.IGNORECASE
)


def _order_findings(
    case_id: str, index: int, engine: Engine, gold: str, verifiers: dict[int, Any]
) -> list[GoldFinding]:
    """`order_dependent` when the gold's result changes with the order its rows are stored
    in (ties under ORDER BY ... LIMIT, a LIMIT without ORDER BY): the gold on its own
    database variants, stored forward and reversed (queryeval.verify.gold_order_problems)."""
    from queryeval.verify import Settings, Verifier, gold_order_problems

    key = id(engine)
    if key not in verifiers:
        verifiers[key] = Verifier(engine, Settings())
    try:
        problems = gold_order_problems(engine, gold, verifier=verifiers[key])
    except Exception:  # a search the variants cannot make finds nothing
        return []
    return [
        GoldFinding(
            case_id,
            index,
            "order_dependent",
            f"the gold's result depends on {p['kind']}: {p['reason']} (witness: "
            f"{p.get('rows')} row(s); a right prediction can fail on it)",
        )
        for p in problems[:1]
    ]


def _invalid(engine: Engine, query: str) -> str | None:
    """Why the independent validity check of the engine's language rejects `query` against
    its schema (None: valid, or no check for that language, or no verdict)."""
    from queryeval.engines import check_validity, validity_checker

    if validity_checker(engine.language) is None:
        return None
    try:
        schema = engine.cached_schema()
    except Exception:  # no schema: no verdict on the names
        return None
    verdict = check_validity(engine.language, query, schema=schema, dialect=engine.dialect)
    if verdict.validity != "invalid":
        return None
    return f"not valid {engine.language.upper()} ({verdict.checker}): {verdict.message}"
