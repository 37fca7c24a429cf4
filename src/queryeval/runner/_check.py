"""A suite checked before anything runs (`validate`, the start of `run`): everything it names
exists and every option can be honoured, beyond what the suite model checks when read:
databases (engine, place, options; a local file opens), the comparison policy (suite and
cases), judge, embeddings, reports, the baseline run, each scorer's configuration and
inputs, gates (a metric the scorers report, a share's bound in [0, 1], a baseline for a
relative one), and each case's databases. Each problem is an InputError naming the file,
the line and what was expected (exit code 2)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from queryeval._validation import first_problem, where
from queryeval._yaml import Loc
from queryeval.errors import InputError
from queryeval.log import SUMMARY

if TYPE_CHECKING:
    from queryeval.cases import Case
    from queryeval.config import SuiteConfig
    from queryeval.scorers import Scorer

Problems = Iterator[tuple[Loc, str]]  # (place in the suite file, what is wrong and expected)
Places = Mapping[str, tuple[Path, int | None]]
GOLD_PRECHECK = 5  # golds per database run before a run: all failing stops it
# gold failures that say the database or its engine is unusable, as the message words them
_UNUSABLE = {"engine_error": "an engine error", "schema": "a schema error"}


def suite_error(suite: SuiteConfig, loc: Loc, message: str) -> InputError:
    """An InputError at `loc` of the suite file."""
    return InputError(message, path=suite.source, line=suite.line_of(loc), where=where(loc) or None)


def _model(at: Loc, model: type[BaseModel], data: Any) -> Problems:
    """The first problem of `data` as a `model` (a misspelt key before the field it missed)."""
    try:
        model.model_validate(data if data is not None else {})
    except ValidationError as exc:
        unknown = f"unknown option; expected some of {', '.join(model.model_fields)}"
        loc, _, message = first_problem(exc, unknown, unknown_first=True)
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
    from queryeval.runner._plan import cache_dir
    from queryeval.scorers import ScoringContext

    with contextlib.closing(ScoringContext(suite, cache_dir=cache_dir(suite))) as ctx:
        for loc, message in itertools.chain(
            _databases(suite, ctx),
            _sections(suite),
            ((("scorers", i, *loc), why) for i, s in enumerate(scorers.values())
             for loc, why in s.config_problems(suite)),
            _gates(suite, scorers, baseline=baseline or suite.baseline is not None),
        ):  # fmt: skip
            raise suite_error(suite, loc, message)
        for case_id, at, message in _cases(suite, scorers, cases, ctx):
            path, line = (places or {}).get(case_id, (None, None))
            raise InputError(message, path=path, line=line, where=f"case {case_id}: {at}")
        for i, scorer in enumerate(scorers.values() if cases else ()):
            for loc, message in scorer.dataset_problems(cases):
                raise suite_error(suite, ("scorers", i, *loc), message)


def _databases(suite: SuiteConfig, ctx: Any) -> Problems:
    """Each database: a known engine, its place and options; each local file opens and its
    catalog reads (a file that is not a database would leave every case unscored)."""
    if not suite.databases:  # engines not imported for a suite without one
        return
    from queryeval.engines import database_problem

    for name, config in suite.databases.items():
        if (problem := database_problem(config, suite.base_dir)) is not None:
            yield ("databases", name, *problem[0]), problem[1]
    for name, expected in _files(suite).items():
        try:
            if suite.databases[name].path:
                ctx.engine(name).cached_schema()
        except InputError:
            raise
        except Exception as exc:  # the engine's own error, whatever its library
            why = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
            yield (
                ("databases", name, "path"),
                f"cannot read the database: {why}; expected {expected}",
            )


def _files(suite: SuiteConfig) -> dict[str, str]:
    """The databases this process opens itself (`EngineKind.file`), with what their `path`
    is; the others are servers."""
    if not suite.databases:  # no engine code to import
        return {}
    from queryeval.engines import engine_kind_entry

    kinds = {c.engine: engine_kind_entry(c.engine).file for c in suite.databases.values()}
    return {n: f for n, c in suite.databases.items() if (f := kinds[c.engine]) is not None}


def gold_problem(
    suite: SuiteConfig,
    cases: Sequence[Case],
    ctx: Any,
    limit: int | None,
    only: Collection[str] | None = None,
) -> None:
    """InputError at a database's entry when every gold query tried there (the first
    `limit`; None: all) fails with an engine or a schema error (a schema error from two golds
    on: one is that gold's own mistake): no case could be scored there. `only`: the
    databases to try (None: every one)."""
    from queryeval.audit import golds_of

    failures: dict[str, list[tuple[str, str]]] = {}  # database -> (kind, failure) of its golds
    done: set[str] = set()  # databases with a gold that ran, or `limit` golds tried
    for gold in golds_of(suite, cases, ctx)[0]:
        if (name := gold.database) in done or (only is not None and name not in only):
            continue
        run = ctx.gold_execution(name, gold.text)
        if run.ok or (kind := run.outcome.kind) not in _UNUSABLE:
            done.add(name)
            continue
        mine = failures.setdefault(name, [])
        mine.append((kind, f"case {gold.case.id}: {run.outcome.message.splitlines()[0][:200]}"))
        if len(mine) == limit:
            done.add(name)
    for name, mine in failures.items():
        kinds = {kind for kind, _ in mine}
        if (name in done and len(mine) != limit) or (kinds == {"schema"} and len(mine) < 2):
            continue
        what = _UNUSABLE[min(kinds)] if len(kinds) == 1 else "an engine or schema error"
        raise suite_error(suite, ("databases", name),
                          f"every gold query tried on database {name!r} fails with {what} "
                          f"({len(mine)} tried; first: {mine[0][1]}): the engine or the "
                          "database cannot be used, so no case could be scored")  # fmt: skip


def gold_precheck(
    suite: SuiteConfig, scorers: Iterable[Scorer], cases: Sequence[Case], ctx: Any, *,
    servers: bool = False,
) -> None:  # fmt: skip
    """`gold_problem` on the first `GOLD_PRECHECK` golds of each local database of scorers
    that run queries (`servers`: of each database behind a server, with the run's own
    context `ctx`: nothing started twice)."""
    files = set(_files(suite))
    only = set(suite.databases) - files if servers else files
    if only and cases and any(s.needs_database for s in scorers):
        gold_problem(suite, cases, ctx, GOLD_PRECHECK, only=only)


def _sections(suite: SuiteConfig) -> Problems:
    """Predictions files, the comparison policy, judge (and its rubrics), embeddings, reports
    and their options, the baseline run."""
    from queryeval.reports import report_kinds, report_options_model
    from queryeval.scorers import policy_problem

    for i, system in enumerate(suite.systems):
        if system.predictions and not (path := suite.resolve(system.predictions)).is_file():
            yield ("systems", i, "predictions"), f"predictions file not found: {path}"
    if suite.comparison and (problem := policy_problem(suite.comparison)) is not None:
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
    for i, report in enumerate(suite.reports):
        try:  # the kind itself asked: the installed plugins are listed only for an unknown one
            model = report_options_model(report.kind)
        except KeyError:
            kinds = ", ".join(report_kinds())
            yield ("reports", i), f"unknown report kind {report.kind!r}; expected one of {kinds}"
            continue
        if report.options and model is None:
            yield ("reports", i, "options"), f"the {report.kind} report takes no options"
        elif report.options:
            yield from _model(("reports", i, "options"), model, report.options)
    run = suite.resolve(suite.baseline.run) if suite.baseline is not None else None
    if run is not None and not (run / SUMMARY).is_file():
        yield ("baseline", "run"), f"baseline run not found (no {SUMMARY} in {run})"


def _gates(suite: SuiteConfig, scorers: Mapping[str, Scorer], *, baseline: bool) -> Problems:
    """Each gate readable, naming a metric the scorers report (a bare sub-metric name when
    one scorer alone reports it), a share's bound in [0, 1], a baseline for a relative one."""
    from queryeval.stats import parse_gate

    known = {"pass_rate", "system_errors", "cases"}
    open_ended, subs = False, []
    for label, scorer in scorers.items():
        known |= {label, *(f"{label}.{m}" for m in ("mean", "pass_rate", "unscored_share"))}
        open_ended = open_ended or (mine := scorer.sub_metrics()) is None
        subs += list(mine or ())
        known |= {f"{label}.{s}" for s in mine or ()}
    known |= {s for s in subs if subs.count(s) == 1}
    for i, text in enumerate(suite.gates):
        try:
            gate = parse_gate(text)
        except InputError as exc:
            yield ("gates", i), exc.message
            continue
        share = gate.metric == "pass_rate" or gate.metric in scorers or gate.metric.endswith(
            (".mean", ".pass_rate", ".unscored_share"))  # fmt: skip
        counts = gate.metric.partition(".")[0] in ("system_errors", "cases")
        if gate.metric not in known and not (open_ended and not counts):
            yield ("gates", i), (f"unknown metric {gate.metric!r} in gate {text!r}; expected "
                                 f"one of {', '.join(sorted(known))}")  # fmt: skip
        elif share and not gate.needs_baseline and not 0 <= gate.bound <= 1:
            yield ("gates", i), (f"gate {text!r} compares a share with {gate.bound:g}; expected a "
                                 "bound in [0, 1]")  # fmt: skip
        elif gate.needs_baseline and not baseline:
            yield ("gates", i), (f"gate {text!r} compares with a baseline run; expected "
                                 "'baseline:' in the suite or --baseline RUN_DIR")  # fmt: skip


def _cases(
    suite: SuiteConfig, scorers: Mapping[str, Scorer], cases: Sequence[Case], ctx: Any
) -> Iterator[tuple[str, str, str]]:
    """(case id, place in the case, what is wrong and expected) of each case problem: a
    database the suite does not have, a comparison policy, no database for a scorer that
    runs queries, the scorers' input checks; every tried gold of a local database failing
    (`gold_problem`) raises."""
    from queryeval.scorers import policy_problem

    databases = suite.databases
    unknown = f"; the suite has: {', '.join(databases) or 'none'}"
    needing = [s for s in scorers.values() if s.needs_database]
    if needing:  # only scorers that run queries need it (issue 31: 7-8 ms of CPU of a run without)
        from queryeval.scorers.execution import case_database
    expected = (
        "a 'databases:' entry in the suite" if not databases else
        "metadata.database, a 'database' on the gold query, or the scorer's 'database' "
        f"option (the suite has {', '.join(databases)})"
    )  # fmt: skip
    for case in cases:
        for i, target in enumerate(case.targets):
            if (named := getattr(target.query, "database", None)) and named not in databases:
                at = "target" if i == 0 else f"alternatives[{i - 1}]"
                yield case.id, f"{at}.query.database", f"unknown database {named!r}{unknown}"
        if (named := case.metadata.get("database")) is not None and str(named) not in databases:
            yield case.id, "metadata.database", f"unknown database {named!r}{unknown}"
        policy = case.metadata.get("comparison")
        if policy is not None and (problem := policy_problem(policy)) is not None:
            yield case.id, ".".join(["metadata.comparison", *map(str, problem[0])]), problem[1]
        for scorer in needing:
            fallback = scorer.database_option
            if scorer.not_applicable(case) is None and case_database(case, fallback, ctx) is None:
                yield case.id, "database", (
                    f"scorer {scorer.label!r} runs queries but no database is named for this "
                    f"case; expected {expected}")  # fmt: skip
    gold_precheck(suite, needing, cases, ctx)  # all failing stops the run
    for scorer in scorers.values():
        for case in cases:
            try:
                scorer.check_inputs([case], ctx)
            except InputError as exc:
                if exc.path is not None:
                    raise
                yield case.id, (exc.where or "").removeprefix(f"case {case.id}: "), exc.message


def live_problem(
    suite: SuiteConfig, systems: Sequence[Any], cases: Sequence[Case], *, probe: bool = True
) -> None:
    """What `run` finds only once it calls its live systems, for `validate`: a model's or
    service's key variable not set, and with `probe` one small request each (a server
    refusing connections, a refused key, an unknown model or URL, a service's `output:`
    that resolves on none of its replies). InputError at the system's entry of the suite."""
    names = [c.name for c in suite.systems]
    for system in systems:
        live = system.callable
        if (kind := getattr(live, "kind", None)) not in ("model", "endpoint"):
            continue  # saved predictions, callables: nothing to reach
        at: Loc = ("systems", names.index(system.group or system.name), kind)
        if (why := live.setup_problem()) is not None:
            raise suite_error(suite, (*at, "api_key_env"), why)
        if (why := live.probe(cases) if probe else None) is not None:
            key = "output" if why.startswith("output:") else "url" if kind == "endpoint" else None
            raise suite_error(suite, (*at, *((key,) if key else ())), why)


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
