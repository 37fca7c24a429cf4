"""The `queryeval` command line. Imports stay inside commands so `--help` starts fast."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from queryeval.cli import resume_gc
from queryeval.cli._audit import audit_command, overlay_command
from queryeval.cli._calibrate import calibrate_command
from queryeval.cli._compare import compare_command  # light: heavy imports are inside
from queryeval.cli._estimate import estimate_command
from queryeval.cli._export import export_app
from queryeval.cli._grid import grid_command
from queryeval.cli._history import history_command
from queryeval.cli._import import IMPORT_CONTEXT, import_command
from queryeval.cli._replay import replay_command
from queryeval.cli._view import view_command
from queryeval.errors import InputError

if TYPE_CHECKING:
    from typer.models import CommandInfo

_SETTINGS: dict[str, Any] = {
    "name": "queryeval",
    "no_args_is_help": True,
    "add_completion": False,
    "pretty_exceptions_enable": False,
    # plain help and usage errors: Rich's formatting imports rich (markdown, pygments),
    # 0.25 s of CPU that every `--help` and mistyped option paid (issue 31)
    "rich_markup_mode": None,
}
app = typer.Typer(
    help="Evaluate LLM systems that turn questions into queries and answers.", **_SETTINGS
)

SuiteArg = Annotated[Path, typer.Argument(help="suite YAML file", show_default=False)]


def fail_input(exc: InputError) -> typer.Exit:
    """Print a bad-input error on one line and return exit code 2."""
    typer.echo(f"error: {exc.render()}", err=True)
    return typer.Exit(code=2)


@app.command()
def run(
    suite: SuiteArg,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="run directory")] = None,
    resume: Annotated[bool, typer.Option(help="skip (system, case) pairs already stored")] = False,
    overwrite: Annotated[bool, typer.Option(help="replace a run already in --out")] = False,
    progress: Annotated[bool, typer.Option(help="show progress")] = True,
    baseline: Annotated[
        Path | None,
        typer.Option(help="a stored run to compare with (relative gates, comparison report)"),
    ] = None,
    junit: Annotated[
        Path | None, typer.Option(help="also write JUnit XML here (cases and gates as tests)")
    ] = None,
    cache: Annotated[
        bool,
        typer.Option(
            "--cache/--no-cache",
            help="answer model systems' requests from the output cache (--no-cache: ask again)",
        ),
    ] = True,
    strict: Annotated[
        bool,
        typer.Option(
            help="fail (exit 1) when a mean has more unscored cases than "
            "settings.max_unscored_share (default 5%)"
        ),
    ] = False,
    review: Annotated[
        Path | None,
        typer.Option(help="human review file (YAML/CSV): gold corrections and verdict overrides"),
    ] = None,
    filter_: Annotated[
        list[str] | None,
        typer.Option(
            "--filter",
            help="run only the cases whose id or a tag matches this glob (repeatable; "
            "predictions for the other cases are ignored)",
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option(help="run only the first N (selected) cases, in suite order")
    ] = None,
    retry_errors: Annotated[
        bool,
        typer.Option(
            help="resume --out, scoring again the stored cases a judge, engine or scorer left "
            "unscored or in error (from their stored outputs: systems are not called again)"
        ),
    ] = False,
    executor: Annotated[
        str | None,
        typer.Option(
            help="local (this machine) or ray (a Ray cluster: queryeval[ray]); default: the "
            "suite's settings.executor, else local"
        ),
    ] = None,
    address: Annotated[
        str | None,
        typer.Option(
            help="with --executor ray: the cluster to join (auto, ray://HOST:10001, "
            "HOST:6379); default: start a local cluster for the run"
        ),
    ] = None,
    shards: Annotated[
        int | None,
        typer.Option(help="with --executor ray: how many shards a saved-prediction run makes"),
    ] = None,
) -> None:
    """Run a suite: generate, score, store results.jsonl, summary.json, run.json and reports.

    Exit codes: 0 complete and gates pass, 1 a gate failed (or, with --strict, a mean is
    flagged for its unscored share), 2 bad input, a broken configuration or a broken scorer.
    """
    from queryeval.config import ReportConfig
    from queryeval.runner import CaseSelection, load_suite, run_suite

    extra = [ReportConfig(kind="junit", path=str(junit.resolve()))] if junit else []
    try:
        selection = CaseSelection(tuple(filter_ or ()), limit)
        config = load_suite(suite)
        if executor is not None or address is not None or shards is not None:
            from queryeval.runner import with_executor  # the Ray executor's module

            config = with_executor(config, executor, address=address, shards=shards)
        # this process only runs the suite and exits: what it has imported is frozen out of
        # the collector's scans for good (run_suite then leaves what it freezes frozen too,
        # and the exit's final collection has nothing large to scan); the collector, paused
        # for the imports by `queryeval.cli.main`, runs from here on
        gc.freeze()
        resume_gc()
        result = run_suite(
            config,
            out,
            resume=resume,
            overwrite=overwrite,
            progress=progress,
            baseline=baseline,
            extra_reports=extra,
            use_cache=cache,
            review=review,
            selection=selection,
            retry_errors=retry_errors,
        )
    except InputError as exc:
        raise fail_input(exc) from None
    # the index that `view`, `compare` and `history` read, built once the run has ended (a
    # cache: a failure to write it is a warning, and they build it when they first read the
    # run). Built by a thread while the run ran, a 100,000-case SDMX run took 1.10x the CPU
    # and wall on 2 cores (bench_runner_ab.py, load 1-3; 7ec08af)
    from queryeval.viewer import index_run

    if (problem := index_run(result.out_dir)) is not None:
        typer.echo(f"warning: the run's index (for view, compare, history): {problem}", err=True)
    typer.echo(f"run directory: {result.out_dir}")
    typer.echo(f"  results.jsonl: {result.new_records} new record(s), {result.skipped} resumed")
    for kind, path in result.reports.items():
        typer.echo(f"  {kind}: {path}")
    if result.overlays:
        from queryeval.audit import overlay_lines

        for content in result.overlays:
            for line in overlay_lines(content):
                typer.echo(line)
    failed = [g for g in result.gates if not g["passed"]]
    for g in failed:
        bound = f", bound {g['bound']}" if "bound" in g else ""
        note = f"; {g['note']}" if g.get("note") else ""
        typer.echo(
            f"gate failed: {g['system']}: {g['gate']} (value {g['value']}{bound}{note})",
            err=True,
        )
    flags = result.flags if strict else []
    for f in flags:
        typer.echo(
            f"strict: {f['system']}: {f['scorer']}: {f['unscored_share']:.1%} of the cases "
            f"unscored or in error (settings.max_unscored_share "
            f"{config.settings.max_unscored_share:g})",
            err=True,
        )
    if failed or flags:
        raise typer.Exit(code=1)


@app.command()
def validate(
    suite: SuiteArg,
    baseline: Annotated[
        Path | None, typer.Option(help="the baseline run that `run --baseline` will be given")
    ] = None,
    golds: Annotated[
        bool,
        typer.Option(
            help="run the gold queries: flag golds that fail, are not valid in their language "
            "(KQL: Kusto.Language), return no rows, or return the same rows on empty tables "
            "(non-discriminating)"
        ),
    ] = True,
    strict: Annotated[bool, typer.Option(help="exit 1 when a gold is flagged")] = False,
    probe: Annotated[
        bool,
        typer.Option(
            help="send one small request to each model and endpoint system (a server that "
            "cannot be reached, a refused key, an unknown model or URL, an output: path "
            "not in the service's replies)"
        ),
    ] = True,
) -> None:
    """Check the suite, its cases and its predictions without scoring anything: every
    option typed, everything referenced present and readable, API key variables set, each
    model and service answering (exit 2 with file, line and what was expected), and the
    gold queries run once (cached for the run; every gold of a database failing with an
    engine error: exit 2)."""
    from queryeval.runner import live_problem, load_suite, plan_run

    try:
        config = load_suite(suite)
        plan = plan_run(config, baseline=baseline is not None)
        live_problem(plan.suite, plan.systems, plan.cases, probe=probe)
        findings = _gold_findings(plan) if golds else []
    except InputError as exc:
        raise fail_input(exc) from None
    for finding in findings:
        typer.echo(f"warning: {finding.line()}", err=True)
    note = _kql_note(config)
    if note and golds:
        typer.echo(f"note: {note}", err=True)
    typer.echo(
        f"ok: {len(plan.cases)} cases, {len(plan.systems)} system configuration(s), "
        f"scorers: {', '.join(plan.scorers)}"
        + (f"; {len(findings)} gold(s) flagged" if findings else "")
    )
    if strict and findings:
        raise typer.Exit(code=1)


def _kql_note(config: Any) -> str | None:
    """Why gold KQL queries were not checked with Kusto.Language, when a KQL database is
    configured and Node or the package is missing."""
    from queryeval.engines import engine_language, shared_validator

    if not any(engine_language(db.engine) == "kql" for db in config.databases.values()):
        return None
    missing = shared_validator().missing()
    return f"gold KQL queries not checked with Kusto.Language: {missing}" if missing else None


def _gold_findings(plan: Any) -> list[Any]:
    """The gold checks of a planned suite whose scorers run queries (see `selftest`)."""
    from queryeval.runner import cache_dir, gold_findings, gold_problem
    from queryeval.scorers import ScoringContext

    if not plan.suite.databases or not any(s.needs_database for s in plan.scorers.values()):
        return []
    ctx = ScoringContext(plan.suite, cache_dir=cache_dir(plan.suite))
    try:
        # a bounded search for order-dependent golds (8 variant databases a gold, of the 40
        # `selftest` searches: that search was 95 % of validate's CPU on the SQL example)
        found = gold_findings(plan.suite, plan.cases, ctx, order_variants=8)
        gold_problem(plan.suite, plan.cases, ctx, None)  # every gold failing: exit 2
        return found
    finally:
        ctx.close()


@app.command()
def report(
    run_dir: Annotated[Path, typer.Argument(help="a run directory", show_default=False)],
    review: Annotated[
        Path | None,
        typer.Option(help="human review file (YAML/CSV) whose verdict overrides to apply"),
    ] = None,
    partial: Annotated[
        bool,
        typer.Option(
            help="report a run still in progress (the results stored so far; refused without)"
        ),
    ] = False,
) -> None:
    """Re-write the reports of a stored run (from its results, without re-scoring)."""
    from queryeval.cli._report import report_command

    try:
        report_command(run_dir, review, partial)
    except InputError as exc:
        raise fail_input(exc) from None


app.command("compare")(compare_command)
app.command("estimate")(estimate_command)
app.command("calibrate")(calibrate_command)
app.command("grid")(grid_command)
app.command("import", context_settings=IMPORT_CONTEXT)(import_command)
app.command("history")(history_command)
app.command("replay")(replay_command)
app.command("view")(view_command)
app.command("audit")(audit_command)
app.command("overlay")(overlay_command)
app.add_typer(export_app, name="export")


@app.command()
def selftest(
    suite: SuiteArg,
    cache_dir: Annotated[
        Path, typer.Option(help="cache folder (gold results, fixture databases)")
    ] = Path(".queryeval-cache"),
    strict: Annotated[
        bool, typer.Option(help="also exit 1 when a gold is non-discriminating")
    ] = False,
) -> None:
    """Run every gold query as the prediction and report the ceiling (exit 1 below 1.0);
    golds that return no rows, or the same rows on empty tables, are flagged."""
    from queryeval.cli._selftest import selftest_command

    try:
        selftest_command(suite, cache_dir, strict)
    except InputError as exc:
        raise fail_input(exc) from None


def app_for(args: list[str]) -> typer.Typer:
    """The app that runs the command line `args`: an app of only the command (or command
    group) that `args` starts with, else the whole `app`. Typer builds every command's
    parameters (signatures, types, help texts) before it parses anything: 0.05-0.1 s of CPU
    of every command line for the 14 commands that do not run (issue 31).

    >>> [c.callback.__name__ for c in app_for(["report", "runs/x"]).registered_commands]
    ['report']
    >>> app_for(["--help"]) is app and app_for(["no-such-command"]) is app
    True
    """
    name = args[0] if args else None
    commands = [c for c in app.registered_commands if _command_name(c) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if not commands and not groups:
        return app
    one = typer.Typer(**_SETTINGS)
    one.callback()(_no_options)  # a group, as `app` is (one command alone would be the app)
    one.registered_commands = commands
    one.registered_groups = groups
    return one


def _command_name(info: CommandInfo) -> str | None:
    """The name a registered command is called by (typer's: its function's, dashed)."""
    if info.name or info.callback is None:
        return info.name
    return typer.main.get_command_name(info.callback.__name__)


def _no_options() -> None:
    """Evaluate LLM systems that turn questions into queries and answers."""


def main() -> None:
    """Entry point of the `queryeval` script."""
    # numpy's OpenBLAS starts a thread per core that busy-waits after each call; the command
    # only does small array work, so one thread: measured 0.15 s less wall time and 0.35 s
    # less CPU on a sharded 100,000-case run, whose workers need those cores. Set before
    # numpy is first imported (nothing the CLI imports up to here loads it).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = sys.argv[1:]
    if args[:1] != ["run"]:
        resume_gc()  # `run` resumes it once its suite is loaded
    try:
        app_for(args)()
    except InputError as exc:  # pragma: no cover - commands catch their own
        typer.echo(f"error: {exc.render()}", err=True)
        sys.exit(2)
