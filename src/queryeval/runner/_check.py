"""A suite checked before anything runs (`validate`, and the start of `run`): everything it
references exists and every option can be honoured. Each problem is an InputError naming
the file, the line and what was expected (exit code 2); a run never starts on a
configuration it cannot honour.

Checked here, beyond what the suite model checks when it is read (types, unknown keys,
thresholds in [0, 1], typed settings):

- databases: a known engine, where it lives (the file or fixture seed exists), typed
  options meant for that engine;
- the comparison policy (suite and cases): known keys, typed values (`1e-9` a number,
  `rows` / `columns` one of their choices);
- the judge and embeddings sections, reports, the baseline run;
- each scorer's configuration (`Scorer.config_problems`: databases it names, files it
  reads) and its inputs (`Scorer.check_inputs`: gold queries that must parse ...);
- gates: readable, naming a metric the scorers report, bounds of means in [0, 1], a
  baseline for relative gates;
- cases: databases they name exist; every case has a database when a scorer runs queries.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from queryeval.errors import InputError
from queryeval.log import SUMMARY

if TYPE_CHECKING:
    from queryeval.cases import Case, Query
    from queryeval.config import SuiteConfig
    from queryeval.scorers import Scorer

Loc = tuple[str | int, ...]
Problems = Iterator[tuple[Loc, str]]  # (place in the suite file, what is wrong and expected)
Places = Mapping[str, tuple[Path, int | None]]
_COUNTS = {"system_errors", "cases"}  # gate metrics that are counts, not shares
GOLD_PRECHECK = 5  # golds per database run before a run: all failing stops it


def suite_error(suite: SuiteConfig, loc: Loc, message: str) -> InputError:
    """An InputError at `loc` of the suite file."""
    where = ""
    for part in loc:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    return InputError(message, path=suite.source, line=suite.line_of(loc), where=where or None)


def case_error(case_id: str, places: Places, where: str, message: str) -> InputError:
    """An InputError at the case's place in its file."""
    path, line = places.get(case_id, (None, None))
    return InputError(message, path=path, line=line, where=f"case {case_id}: {where}")


def _model(at: Loc, model: type[BaseModel], data: Any) -> Problems:
    """The first problem of `data` as a `model` (a misspelt key before the field it missed),
    at `at` plus the field's place."""
    try:
        model.model_validate(data if data is not None else {})
    except ValidationError as exc:
        first = min(exc.errors(include_url=False), key=lambda e: e["type"] != "extra_forbidden")
        loc = tuple(p for p in first["loc"] if isinstance(p, str | int))
        message = str(first["msg"])
        if first["type"] == "extra_forbidden":
            message = f"unknown option; expected some of {', '.join(model.model_fields)}"
        yield (*at, *loc), message


def check_suite(
    suite: SuiteConfig,
    scorers: Mapping[str, Scorer],
    cases: Sequence[Case] = (),
    places: Places | None = None,
    *,
    baseline: bool = False,
) -> None:
    """Every check of the module docstring; the first problem raises. `baseline`: a baseline
    run is given on the command line (relative gates need one)."""
    from queryeval.scorers import ScoringContext

    ctx = ScoringContext(suite, cache_dir=_cache_dir(suite))  # the checks' engines, closed after
    try:
        for loc, message in itertools.chain(
            _databases(suite, ctx),
            _sections(suite),
            ((("scorers", i, *loc), why) for i, s in enumerate(scorers.values())
             for loc, why in s.config_problems(suite)),
            _gates(suite, scorers, baseline=baseline or suite.baseline is not None),
        ):  # fmt: skip
            raise suite_error(suite, loc, message)
        if cases:
            for case_id, where, message in _cases(suite, scorers, cases, ctx):
                raise case_error(case_id, places or {}, where, message)
            for i, scorer in enumerate(scorers.values()):
                for loc, message in scorer.dataset_problems(cases):
                    raise suite_error(suite, ("scorers", i, *loc), message)
    finally:
        ctx.close()


