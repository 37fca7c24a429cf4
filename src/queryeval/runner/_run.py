"""Run a suite: plan -> generate -> score -> store, then summary, reports and gates."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, cast

import orjson

from queryeval import __version__
from queryeval._gc import bulk_allocation, run_scope
from queryeval.cases import Case, Output, Score, case_files, load_cases
from queryeval.config import ReportConfig, SuiteConfig
from queryeval.errors import InputError
from queryeval.log import (
    COMPARISON,
    REVIEW,
    RUN,
    SUMMARY,
    GateResult,
    LogWriter,
    Record,
    RunInfo,
    RunLog,
    Summary,
    iter_records,
    read_json,
    run_lock,
)
from queryeval.runner._executors import AsyncExecutor, Executor, InlineExecutor, ScoreWork, WorkItem
from queryeval.runner._pipeline import Scored
from queryeval.runner._progress import Progress
from queryeval.runner._review_file import Review
from queryeval.runner._select import CaseSelection
from queryeval.scorers import Scorer, ScoringContext, build_scorers
from queryeval.stats import RunColumns
from queryeval.systems import (
    CallableSystem,
    LiveSystem,
    PredictionsFile,
    TextFields,
    attach_systems,
    build_system,
    check_systems,
    import_callable,
    text_fields_for,
)

_VERSIONED = (
    "pydantic",
    "numpy",
    "duckdb",
    "duckdb-kql",
    "neo4j",
    "openai",
    "sentence-transformers",
    "torch",
    "rapidfuzz",
    "sacrebleu",
    "sqlglot",
    "xlsxwriter",
)


@dataclass
class SystemRun:
    """One system configuration to run: saved predictions, or a live system (a callable with
    params, a model, an endpoint) whose `generate(case)` gives each output."""

    name: str
    params: dict[str, Any]
    predictions: PredictionsFile | None = None
    callable: LiveSystem | None = None
    concurrency: int = 4
    group: str = ""  # the configured system a grid point belongs to (shares its concurrency)


@dataclass
class RunPlan:
    """Everything resolved before anything runs: cases, scorers, systems, hashes."""

    suite: SuiteConfig
    cases: list[Case]
    scorers: dict[str, Scorer]
    systems: list[SystemRun]
    config_hash: str
    inputs_hash: str
    input_files: list[str] = field(default_factory=list)
    lazy: bool = False  # cases and predictions are loaded by the sharded workers
    selection: dict[str, Any] | None = None  # the subset run (--filter, --limit), if any


@dataclass
class RunResult:
    """What a finished run produced."""

    out_dir: Path
    summary: Summary
    gates: list[GateResult]
    reports: dict[str, Path]
    new_records: int
    skipped: int
    overlays: list[dict[str, Any]] = field(default_factory=list)  # overlay-<name>.json each

    @property
    def gates_passed(self) -> bool:
        """Whether every gate passed (True when there are none)."""
        return all(g["passed"] for g in self.gates)

    @property
    def flags(self) -> list[dict[str, Any]]:
        """Means with more unscored (or error) cases than `settings.max_unscored_share`:
        {system, scorer, unscored_share}; `--strict` fails the run on any."""
        flags = []
        for name, entry in self.summary.get("systems", {}).items():
            if entry.get("flagged"):
                flags.append(
                    {
                        "system": name,
                        "scorer": "pass_rate",
                        "unscored_share": entry["no_verdict_share"],
                    }
                )
            flags += [
                {"system": name, "scorer": label, "unscored_share": s.get("unscored_share")}
                for label, s in entry.get("scorers", {}).items()
                if s.get("flagged")
            ]
        return flags


def _hash_files(paths: Sequence[Path]) -> str:
    """One digest of the input files (names and contents), read in blocks."""
    h = hashlib.sha256()
    for p in paths:
        h.update(str(p.name).encode())
        with p.open("rb") as f:
            h.update(hashlib.file_digest(f, "sha256").digest())
    return h.hexdigest()


def suite_reads(scorers: Sequence[Scorer]) -> set[str]:
    """What the scorers read of an output (a composite: what its components read)."""
    reads: set[str] = set()
    for scorer in scorers:
        reads.add(scorer.reads)
        reads |= suite_reads(getattr(scorer, "components", []))
    return reads


# where the run is executed shapes no score: a run may be resumed on another executor
_NOT_HASHED: Any = {"base_dir": True, "source": True, "settings": {"executor": True, "ray": True}}


def plan_run(
    suite: SuiteConfig,
    *,
    lazy: bool = False,
    baseline: bool = False,
    selection: CaseSelection | None = None,
) -> RunPlan:
    """Load and check everything a run needs (see `queryeval.runner._check`); InputError on
    any bad input, before anything runs. With `lazy`, cases and predictions are left for the
    sharded workers to load and check; `baseline`: a baseline run is given on the command
    line; `selection`: run
    a subset (every case is still loaded and checked, and so are the predictions)."""
    from queryeval.runner._check import check_suite

    places: dict[str, tuple[Path, int | None]] = {}
    with bulk_allocation():
        cases = [] if lazy else load_cases(suite.cases, suite.base_dir, places)
    if not cases and not lazy:
        raise InputError("no cases matched", path=suite.source, where="cases")
    scorers = build_scorers(suite)
    if not scorers:
        raise InputError("no scorers configured (add 'scorers:' or a 'preset:')", path=suite.source)
    check_suite(suite, scorers, cases, places, baseline=baseline)
    check_systems(suite)
    text_fields = text_fields_for(suite_reads(list(scorers.values())))
    files = list(case_files(suite.cases, suite.base_dir))
    files += [suite.resolve(cfg.predictions) for cfg in suite.systems if cfg.predictions]
    systems = system_runs(suite, cases, text_fields, lazy=lazy)
    if selection is not None and not selection.everything:
        if lazy:
            raise InputError("a subset of cases (--filter, --limit) is run unsharded")
        cases = selection.apply(cases)
    config_json = suite.model_dump_json(exclude=_NOT_HASHED)
    return RunPlan(
        suite=suite,
        cases=cases,
        scorers=scorers,
        systems=systems,
        config_hash=hashlib.sha256(config_json.encode()).hexdigest(),
        inputs_hash=_hash_files(files),
        input_files=[str(p) for p in files],
        lazy=lazy,
        selection=None if selection is None or selection.everything else selection.describe(),
    )


def system_runs(
    suite: SuiteConfig,
    cases: list[Case],
    text_fields: TextFields,
    *,
    lazy: bool = False,
    predictions: bool = True,
) -> list[SystemRun]:
    """The suite's system configurations to run (a grid's callable gives one per point):
    saved predictions read and checked against `cases` (`lazy`: only found, left for the
    sharded workers; `predictions=False`: not read, as a cluster's worker that is sent the
    outputs), live systems built (not attached)."""
    known = {c.id for c in cases}
    systems: list[SystemRun] = []
    for i, cfg in enumerate(suite.systems):
        if cfg.predictions:
            path = suite.resolve(cfg.predictions)
            if lazy and not path.is_file():  # read later by the workers: checked here
                raise InputError("cannot read predictions (no such file)", path=path)
            with bulk_allocation():
                preds = (
                    PredictionsFile(path, known, text_fields) if predictions and not lazy else None
                )
            systems.append(SystemRun(cfg.name, {}, predictions=preds))
        elif cfg.callable:
            try:
                fn = import_callable(cfg.callable, suite.base_dir)
            except InputError as exc:
                raise InputError(
                    exc.message, path=suite.source, where=f"systems[{i}].callable"
                ) from None
            for name, params in cfg.configurations():
                systems.append(
                    SystemRun(
                        name,
                        params,
                        callable=CallableSystem(fn, params, cfg.timeout_s, text_fields),
                        concurrency=cfg.concurrency,
                        group=cfg.name,
                    )
                )
        else:  # a model or an endpoint: queryeval calls it
            live = build_system(suite, i, cfg, cases)
            concurrency = getattr(live, "concurrency", cfg.concurrency)
            systems.append(SystemRun(cfg.name, {}, callable=live, concurrency=concurrency))
    return systems


class Runner:
    """Executes a RunPlan into a run directory."""

    def __init__(
        self,
        plan: RunPlan,
        out_dir: Path,
        *,
        progress: bool = True,
        use_cache: bool = True,
        review: dict[str, Any] | None = None,
    ) -> None:
        self.plan = plan
        self.use_cache = use_cache
        self.review = review  # the review file applied (Review.describe()), for run.json
        # what the summary needs of every record, kept in memory so it is not read back
        self.columns = RunColumns([s.name for s in plan.systems])
        self.done: set[tuple[str, str]] = set()
        # stored outputs scored again (`run --retry-errors`), by (system, case id)
        self.retry: dict[tuple[str, str], Output] = {}
        self.store = LogWriter(out_dir)
        self.progress = progress
        self.ctx = ScoringContext(plan.suite, cache_dir=cache_dir(plan.suite))
        self._errors: dict[str, int] = {}  # scorer label -> error scores so far
        self._first_error: dict[str, str] = {}
        self.cluster: Any = None  # the Ray executor of an `executor: ray` run (its stats)
        self._planned = len(plan.systems) * len(plan.cases)
        self._error_limit = plan.suite.settings.max_scorer_error_share * self._planned

    # --- run metadata -------------------------------------------------------------------

    def _run_json(self, previous: dict[str, Any] | None, status: str) -> RunInfo:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        info = cast(RunInfo, dict(previous or {}))
        info.setdefault("started_at", now)
        info.update(
            {
                "suite": self.plan.suite.name,
                "suite_file": str(self.plan.suite.source) if self.plan.suite.source else None,
                "config_hash": self.plan.config_hash,
                "inputs_hash": self.plan.inputs_hash,
                "input_files": self.plan.input_files,
                "config": self.plan.suite.model_dump(mode="json", exclude={"base_dir", "source"}),
                "scorers": {k: s.describe() for k, s in self.plan.scorers.items()},
                "systems": [_describe(s) for s in self.plan.systems],
                "seed": self.plan.suite.seed,
                "versions": dict(_versions()),
                "status": status,
                "updated_at": now,
            }
        )
        calls = {
            s.name: getattr(s.callable, "run_stats")()  # noqa: B009 - model/endpoint only
            for s in self.plan.systems
            if hasattr(s.callable, "run_stats")
        }
        if self.cluster is not None and self.cluster.system_calls:
            calls = self.cluster.system_calls  # the calls were made in the cluster's workers
        if calls:  # model and endpoint systems: calls, cache hits, tokens, cost of this run
            info["system_calls"] = calls
        if self.cluster is not None and self.cluster.stats:
            info["cluster"] = self.cluster.stats  # the Ray executor's actors and workers
        elif self.cluster is None:
            info.pop("cluster", None)
        if self.review is not None:
            info["review"] = self.review
        else:
            info.pop("review", None)
        if self.plan.selection is not None:
            info["selection"] = self.plan.selection
        else:
            info.pop("selection", None)
        if status == "complete":
            info["finished_at"] = now
        return info

    def _check_resume(self, previous: dict[str, Any] | None) -> None:
        if previous is None:
            return
        before, now = previous.get("review") or {}, self.review or {}
        golds = before.get("gold_corrections") or now.get("gold_corrections")
        if golds and before.get("sha256") != now.get("sha256"):
            raise InputError(
                "the review file's gold corrections changed since this run began; --resume "
                "needs the same (use a new --out directory, or --overwrite)",
                path=self.store.dir / RUN,
                where="review",
            )
        for key in ("config_hash", "inputs_hash"):
            if previous.get(key) != getattr(self.plan, key):
                what = "suite configuration" if key == "config_hash" else "cases or predictions"
                raise InputError(
                    f"the {what} changed since this run began; --resume needs the same inputs "
                    "(use a new --out directory, or --overwrite)",
                    path=self.store.dir / RUN,
                    where=key,
                )

    # --- main loop ----------------------------------------------------------------------

    def run(
        self, *, resume: bool = False, overwrite: bool = False, retry_errors: bool = False
    ) -> tuple[int, int]:
        """Generate and score every (system, case) not yet stored. Returns (new, skipped).
        `retry_errors` (a resume): the stored records with a score in `error` or `unscored`
        (a judge or an engine that was down, a scorer that broke) are scored again from their
        stored outputs (the system is not called again); the others are kept."""
        resume = resume or retry_errors
        store = self.store
        if store.has_results() and not (resume or overwrite):
            raise InputError(
                "this directory already holds a run; pass --resume to continue it or "
                "--overwrite to replace it",
                path=store.results_path,
            )
        if overwrite and not resume:
            store.clear()
        previous = read_json(store.dir, RUN) if resume else None
        if resume:
            self._check_resume(previous)
            store.repair_tail()
        done = self.done = set()
        if resume:
            kept: list[Record] = []
            for record in iter_records(store.dir):
                if retry_errors and _needs_retry(record):
                    key = (record["system"], record["case_id"])
                    self.retry[key] = Output.model_validate(record.get("output") or {})
                    continue
                kept.append(record)
                self.columns.add(record)
                done.add((record["system"], record["case_id"]))
        if not self.plan.lazy and self.plan.suite.settings.executor != "ray":
            self._check_servers()  # before a record is rewritten or run.json written
        if resume:
            if self.retry:  # the retried records leave the file; their new ones are appended
                store.rewrite(kept)
            del kept
        store.write_json(RUN, self._run_json(previous, "running"))
        if self.plan.lazy:
            return self._run_sharded(len(done))
        todo: list[WorkItem] = [
            (system, case)
            for system in self.plan.systems
            for case in self.plan.cases
            if (system.name, case.id) not in done
        ]
        live = [s.callable for s in self.plan.systems if s.callable is not None]
        attach_systems(live, self.ctx, use_cache=self.use_cache)
        on_ray = self.plan.suite.settings.executor == "ray"
        if not on_ray:  # a cluster's workers prepare their own scorers
            for scorer in self.plan.scorers.values():
                scorer.prepare(self.plan.cases, self.ctx)
        self._print_estimate()
        try:
            with contextlib.ExitStack() as stack:
                executor = self._ray_executor(stack) if on_ray else self._executor(len(todo))
                store.open_for_append()
                with Progress(len(todo), f"{self.plan.suite.name}", self.progress) as bar:

                    def emit(scored: Scored) -> None:
                        self._keep(scored)
                        bar.advance()

                    work = ScoreWork(self.plan.scorers, self.ctx, self.retry)
                    executor.run(todo, work, emit)
        finally:
            store.close()
            self.ctx.close()
        return len(todo), len(done)

    def _check_servers(self) -> None:
        """The first golds of each server database still to score, on the run's engines:
        all failing with an engine or schema error stops the run (exit 2), the stored
        records kept."""
        from queryeval.runner._check import server_gold_problem

        names = {s.name for s in self.plan.systems}
        cases = [c for c in self.plan.cases if any((n, c.id) not in self.done for n in names)]
        server_gold_problem(self.plan.suite, self.plan.scorers.values(), cases, self.ctx)

    def _ray_executor(self, stack: contextlib.ExitStack) -> Executor:
        """The Ray executor of `settings.executor: ray` (joined or started; left by
        `stack`)."""
        from queryeval.runner._ray import RayExecutor

        plan = self.plan
        executor = RayExecutor(
            plan.suite.settings.ray,
            cases=plan.cases,
            text_fields=text_fields_for(suite_reads(list(plan.scorers.values()))),
            use_cache=self.use_cache,
            key=plan.config_hash,
        )
        self.cluster = executor
        return stack.enter_context(executor)

    def _print_estimate(self) -> None:
        """Before spending: judge calls not in cache, tokens and cost (nothing is called)."""
        from queryeval.scorers import estimate, judged_scorers

        if not any(judged_scorers(list(self.plan.scorers.values()))):
            return
        outputs = {s.name: s.predictions.outputs for s in self.plan.systems if s.predictions}
        line = estimate(self.plan.suite, self.plan.cases, outputs, ctx=self.ctx).line()
        print(f"[queryeval] {line}", file=sys.stderr)

    def _run_sharded(self, skipped: int) -> tuple[int, int]:
        from queryeval.runner._executors import PoolExecutor
        from queryeval.runner._sharded import run_sharded, workers_for

        settings = self.plan.suite.settings
        try:
            if settings.executor == "ray":
                from queryeval.runner._ray import RayExecutor

                self.cluster = RayExecutor(settings.ray, key=self.plan.config_hash)
                with self.cluster as cluster:
                    stubs, columns, written = run_sharded(
                        self, cluster, workers=cluster.workers, shards=settings.ray.shards
                    )
            else:
                with PoolExecutor(workers_for(self.plan.suite)) as pool:
                    stubs, columns, written = run_sharded(self, pool)
        finally:
            self.ctx.close()
        self.plan.cases = cast(list[Case], stubs)
        self.columns.extend(columns)
        return written, skipped

    def _executor(self, items: int) -> Executor:
        """A loop for saved predictions scored by synchronous scorers, or forked workers
        when they run the predictions on local database files (`runner._forked`); else the
        event loop, with each configured system's concurrency (and the judge's, when it
        asks for more: judged scoring overlaps many calls even when outputs are saved)."""
        systems = self.plan.systems
        scorers = self.plan.scorers.values()
        if all(s.predictions is not None for s in systems) and not any(
            s.is_async or s.blocking for s in scorers
        ):
            from queryeval.runner._forked import fork_workers

            workers = fork_workers(self.plan.suite, scorers, items)
            if workers:
                from queryeval.runner._executors import ForkExecutor

                return ForkExecutor(workers)
            return InlineExecutor()
        wanted = sum(s.concurrency for s in systems)
        judge = (self.plan.suite.judge or {}).get("concurrency")
        if judge:
            wanted = max(wanted, int(judge))
        return AsyncExecutor({s.group or s.name: s.concurrency for s in systems}, wanted)

    def _keep(self, scored: Scored) -> None:
        """The driver's side of every result: stored, kept for the summary, errors counted."""
        if scored.line is None:
            self.store.append(scored.record)
        else:
            self.store.write_lines(scored.line)
        self.columns.add(scored.record, scored.scores)
        for label, score in scored.scores.items():
            if score.status == "error":
                self._count_error(label, score)

    def _count_error(self, label: str, score: Score) -> None:
        """Stop the run as soon as a scorer has raised on more than the allowed share of the
        cases it is planned to score (a scorer bug is not a score)."""
        first = self._first_error.setdefault(label, score.explanation)
        self._errors[label] = n = self._errors.get(label, 0) + 1
        if n > self._error_limit:
            raise _broken_scorer(label, n, f"{self._planned} planned", first, self.plan.suite)

    def _check_errors(self) -> None:
        """After the run: the same rule over every record (sharded and resumed ones too)."""
        for name in self.columns.systems:
            for label, column in self.columns.system(name).scorers.items():
                n, total = column.error_count()
                limit = self.plan.suite.settings.max_scorer_error_share * total
                if n > limit:
                    first = next(iter(column.reasons.values()), "")
                    raise _broken_scorer(label, n, f"{total}", first, self.plan.suite)

    # --- after the run ------------------------------------------------------------------

    def finish(self, baseline: RunLog | None = None) -> tuple[Summary, list[GateResult]]:
        """Write summary.json (from the stored records) and mark run.json complete. Gates
        relative to a baseline are checked against the `baseline` run's summary."""
        from queryeval.stats import check_gates, summarize

        self._check_errors()
        with bulk_allocation():
            summary = summarize(
                self.plan.suite.name,
                self.plan.cases,
                self.columns,
                self.plan.scorers,
                [s.name for s in self.plan.systems],
                seed=self.plan.suite.seed,
                max_unscored_share=self.plan.suite.settings.max_unscored_share,
            )
        gates = check_gates(
            self.plan.suite.gates, summary, baseline.summary if baseline is not None else None
        )
        summary["gates"] = gates
        self.store.write_json(SUMMARY, summary)
        previous = read_json(self.store.dir, RUN)
        info = self._run_json(previous, "complete")
        if baseline is not None:
            info["baseline"] = str(baseline.path)
        self.store.write_json(RUN, info)
        return summary, gates


