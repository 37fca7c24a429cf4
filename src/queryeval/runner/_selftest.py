"""Self-test of a suite: every gold scored as a system's answer to its own case by the suite's
scorers (the run's `Worker` over one `Unit`). The share of golds with full marks from every
scorer is the suite's ceiling: below 1.0 a gold is broken or the metric cannot reach 1.
Scorers that ask a judge or compare embeddings are not self-tested; a database the evaluator
cannot use is reported once. `gold_findings` flags golds that cannot tell a right prediction
from a wrong one, depend on row order, or fail the language's own validity check.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from queryeval.cases import Attempt, Case, Output, Score, Target
from queryeval.config import ScorerConfig, SuiteConfig
from queryeval.engines import Engine
from queryeval.errors import InputError
from queryeval.runner._work import LocalServices, Unit, Worker
from queryeval.scorers import Scorer, ScoringContext


@dataclass(frozen=True)
class SelftestItem:
    """One gold scored by one scorer: `ok` (full marks), `mismatch`, or `gold_error`."""

    case_id: str
    gold: int
    status: str  # ok | mismatch | gold_error
    explanation: str = ""
    scorer: str = "execution_match"


@dataclass(frozen=True)
class GoldFinding:
    """A problem with one gold (see the module docstring)."""

    case_id: str
    gold: int
    kind: str  # failed | invalid | no_rows | only_null | same_on_empty | order_dependent
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
    """What `selftest` found: each gold's score by each scorer that read it, the ceilings,
    the golds `gold_findings` flags, and what was not checked and why.

    >>> report = SelftestReport([SelftestItem("q1", 0, "ok"), SelftestItem("q2", 0, "mismatch")])
    >>> report.checked, report.ceiling, [i.case_id for i in report.failures]
    (2, 0.5, ['q2'])
    """

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
        """Golds with full marks from every scorer that checked them / golds checked."""
        below = {(i.case_id, i.gold) for i in self.failures}
        return (self.checked - len(below)) / self.checked if self.checked else None

    @property
    def failures(self) -> list[SelftestItem]:
        """The items below full marks."""
        return [i for i in self.items if i.status != "ok"]


Golds = dict[str, dict[int, Attempt]]  # case id -> gold position -> the gold's attempt


def selftest(suite: SuiteConfig, cases: Sequence[Case], ctx: ScoringContext) -> SelftestReport:
    """Score each gold of each case with the suite's scorers (see the module docstring)."""
    from queryeval.scorers import build_scorers
    from queryeval.scorers.execution import case_database, target_query

    scorers, not_tested = _testable(build_scorers(suite), suite, cases, ctx)
    needed = set().union(*(_case_databases(c, scorers.values(), ctx) for c in cases))
    trouble = {n: why for n in suite.databases if n in needed if (why := _trouble(ctx.engine, n))}
    for label, scorer in list(scorers.items()):  # one not prepared is reported, the others go on
        if (why := _trouble(scorer.prepare, cases, ctx)) is not None:
            not_tested[label] = f"could not be prepared: {why}"
            del scorers[label]
    golds: Golds = {}
    skipped: list[str] = []
    left = dict.fromkeys(trouble, 0)
    for case in cases:
        mine = {i: a for i, t in enumerate(case.targets) if (a := gold_attempt(t))}
        bad = sorted(_case_databases(case, scorers.values(), ctx) & set(trouble))
        if not mine:
            skipped.append(case.id)
        elif bad:
            left[bad[0]] += len(mine)
        else:
            golds[case.id] = mine
    todo = [c for c in cases if c.id in golds]
    scored = _scored_golds(suite, todo, golds, scorers, ctx)
    items: list[SelftestItem] = []
    not_executable = executable = 0
    for case in todo:
        for label, scorer in scorers.items():
            if scorer.not_applicable(case) is not None:
                continue
            if scorer.needs_database:
                if case_database(case, scorer.database_option, ctx) not in suite.databases:
                    not_executable += len(golds[case.id])
                    continue
                executable += 1
            for index, attempt in golds[case.id].items():
                if _reads(scorer, attempt):
                    score = scored[case.id, index][label]
                    item = SelftestItem(case.id, index, _status(score), score.explanation, label)
                    items.append(item)
    # gold queries, none run: no case names a database of the suite, or it has none
    unrun = not (executable or trouble) and any(target_query(t) for c in cases for t in c.targets)
    where = (
        "no case names a database of the suite" if suite.databases else "the suite has no database"
    )
    return SelftestReport(
        items=items,
        skipped=skipped,
        findings=[f for f in gold_findings(suite, cases, ctx, skip=trouble) if f.kind != "failed"],
        scorers=[_check(label, items) for label in scorers],
        not_tested=not_tested,
        not_executable=not_executable,
        nothing_executable=f"{where}: the gold queries were not run" if unrun else None,
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
    if (query := target_query(target)) is not None:
        parts.update(query=query.text, language=query.language)
        if query.database:
            parts["database"] = query.database
    for key in ("weaviate_query", "indicator_selection"):
        if (value := getattr(target, key)) is not None:
            parts[key] = value
    if (answer := target.answer) is not None:
        parts["answer"] = answer if isinstance(answer, str) else answer.text
    if target.relevant:
        relevant = target.relevant
        if isinstance(relevant, dict):  # the best-graded first
            ranked = sorted((g, -i, r) for i, (r, g) in enumerate(relevant.items()) if g > 0)
            parts["retrieved"] = [r for _, _, r in reversed(ranked)]
        else:
            parts["retrieved"] = list(relevant)
    return Attempt(**parts) if parts else None


def _scored_golds(
    suite: SuiteConfig, cases: Sequence[Case], golds: Golds, scorers: dict[str, Scorer],
    ctx: ScoringContext,
) -> dict[tuple[str, int], dict[str, Score]]:  # fmt: skip
    """{(case id, gold position): label -> Score} of every gold scored by the (prepared)
    scorers as a system's output: the run's worker over one unit whose systems are the gold
    positions (a case without a gold there counts as done), the caller's context kept."""
    from queryeval.runner._plan import SystemRun

    names = tuple(map(str, range(max((max(g) + 1 for g in golds.values()), default=0))))
    outputs = {n: [Output(attempts=[a]) if (a := golds[c.id].get(int(n))) is not None else None
                   for c in cases] for n in names}  # fmt: skip
    done = {n: frozenset(c.id for c in cases if int(n) not in golds[c.id]) for n in names}
    worker = Worker("selftest", suite, ctx.cache_dir, (), LocalServices(ctx), list(cases))
    scores: dict[tuple[str, int], dict[str, Score]] = {}
    try:
        worker.start(scorers, [SystemRun(n, {}) for n in names], prepared=True)
        worker.run(
            Unit(0, names, range(len(cases)), outputs=outputs, done=done),
            lambda s: scores.__setitem__((s.record["case_id"], int(s.record["system"])), s.scores),
        )
    finally:
        worker.close(close_context=False)  # the caller's context stays theirs
    return scores


def _reads(scorer: Scorer, attempt: Attempt) -> bool:
    """Whether the gold attempt has what `scorer` reads."""
    reads = scorer.reads
    if reads in ("query", "attempts"):
        return attempt.query is not None
    if reads == "weaviate":
        return attempt.weaviate_query is not None or attempt.query is not None
    return reads == "output" or getattr(attempt, reads, None) is not None


def _status(score: Score) -> str:
    if score.status != "ok" or score.failure_reason is not None:
        return "gold_error"
    if score.passed is True or (score.passed is None and (score.value or 0.0) >= 1.0 - 1e-9):
        return "ok"
    return "mismatch"


def _check(label: str, items: list[SelftestItem]) -> ScorerCheck:
    mine = [i.status == "ok" for i in items if i.scorer == label]
    return ScorerCheck(label, len(mine), sum(mine))


# --- which scorers, which databases ------------------------------------------------------------


def _testable(
    scorers: dict[str, Scorer], suite: SuiteConfig, cases: Sequence[Case], ctx: ScoringContext
) -> tuple[dict[str, Scorer], dict[str, str]]:
    """The scorers a gold can be scored by (a composite's own components in its place), and
    why the others are not; `execution_match` added when no scorer runs the golds but the
    suite has databases."""
    from queryeval.scorers import build_scorer, judged_scorers
    from queryeval.scorers.execution import case_database

    testable: dict[str, Scorer] = {}
    not_tested: dict[str, str] = {}
    todo = list(scorers.items())
    while todo:
        label, scorer = todo.pop(0)
        components = getattr(scorer, "components", None)
        method = getattr(scorer, "method", None)
        if isinstance(components, list) and components:
            todo[:0] = [(f"{label}.{c.label}", c) for c in components]
        elif next(judged_scorers([scorer]), None) is not None:
            not_tested[label] = "asks a judge"
        elif scorer.reads == "answer" and method not in (None, "keyword", "keyword_legacy"):
            not_tested[label] = (
                f"{method}: an answer compared with itself is similar by construction"
            )
        else:
            testable[label] = scorer
    runs_golds = any(s.needs_database for s in testable.values())
    resolved = any(case_database(case, None, ctx) in suite.databases for case in cases)
    if suite.databases and not runs_golds and resolved:
        testable["execution_match"] = build_scorer(ScorerConfig(name="execution_match"))
    return testable, not_tested


def _case_databases(case: Case, scorers: Iterable[Scorer], ctx: ScoringContext) -> set[str]:
    """Every database of the suite a scorer would use for `case`."""
    from queryeval.scorers.execution import case_database, target_query

    names = {case_database(case, None, ctx)}
    names.update(case_database(case, s.database_option, ctx) for s in scorers)
    names.update(q.database for t in case.targets if (q := target_query(t)) and q.database)
    return set(ctx.database_names()).intersection(names)


def _trouble(do: Callable[..., object], *args: object) -> str | None:
    """Why `do(*args)` failed (None: it did not); an InputError, the user's, raises."""
    try:
        do(*args)
    except InputError:
        raise
    except Exception as exc:
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    return None


# --- the golds run: do they discriminate? -----------------------------------------------------


def gold_findings(
    suite: SuiteConfig,
    cases: Sequence[Case],
    ctx: ScoringContext,
    *,
    skip: Collection[str] = (),
    order_variants: int | None = None,
) -> list[GoldFinding]:
    """Every gold query run (from the gold cache when it ran before) and checked (see the
    module docstring): the audit's `gold_fails` and `non_discriminating` checks (no rows,
    only NULL, the same result on empty tables; not its variants), the language's validity
    check, and the order search; the databases in `skip` are left alone (the evaluator
    cannot use them). `order_variants` bounds the search for order-dependent golds (default:
    the verified verdicts' `Settings().variants`, 40 databases a gold; `validate` searches 8)."""
    from queryeval.audit import Auditor, golds_of
    from queryeval.engines import engine_kind_entry

    found: list[GoldFinding] = []
    audit = Auditor(suite, cases, ctx, variants=0, checks=("gold_fails", "non_discriminating"))
    verifiers: dict[str, Any] = {}  # database -> its Verifier (variants shared by its golds)
    with contextlib.ExitStack() as stack:
        stack.callback(audit.close)
        for gold in golds_of(suite, cases, ctx)[0]:
            if (name := gold.database) in skip:
                continue
            note = functools.partial(GoldFinding, gold.case.id, gold.index)
            if (invalid := _invalid(ctx.engine(name), gold.text)) is not None:
                found.append(note("invalid", invalid))
            if flagged := audit.check(gold):  # gold_fails is `failed`, else the reason
                found += [note(_KIND.get(str(f.evidence.get("reason")), "failed"), f.message)
                          for f in flagged]  # fmt: skip
            elif engine_kind_entry(suite.databases[name].engine).variants and (
                _ORDER_SENSITIVE.search(gold.text)
            ):
                if name not in verifiers:
                    from queryeval.verify import Settings, Verifier

                    settings = (
                        Settings() if order_variants is None else Settings(variants=order_variants)
                    )
                    verifier = Verifier(ctx.engine(name), settings)
                    verifiers[name] = stack.enter_context(contextlib.closing(verifier))
                found += _order_findings(note, ctx.engine(name), gold.text, verifiers[name])
    return found


# the audit's `non_discriminating` reasons as selftest's and validate's kinds
_KIND = {"empty": "no_rows", "null": "only_null", "same_on_empty": "same_on_empty"}


# The constructs under which a result can depend on row order or ties (a LIMIT, top or take;
# a column SQLite picks from a group; arg_max and any in KQL), searched on the databases of
# the engines whose variants the verified verdicts can make (EngineKind.variants).
_ORDER_SENSITIVE = re.compile(
    r"\b(limit|top|take|fetch|group\s+by|summarize|arg_max|arg_min|any)\b", re.IGNORECASE
)


def _order_findings(
    note: Callable[[str, str], GoldFinding], engine: Engine, gold: str, verifier: Any
) -> list[GoldFinding]:
    """`order_dependent` when the gold's result changes with the order its rows are stored
    in (ties under ORDER BY ... LIMIT, a LIMIT without ORDER BY): the gold on its own
    database variants, stored forward and reversed (queryeval.verify.gold_order_problems)."""
    from queryeval.verify import gold_order_problems

    try:
        problems = gold_order_problems(engine, gold, verifier=verifier)
    except Exception:  # a search the variants cannot make finds nothing
        return []
    return [
        note("order_dependent", f"the gold's result depends on {p['kind']}: {p['reason']} "
             f"(witness: {p.get('rows')} row(s); a right prediction can fail on it)")
        for p in problems[:1]
    ]  # fmt: skip


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