def _databases(suite: SuiteConfig, ctx: Any) -> Problems:
    """Each database: a known engine, its place and options; then each given as a local
    file opens and its catalog reads (a file that is not a database would leave every case
    unscored)."""
    if not suite.databases:  # engines not imported for a suite without one
        return
    from queryeval.engines import database_problem

    for name, config in suite.databases.items():
        if (problem := database_problem(config, suite.base_dir)) is not None:
            yield ("databases", name, *problem[0]), problem[1]
    for name, expected in _files(suite).items():
        why = None
        try:
            if suite.databases[name].path:
                ctx.engine(name).cached_schema()
        except InputError:
            raise
        except Exception as exc:  # the engine's own error, whatever its library
            why = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        if why is not None:
            yield (
                ("databases", name, "path"),
                f"cannot read the database: {why}; expected {expected}",
            )


def _files(suite: SuiteConfig) -> dict[str, str]:
    """The databases this process opens itself (a local file or fixture, `EngineKind.file`),
    with what their `path` is; the others are servers."""
    if not suite.databases:  # no engine code to import
        return {}
    from queryeval.engines import engine_kind_entry

    kinds = {c.engine: engine_kind_entry(c.engine).file for c in suite.databases.values()}
    return {n: f for n, c in suite.databases.items() if (f := kinds[c.engine]) is not None}


# gold failures that say the database or its engine is unusable (a gold is taken as right:
# one whose tables are all missing reads another database), as the message words them
_UNUSABLE = {"engine_error": "an engine error", "schema": "a schema error"}


def gold_queries(
    suite: SuiteConfig, cases: Sequence[Case], ctx: Any, only: Collection[str] | None = None
) -> Iterator[tuple[Case, int, str, Query]]:
    """Each gold query of `cases` with its position and the database of the suite it runs
    on (its own, else the case's); golds on no database of the suite, or on one not in
    `only`, are left out. The one walk over the golds of `validate`, `run` and `selftest`."""
    from queryeval.scorers.execution import case_database, target_query

    for case in cases:
        fallback = case_database(case, None, ctx)
        for index, target in enumerate(case.targets):
            query = target_query(target)
            name = (query.database or fallback) if query is not None else None
            if query is not None and name in suite.databases and (only is None or name in only):
                yield case, index, str(name), query


def gold_problem(
    suite: SuiteConfig,
    cases: Sequence[Case],
    ctx: Any,
    limit: int | None,
    only: Collection[str] | None = None,
) -> None:
    """InputError when every gold query of a database (the first `limit` of them; None:
    all) fails with an engine or a schema error (a table it reads missing; schema errors
    only from two golds on, one being that gold's own mistake): the evaluator
    cannot score a single case there, a configuration that cannot be honoured (at the
    database's entry of the suite). `only`: the databases to try (None: every one)."""
    tried: dict[str, list[str]] = {}  # database -> the failures of its golds so far
    kinds: dict[str, set[str]] = {}  # database -> the kinds of those failures
    done: set[str] = set()  # databases with a gold that ran, or `limit` golds tried
    for case, _, name, query in gold_queries(suite, cases, ctx, only):
        if name in done:
            continue
        run = ctx.gold_execution(name, query.text)
        failures = tried.setdefault(name, [])
        if run.ok or run.outcome.kind not in _UNUSABLE:
            done.add(name)
            continue
        kinds.setdefault(name, set()).add(run.outcome.kind)
        failures.append(f"case {case.id}: {run.outcome.message.splitlines()[0][:200]}")
        if limit is not None and len(failures) >= limit:
            done.add(name)
    for name, failures in tried.items():
        if failures and (name not in done or len(failures) == limit):
            found = kinds[name]
            if found == {"schema"} and len(failures) < 2:
                continue  # one gold naming a missing table is that gold's, not the database's
            what = _UNUSABLE[min(found)] if len(found) == 1 else "an engine or schema error"
            raise suite_error(
                suite,
                ("databases", name),
                f"every gold query tried on database {name!r} fails with {what} "
                f"({len(failures)} tried; first: {failures[0]}): the engine or "
                "the database cannot be used, so no case could be scored",
            )


def server_gold_problem(
    suite: SuiteConfig, scorers: Iterable[Scorer], cases: Sequence[Case], ctx: Any
) -> None:
    """`gold_problem` for the databases served by a server (started by the run, or reached
    by URL: ArcadeDB, Neo4j, PostgreSQL, SQLAlchemy, Kusto), on the first `GOLD_PRECHECK`
    golds of `cases`, run with the run's own context `ctx` (the servers it starts and the
    gold results it keeps are the run's: nothing is started twice). When it raises, `ctx`
    is closed (the run stops there)."""
    servers = set(suite.databases) - set(_files(suite))
    if not servers or not any(s.needs_database for s in scorers):
        return
    try:
        gold_problem(suite, cases, ctx, GOLD_PRECHECK, only=servers)
    except BaseException:
        ctx.close()
        raise