def _describe(system: SystemRun) -> dict[str, Any]:
    """A system configuration as run.json records it."""
    out: dict[str, Any] = {"name": system.name, "params": system.params}
    describe = getattr(system.callable, "describe", None)
    if callable(describe):
        out.update(describe())
    return out


def _broken_scorer(label: str, n: int, of: str, first: str, suite: SuiteConfig) -> InputError:
    share = suite.settings.max_scorer_error_share
    return InputError(
        f"scorer {label!r} raised on {n} of {of} cases, more than "
        f"settings.max_scorer_error_share ({share:g}): a scorer bug is not a score; first: "
        f"{first.splitlines()[0][:300] if first else 'no message'} (the records are kept; "
        "fix the scorer and run again with --overwrite)",
        path=suite.source,
        where=f"scorers.{label}",
    )


def cache_dir(suite: SuiteConfig) -> Path:
    """The folder of the suite's caches (gold results, fixture databases, judge replies)."""
    configured = suite.settings.cache_dir
    if configured:
        return suite.resolve(str(configured))
    return Path.cwd() / ".queryeval-cache"


@functools.cache
def _versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "queryeval": __version__}
    for name in _VERSIONED:
        with contextlib.suppress(PackageNotFoundError):
            out[name] = version(name)
    return out


_STUB_REPORTS = {"json", "console", "junit"}


def default_out_dir(suite: SuiteConfig) -> Path:
    """runs/<suite name> beside the working folder, unless the suite names `out`."""
    if suite.out:
        return suite.resolve(suite.out)
    return Path("runs") / suite.name


def run_suite(
    suite: SuiteConfig,
    out_dir: Path | None = None,
    *,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = True,
    write_reports: bool = True,
    baseline: Path | None = None,
    extra_reports: Sequence[ReportConfig] = (),
    use_cache: bool = True,
    review: Path | None = None,
    selection: CaseSelection | None = None,
    retry_errors: bool = False,
) -> RunResult:
    """Plan, run, summarise and report one suite. `baseline` (a run directory) overrides the
    suite's `baseline:`; `extra_reports` are written beside the suite's (e.g. `--junit`);
    `use_cache=False` asks model systems again instead of reading their cached replies;
    `review` (a review file) corrects golds before scoring and overrides verdicts after;
    `selection` runs a subset of the cases (predictions for the others are ignored);
    `retry_errors` resumes the run in `out_dir`, scoring again the stored records that a
    judge, engine or scorer left `unscored` or in `error` (from their stored outputs)."""
    with run_scope():  # the collector as it was, afterwards (queryeval._gc)
        return _run_suite(
            suite,
            out_dir,
            resume=resume,
            overwrite=overwrite,
            progress=progress,
            write_reports=write_reports,
            baseline=baseline,
            extra_reports=extra_reports,
            use_cache=use_cache,
            review=review,
            selection=selection,
            retry_errors=retry_errors,
        )