def _sections(suite: SuiteConfig) -> Problems:
    """Predictions files, the comparison policy, judge (and its rubrics), embeddings, reports
    and their options, the baseline run."""
    from queryeval.reports import report_kinds, report_options_model
    from queryeval.scorers import policy_problem

    for i, system in enumerate(suite.systems):
        if system.predictions and not (path := suite.resolve(system.predictions)).is_file():
            yield ("systems", i, "predictions"), f"predictions file not found: {path}"
    if (problem := policy_problem(suite.comparison)) is not None:
        yield ("comparison", *problem[0]), problem[1]
    if suite.judge is not None:
        from queryeval.judges import JudgeConfig

        yield from _model(("judge",), JudgeConfig, suite.judge)
        for name, rubric in (suite.judge.get("rubrics") or {}).items():
            if not (path := suite.resolve(str(rubric))).is_file():
                yield ("judge", "rubrics", name), f"rubric file not found: {path}"
    if suite.embeddings is not None:
        from queryeval.embeddings import EmbeddingsConfig

        yield from _model(("embeddings",), EmbeddingsConfig, suite.embeddings)
    kinds = report_kinds()
    for i, report in enumerate(suite.reports):
        model = report_options_model(report.kind) if report.kind in kinds else None
        if report.kind not in kinds:
            yield (
                ("reports", i),
                f"unknown report kind {report.kind!r}; expected one of {', '.join(kinds)}",
            )
        elif report.options and model is None:
            yield ("reports", i, "options"), f"the {report.kind} report takes no options"
        elif report.options and model is not None:
            yield from _model(("reports", i, "options"), model, report.options)
    if (
        suite.baseline is not None
        and not (run := suite.resolve(suite.baseline.run) / SUMMARY).is_file()
    ):
        yield ("baseline", "run"), f"baseline run not found (no {SUMMARY} in {run.parent})"


def metric_names(scorers: Mapping[str, Scorer]) -> tuple[set[str], bool]:
    """(every metric a gate may name, whether some scorer cannot say its sub-metrics)."""
    names = {"pass_rate", "system_errors", "cases"}
    open_ended = False
    counts: dict[str, int] = {}
    for label, scorer in scorers.items():
        names |= {label, f"{label}.mean", f"{label}.pass_rate", f"{label}.unscored_share"}
        subs = scorer.sub_metrics()
        open_ended = open_ended or subs is None
        names |= {f"{label}.{s}" for s in subs or ()}
        for s in subs or ():
            counts[s] = counts.get(s, 0) + 1
    names |= {s for s, n in counts.items() if n == 1}  # a bare name unique across scorers
    return names, open_ended


def _gates(suite: SuiteConfig, scorers: Mapping[str, Scorer], *, baseline: bool) -> Problems:
    """Each gate readable, naming a metric the scorers report, a share's bound in [0, 1],
    a baseline for a relative gate."""
    from queryeval.stats import parse_gate

    known, open_ended = metric_names(scorers)
    for i, text in enumerate(suite.gates):
        try:
            gate = parse_gate(text)
        except InputError as exc:
            yield ("gates", i), exc.message
            continue
        share = gate.metric == "pass_rate" or gate.metric in scorers or gate.metric.endswith(
            (".mean", ".pass_rate", ".unscored_share"))  # fmt: skip
        if gate.metric not in known and not (
            open_ended and gate.metric.partition(".")[0] not in _COUNTS
        ):
            shown = ", ".join(sorted(known))
            yield (
                ("gates", i),
                f"unknown metric {gate.metric!r} in gate {text!r}; expected one of {shown}",
            )
        elif share and not gate.needs_baseline and not 0 <= gate.bound <= 1:
            yield (
                ("gates", i),
                f"gate {text!r} compares a share with {gate.bound:g}; expected a bound in [0, 1]",
            )
        elif gate.needs_baseline and not baseline:
            yield ("gates", i), (f"gate {text!r} compares with a baseline run; expected "
                                 "'baseline:' in the suite or --baseline RUN_DIR")  # fmt: skip