def _run_suite(
    suite: SuiteConfig,
    out_dir: Path | None,
    *,
    resume: bool,
    overwrite: bool,
    progress: bool,
    write_reports: bool,
    baseline: Path | None,
    extra_reports: Sequence[ReportConfig],
    use_cache: bool,
    review: Path | None,
    selection: CaseSelection | None,
    retry_errors: bool,
) -> RunResult:
    from queryeval.runner._baseline import compare_with_baseline, load_baseline
    from queryeval.runner._review import apply_golds
    from queryeval.runner._review_file import load_review
    from queryeval.runner._sharded import can_shard

    rev = load_review(review) if review is not None else None
    subset = selection is not None and not selection.everything
    # sharded workers load their own cases: a run correcting golds or running a subset is
    # not sharded
    on_ray = suite.settings.executor == "ray"
    lazy = not subset and not (rev is not None and rev.golds) and can_shard(suite, any_size=on_ray)
    plan = plan_run(
        suite,
        lazy=lazy,
        baseline=bool(baseline),
        selection=selection,
    )
    if rev is not None and rev.golds:
        plan.cases = apply_golds(plan.cases, rev)
    base = load_baseline(suite, baseline, [s.name for s in plan.systems])
    out = Path(out_dir) if out_dir is not None else default_out_dir(suite)
    with run_lock(out):  # one run per directory: a second one is refused, naming the first
        runner = Runner(
            plan,
            out,
            progress=progress,
            use_cache=use_cache,
            review=rev.describe() if rev is not None else None,
        )
        new, skipped = runner.run(resume=resume, overwrite=overwrite, retry_errors=retry_errors)
        summary, gates = runner.finish(base)
        if rev is None:  # a review of an earlier run in this directory no longer applies
            with contextlib.suppress(FileNotFoundError):
                (out / REVIEW).unlink()
        else:
            if plan.lazy:
                plan.cases = load_cases(suite.cases, suite.base_dir)
                plan.lazy = False
            summary, _ = reviewed_summary(plan, runner.store, rev, base)
            gates = summary["gates"]
        # before the reports, which show their figures beside the original ones
        overlays = _apply_overlays(suite, plan, runner.store, out)
        # the records as read_log gives them: review.json's overrides over the stored ones
        info = cast(RunInfo, read_json(out, RUN))
        log = RunLog(str(out), out, summary, info, review=read_json(out, REVIEW), overlays=overlays)
        if base is not None:
            log.comparison = compare_with_baseline(suite, base, log.records, out)
            runner.store.write_json(COMPARISON, log.comparison)
        if plan.lazy and any(r.kind not in _STUB_REPORTS for r in [*suite.reports, *extra_reports]):
            plan.cases = load_cases(suite.cases, suite.base_dir)  # these reports show whole cases
        reports: dict[str, Path] = {}
        if write_reports:
            from queryeval.reports import write_reports as _write

            reports = _write(suite, log, plan.cases, plan.scorers, extra=extra_reports)
        return RunResult(out, summary, gates, reports, new, skipped, overlays)


def _apply_overlays(
    suite: SuiteConfig, plan: RunPlan, store: LogWriter, out: Path
) -> list[dict[str, Any]]:
    """The suite's correction overlays applied to the scored run (docs/audit.md), before its
    reports are written (they show the overlays' figures): each corrected case scored again
    from its stored output into overlay-<name>.json beside the run's own files, which stay
    as they are; run.json records each overlay's name and hash. Overlay files of an earlier
    run in this directory go first: `queryeval report` shows every one it finds."""
    for stale in [*out.glob("overlay-*.json"), *out.glob("overlay-*.html")]:
        stale.unlink(missing_ok=True)
    if not suite.overlays:
        return []
    from queryeval.audit import apply_overlays
    from queryeval.scorers import ScoringContext

    cases = load_cases(suite.cases, suite.base_dir) if plan.lazy else plan.cases
    ctx = ScoringContext(suite, cache_dir=cache_dir(suite))
    try:
        done = apply_overlays(out, suite, cases, ctx)
    finally:
        ctx.close()
    info = cast(dict[str, Any], read_json(out, RUN))
    info["overlays"] = [
        {k: c["overlay"][k] for k in ("name", "sha256", "file") if k in c["overlay"]} for c in done
    ]
    store.write_json(RUN, info)
    return done