def _cases(
    suite: SuiteConfig, scorers: Mapping[str, Scorer], cases: Sequence[Case], ctx: Any
) -> Iterator[tuple[str, str, str]]:
    """(case id, place in the case, what is wrong and expected) of each case problem: a
    database named that the suite does not have, a comparison policy, no database for a
    scorer that runs queries, the scorers' input checks; and every tried gold of a local
    database failing (`gold_problem`) raises."""
    from queryeval.scorers import policy_problem
    from queryeval.scorers.execution import case_database

    databases = suite.databases
    needing = [s for s in scorers.values() if s.needs_database]
    for case in cases:
        for i, target in enumerate(case.targets):
            named = getattr(target.query, "database", None)
            if named and named not in databases:
                where = "target" if i == 0 else f"alternatives[{i - 1}]"
                yield case.id, f"{where}.query.database", _unknown_database(named, suite)
        named = case.metadata.get("database")
        if named is not None and str(named) not in databases:
            yield case.id, "metadata.database", _unknown_database(named, suite)
        if (policy := case.metadata.get("comparison")) is not None and (
            problem := policy_problem(policy)
        ) is not None:
            yield case.id, ".".join(["metadata.comparison", *map(str, problem[0])]), problem[1]
        for scorer in needing:
            if (
                scorer.not_applicable(case) is None
                and case_database(case, scorer.database_option, ctx) is None
            ):
                expected = (
                    "a 'databases:' entry in the suite"
                    if not databases
                    else "metadata.database, a 'database' on the gold query, or the scorer's "
                    f"'database' option (the suite has {', '.join(databases)})"
                )
                yield case.id, "database", (
                    f"scorer {scorer.label!r} runs queries but no database is named for this "
                    f"case; expected {expected}")  # fmt: skip
    if needing:  # the first golds of each local database: all failing stops the run
        gold_problem(suite, cases, ctx, GOLD_PRECHECK, only=_files(suite))
    for scorer in scorers.values():
        for case in cases:
            try:
                scorer.check_inputs([case], ctx)
            except InputError as exc:
                if exc.path is not None:
                    raise
                found = (exc.where or "").removeprefix(f"case {case.id}: "), exc.message
            else:
                continue
            yield case.id, *found


def live_problem(
    suite: SuiteConfig, systems: Sequence[Any], cases: Sequence[Case], *, probe: bool = True
) -> None:
    """What `run` finds only once it calls its live systems, found before (for `validate`):
    a model's or service's key variable not set, and with `probe`, one small request each
    (`probe` of the system): a server refusing every connection, a refused key, an unknown
    model or URL, a service's `output:` that resolves on none of its replies. InputError at
    the system's entry of the suite."""
    names = [c.name for c in suite.systems]
    for system in systems:
        live = system.callable
        kind = getattr(live, "kind", None)
        if kind not in ("model", "endpoint"):
            continue  # saved predictions, callables: nothing to reach
        index = names.index(system.group or system.name)
        why = live.setup_problem()
        if why is not None:
            raise suite_error(suite, ("systems", index, kind, "api_key_env"), why)
        why = live.probe(cases) if probe else None
        if why is not None:
            key = "output" if why.startswith("output:") else "url" if kind == "endpoint" else None
            loc = ("systems", index, kind, *((key,) if key else ()))
            raise suite_error(suite, loc, why)


def _cache_dir(suite: SuiteConfig) -> Path:
    """The suite's cache folder (as the run's): fixtures and gold results built while
    checking are the run's."""
    from queryeval.runner._run import cache_dir

    return cache_dir(suite)


def _unknown_database(name: Any, suite: SuiteConfig) -> str:
    known = ", ".join(suite.databases) or "none"
    return f"unknown database {name!r}; the suite has: {known}"


def load_suite(path: str | Path) -> SuiteConfig:
    """Read a suite file and check what it names (its scorers: known, options valid; its
    systems: files, templates, databases), each by the layer that owns it; every problem is
    an InputError naming the file and line. `queryeval.config.load_suite` only parses."""
    from queryeval.config import load_suite as read_suite
    from queryeval.scorers import build_scorers
    from queryeval.systems import check_systems

    suite = read_suite(path)
    build_scorers(suite)
    check_systems(suite)
    return suite