def reviewed_summary(
    plan: RunPlan, store: LogWriter, review: Review, baseline: RunLog | None
) -> tuple[Summary, list[Record]]:
    """The stored records with the review's overrides, their summary (with its `review`
    section and the gates checked again), written to summary.json; run.json records the
    review file, review.json the overridden scores (what `log.read_log` puts over the
    stored records)."""
    from queryeval.runner._review import apply_overrides, review_section, reviewed_scores
    from queryeval.stats import check_gates, summarize

    records = cast(
        list[Record], apply_overrides(list(iter_records(store.dir)), review, plan.scorers)
    )
    summary = summarize(
        plan.suite.name,
        plan.cases,
        records,
        plan.scorers,
        [s.name for s in plan.systems],
        seed=plan.suite.seed,
        max_unscored_share=plan.suite.settings.max_unscored_share,
    )
    summary["review"] = review_section(review, records)
    store.write_json(REVIEW, reviewed_scores(review, records))
    summary["gates"] = check_gates(
        plan.suite.gates, summary, baseline.summary if baseline is not None else None
    )
    store.write_json(SUMMARY, summary)
    info = cast(RunInfo, read_json(store.dir, RUN) or {})
    info["review"] = review.describe()
    store.write_json(RUN, info)
    return summary, records


def dumps(data: Any) -> str:
    """Pretty JSON text (for the CLI)."""
    return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()


def _needs_retry(record: Record) -> bool:
    """Whether a stored record has a score the evaluator could not give (`error`, or
    `unscored`: its judge, embedder or engine trouble), for `run --retry-errors`.

    >>> _needs_retry({"scores": {"a": {"status": "ok"}, "b": {"status": "unscored"}}})
    True
    """
    return any(s.get("status") in ("error", "unscored") for s in record.get("scores", {}).values())
