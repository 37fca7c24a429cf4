"""Run a suite: plan -> schedule -> the executor carries the units to the worker -> the
driver (`Runner`, the only writer) stores every record, then summary, reports and gates."""

from __future__ import annotations

import contextlib
import functools
import platform
import sys
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from queryeval import __version__
from queryeval._gc import bulk_allocation, run_scope
from queryeval.cases import Case, Output, load_cases
from queryeval.config import ReportConfig, SuiteConfig
from queryeval.errors import InputError
from queryeval.log import (
    COMPARISON,
    OVERLAY_PAGES,
    OVERLAYS,
    REVIEW,
    REVIEWED_IN_VIEWER,
    RUN,
    SUMMARY,
    GateResult,
    LogWriter,
    OverlayInfo,
    Record,
    RunInfo,
    RunLog,
    Summary,
    SystemInfo,
    iter_records,
    read_log,
    read_review,
    read_run_info,
    run_lock,
)
from queryeval.runner._plan import RunPlan, SystemRun, cache_dir, plan_run
from queryeval.runner._progress import Progress
from queryeval.runner._select import CaseSelection
from queryeval.runner._work import Batch

if TYPE_CHECKING:
    from queryeval.runner._pipeline import Scored
    from queryeval.runner._review import Review
    from queryeval.scorers import ScoringContext
    from queryeval.stats import RunColumns

# the packages whose versions run.json records (those installed)
_VERSIONED = ("pydantic", "numpy", "duckdb", "duckdb-kql", "neo4j", "openai",
              "sentence-transformers", "torch", "rapidfuzz", "sacrebleu", "sqlglot",
              "xlsxwriter")  # fmt: skip


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
                share = entry["no_verdict_share"]
                flags.append({"system": name, "scorer": "pass_rate", "unscored_share": share})
            flags += [
                {"system": name, "scorer": label, "unscored_share": s.get("unscored_share")}
                for label, s in entry.get("scorers", {}).items()
                if s.get("flagged")
            ]
        return flags


class Runner:
    """Executes a RunPlan into a run directory: `run` stores every record, `finish` the
    summary; run.json (`info`) says what ran and how far it got."""

    def __init__(
        self,
        plan: RunPlan,
        out_dir: Path,
        *,
        progress: bool = True,
        use_cache: bool = True,
        review: Review | None = None,
    ) -> None:
        from queryeval.stats import RunColumns

        self.plan = plan
        self.use_cache = use_cache
        self.review = review  # the review file applied (run.json records it)
        # what the summary needs of every record, kept in memory so it is not read back
        self.columns = RunColumns([s.name for s in plan.systems])
        self.done: set[tuple[str, str]] = set()
        # stored outputs scored again (`run --retry-errors`), by (system, case id)
        self.retry: dict[tuple[str, str], Output] = {}
        self.store = LogWriter(out_dir)
        self.info: RunInfo = {}  # run.json as last written
        self.progress = progress
        self._errors: dict[str, int] = {}  # scorer label -> error scores so far
        self._first_error: dict[str, str] = {}
        self.executor: Any = None  # what carried the units (its stats: run.json's `cluster`)
        self._blocks: dict[int, RunColumns] = {}  # columns of units scored elsewhere, by index
        self._calls: dict[str, dict[str, dict[str, Any]]] = {}  # worker -> system -> counters
        self._planned = len(plan.systems) * len(plan.cases)
        self._error_limit = plan.suite.settings.max_scorer_error_share * self._planned

    # --- run metadata -------------------------------------------------------------------

    def _write_info(self, status: str) -> None:
        """run.json: what ran, with which inputs and versions, and `status`; what an
        earlier run in this directory (resumed) recorded is kept unless this one says it."""
        plan, now = self.plan, datetime.now(UTC).isoformat(timespec="seconds")
        info = self.info
        info.setdefault("started_at", now)
        info.update(
            {
                "suite": plan.suite.name,
                "suite_file": str(plan.suite.source) if plan.suite.source else None,
                "config_hash": plan.config_hash,
                "inputs_hash": plan.inputs_hash,
                "input_files": plan.input_files,
                "config": plan.suite.model_dump(mode="json", exclude={"base_dir", "source"}),
                "scorers": {k: s.describe() for k, s in plan.scorers.items()},
                "systems": [_describe(s) for s in plan.systems],
                "seed": plan.suite.seed,
                "versions": dict(_versions()),
                "status": status,
                "updated_at": now,
            }
        )
        calls: dict[str, Any] = {}
        for per_system in self._calls.values():  # every worker's counters, added up
            for name, stats in per_system.items():
                calls[name] = _added(calls.get(name, {}), stats)
        if calls:  # model and endpoint systems: calls, cache hits, tokens, cost of this run
            info["system_calls"] = calls
        info.pop("cluster", None)
        if cluster := getattr(self.executor, "stats", None):
            info["cluster"] = cluster  # the Ray executor's actors and workers
        info.pop("review", None)
        if self.review is not None:
            info["review"] = self.review.describe()
        info.pop("selection", None)
        if plan.selection is not None:
            info["selection"] = plan.selection
        if status == "complete":
            info["finished_at"] = now
        self.store.write_json(RUN, info)

    def _resumed(self, retry_errors: bool) -> list[Record]:
        """The stored records of the run resumed (its torn tail cut, its run.json checked
        against this plan), kept and counted done; with `retry_errors` those the evaluator
        could not score are left out, their outputs kept to be scored again."""
        previous = read_run_info(self.store.dir)
        if previous is not None:
            self.info, again = previous, "(use a new --out directory, or --overwrite)"
            before = previous.get("review") or {}
            now = self.review.describe() if self.review is not None else {}
            golds = before.get("gold_corrections") or now.get("gold_corrections")
            if golds and before.get("sha256") != now.get("sha256"):
                raise InputError(
                    "the review file's gold corrections changed since this run began; "
                    f"--resume needs the same {again}",
                    path=self.store.dir / RUN,
                    where="review",
                )
            hashed = {"config_hash": "suite configuration", "inputs_hash": "cases or predictions"}
            for hash_key, what in hashed.items():
                if previous.get(hash_key) != getattr(self.plan, hash_key):
                    raise InputError(
                        f"the {what} changed since this run began; --resume needs the same "
                        f"inputs {again}",
                        path=self.store.dir / RUN,
                        where=hash_key,
                    )
        self.store.repair_tail()
        kept: list[Record] = []
        for record in iter_records(self.store.dir):
            key = (record["system"], record["case_id"])
            if retry_errors and _needs_retry(record):
                self.retry[key] = Output.model_validate(record.get("output") or {})
                continue
            kept.append(record)
            self.columns.add(record)
            self.done.add(key)
        return kept

    # --- main loop ----------------------------------------------------------------------

    def run(
        self, *, resume: bool = False, overwrite: bool = False, retry_errors: bool = False
    ) -> tuple[int, int]:
        """Generate and score every (system, case) not yet stored. Returns (new, skipped).
        `retry_errors` (a resume): the stored records with a score in `error` or `unscored`
        (a judge or an engine that was down, a scorer that broke) are scored again from their
        stored outputs (the system is not called again); the others are kept."""
        from queryeval.runner._units import schedule

        resume = resume or retry_errors
        store, plan = self.store, self.plan
        if store.has_results() and not (resume or overwrite):
            raise InputError(
                "this directory already holds a run; pass --resume to continue it or "
                "--overwrite to replace it",
                path=store.results_path,
            )
        if overwrite and not resume:
            store.clear()
        kept = self._resumed(retry_errors) if resume else []
        run_key = f"{plan.config_hash}:{store.dir}:{uuid.uuid4().hex}"  # one run's state
        with schedule(
            plan, done=self.done, stored=self.retry, use_cache=self.use_cache, key=run_key
        ) as scheduled:
            self.executor = scheduled.executor
            if not plan.lazy:  # on the worker's services: a cluster's are its actors
                self._check_servers(scheduled.worker.start().ctx)  # before anything is written
                self._print_estimate()
            if self.retry:  # the retried records leave the file; their new ones are appended
                store.rewrite(kept)
            del kept
            self._write_info("running")
            todo = sum(unit.todo() for unit in scheduled.units)
            store.open_for_append()
            try:
                with Progress(todo, plan.suite.name, self.progress) as bar:
                    scheduled.executor.run(
                        scheduled.units,
                        scheduled.worker,
                        lambda done: bar.advance(self._keep(done)),
                    )
            finally:
                store.close()
            if scheduled.stubs is not None:  # the units read their own cases
                plan.cases = cast(list[Case], scheduled.stubs)
            if not self._calls:  # else the calls were made in the workers
                self._calls = {"": scheduled.worker.calls()}
        for index in sorted(self._blocks):
            self.columns.extend(self._blocks.pop(index))
        return todo, len(self.done)

    def _check_servers(self, ctx: ScoringContext) -> None:
        """The first golds of each server database still to score, on the run's engines
        (`ctx`): all failing with an engine or schema error stops the run (exit 2), the
        stored records kept."""
        from queryeval.runner._check import server_gold_problem

        names = {s.name for s in self.plan.systems}
        cases = [c for c in self.plan.cases if any((n, c.id) not in self.done for n in names)]
        server_gold_problem(self.plan.suite, self.plan.scorers.values(), cases, ctx)

    def _print_estimate(self) -> None:
        """Before spending: judge calls not in cache, tokens and cost (nothing is called)."""
        from queryeval.scorers import ScoringContext, estimate, judged_scorers

        if not any(judged_scorers(list(self.plan.scorers.values()))):
            return
        outputs = {s.name: s.predictions.outputs for s in self.plan.systems if s.predictions}
        ctx = ScoringContext(self.plan.suite, cache_dir=cache_dir(self.plan.suite))
        try:
            line = estimate(self.plan.suite, self.plan.cases, outputs, ctx=ctx).line()
        finally:
            ctx.close()
        print(f"[queryeval] {line}", file=sys.stderr)

    def _keep(self, done: Scored | Batch) -> int:
        """The driver's side of every result: stored, kept for the summary, errors counted;
        how many records it held."""
        if not isinstance(done, Batch):  # one Scored record
            self.store.append(done.record)
            self.columns.add(done.record, done.scores)
            for label, score in done.scores.items():
                if score.status == "error":
                    self._count_error(label, score.explanation)
            return 1
        self.store.write_lines(done.lines)  # a unit scored elsewhere
        self._blocks[done.index] = done.columns
        if done.calls:  # each worker's counters so far (they only grow)
            self._calls[done.worker] = done.calls
        for table in done.columns.systems.values():
            for label, column in table.scorers.items():
                n, _ = column.error_count()
                if n:
                    first = next(iter(column.reasons.values()), "")
                    self._count_error(label, first.partition(":")[2] or first, n)
        return done.scored

    def _count_error(self, label: str, explanation: str, n: int = 1) -> None:
        """Stop the run as soon as a scorer has raised on more than the allowed share of the
        cases it is planned to score (a scorer bug is not a score)."""
        first = self._first_error.setdefault(label, explanation)
        self._errors[label] = n = self._errors.get(label, 0) + n
        if n > self._error_limit:
            raise _broken_scorer(label, n, f"{self._planned} planned", first, self.plan.suite)

    def _check_errors(self) -> None:
        """After the run: the same rule over every record (sharded and resumed ones too)."""
        for name in self.columns.systems:
            for label, column in self.columns.system(name).scorers.items():
                n, total = column.error_count()
                if n > self.plan.suite.settings.max_scorer_error_share * total:
                    first = next(iter(column.reasons.values()), "")
                    raise _broken_scorer(label, n, f"{total}", first, self.plan.suite)

    # --- after the run ------------------------------------------------------------------

    def finish(self, baseline: RunLog | None = None) -> Summary:
        """Write summary.json (from the stored records; with a review file, its overrides
        over them: `reviewed_summary`) and mark run.json complete. Gates relative to a
        baseline are checked against the `baseline` run's summary."""
        self._check_errors()
        if self.review is None:
            summary = summarized(self.plan, self.columns, baseline)
        else:
            summary = _reviewed(self.plan, self.store, self.review, baseline)
        self.store.write_json(SUMMARY, summary)
        if baseline is not None:
            self.info["baseline"] = str(baseline.path)
        self._write_info("complete")
        return summary

    def apply_overlays(self) -> list[dict[str, Any]]:
        """The suite's correction overlays applied to the scored run (docs/audit.md), before
        its reports are written (they show the overlays' figures): each corrected case
        scored again from its stored output into overlay-<name>.json beside the run's own
        files, which stay as they are; run.json records each overlay's name and hash.
        Overlay files of an earlier run in this directory go first: `queryeval report`
        shows every one it finds."""
        out, suite = self.store.dir, self.plan.suite
        for stale in [*out.glob(OVERLAYS), *out.glob(OVERLAY_PAGES)]:
            stale.unlink(missing_ok=True)
        if not suite.overlays:
            return []
        from queryeval.audit import apply_overlays
        from queryeval.scorers import ScoringContext

        ctx = ScoringContext(suite, cache_dir=cache_dir(suite))
        try:
            done = apply_overlays(out, suite, _whole_cases(self.plan), ctx)
        finally:
            ctx.close()
        keys = ("name", "sha256", "file")
        self.info["overlays"] = [
            cast(OverlayInfo, {k: c["overlay"][k] for k in keys if k in c["overlay"]}) for c in done
        ]
        self.store.write_json(RUN, self.info)
        return done


def summarized(
    plan: RunPlan, records: RunColumns | Iterable[Mapping[str, Any]], baseline: RunLog | None
) -> Summary:
    """The summary of a run's records (or their columns), its gates checked (relative ones
    against the `baseline` run's summary)."""
    from queryeval.stats import check_gates, summarize

    with bulk_allocation():
        summary = summarize(
            plan.suite.name,
            plan.cases,
            records,
            plan.scorers,
            [s.name for s in plan.systems],
            seed=plan.suite.seed,
            max_unscored_share=plan.suite.settings.max_unscored_share,
        )
    summary["gates"] = check_gates(
        plan.suite.gates, summary, baseline.summary if baseline is not None else None
    )
    return summary


def _reviewed(plan: RunPlan, store: LogWriter, review: Review, baseline: RunLog | None) -> Summary:
    """The summary of the stored records with the review's overrides (its `review` section:
    counts and judge-human agreement); review.json gets the overridden scores (what
    `log.read_log` puts over the stored records)."""
    from queryeval.runner._review import apply_overrides, review_section, reviewed_scores

    _whole_cases(plan)
    records = apply_overrides(list(iter_records(store.dir)), review, plan.scorers)
    summary = summarized(plan, records, baseline)
    summary["review"] = review_section(review, records)
    store.write_json(REVIEW, reviewed_scores(review, records))
    return summary


def reviewed_summary(
    plan: RunPlan, store: LogWriter, review: Review, baseline: RunLog | None
) -> Summary:
    """A stored run reviewed again (`queryeval report --review`): its summary with the
    review's overrides written to summary.json, review.json the overridden scores, run.json
    the review file."""
    summary = _reviewed(plan, store, review, baseline)
    store.write_json(SUMMARY, summary)
    info = read_run_info(store.dir) or {}
    info["review"] = review.describe()
    store.write_json(RUN, info)
    return summary


def _whole_cases(plan: RunPlan) -> list[Case]:
    """The plan's cases, loaded whole where the units read their own (a sharded run's
    plan holds only what summaries read of them)."""
    if plan.lazy:
        plan.cases = load_cases(plan.suite.cases, plan.suite.base_dir)
        plan.lazy = False
    return plan.cases


def _describe(system: SystemRun) -> SystemInfo:
    """A system configuration as run.json records it."""
    out = SystemInfo(name=system.name, params=system.params)
    describe = getattr(system.callable, "describe", None)
    if callable(describe):
        out.update(describe())
    return out


_NOT_ADDED = frozenset({"bytes", "max_bytes", "path"})  # a cache file's, the same file


def _added(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Counters of two workers added up (nested ones too; a cache file's size is kept).

    >>> a = {"calls": 2, "cache": {"hits": 1, "bytes": 10}}
    >>> _added(a, {"calls": 3, "cache": {"hits": 2, "bytes": 12}})
    {'calls': 5, 'cache': {'hits': 3, 'bytes': 12}}
    """
    out = dict(a)
    for key, value in b.items():
        mine = out.get(key)
        if isinstance(value, dict):
            out[key] = _added(mine if isinstance(mine, dict) else {}, value)
        elif not (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and isinstance(mine, int | float)
        ):
            out[key] = value
        else:
            out[key] = max(mine, value) if key in _NOT_ADDED else mine + value
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


@functools.cache
def _versions() -> dict[str, str]:
    """The versions run.json records: Python's, queryeval's, each installed `_VERSIONED`."""
    out = {"python": platform.python_version(), "queryeval": __version__}
    for name in _VERSIONED:
        with contextlib.suppress(PackageNotFoundError):
            out[name] = _version(name)
    return out


def _version(name: str) -> str:
    """`importlib.metadata.version(name)`, read from the METADATA header's `Version:` line
    instead of parsing the whole file as an e-mail (half the CPU of a run's run.json for
    the 12 packages; the same value, which the header always has).

    >>> from importlib.metadata import version
    >>> _version("pydantic") == version("pydantic")
    True
    """
    dist = distribution(name)
    header = (dist.read_text("METADATA") or "").partition("\n\n")[0]
    found = (line[9:].strip() for line in header.splitlines() if line.startswith("Version: "))
    return next(found, None) or dist.version


def default_out_dir(suite: SuiteConfig) -> Path:
    """runs/<suite name> beside the working folder, unless the suite names `out`."""
    if suite.out:
        return suite.resolve(suite.out)
    return Path("runs") / suite.name


@run_scope()  # the collector as it was, afterwards (queryeval._gc)
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
    judge, engine or scorer left `unscored` or in `error` (from their stored outputs).

    >>> import inspect
    >>> "selection" in inspect.signature(run_suite).parameters
    True
    """
    from queryeval.runner._baseline import compare_with_baseline, load_baseline
    from queryeval.runner._units import can_shard

    rev = None
    if review is not None:
        from queryeval.runner._review import load_review

        rev = load_review(review)
    golds = rev is not None and bool(rev.golds)
    # sharded workers load their own cases: a run correcting golds or running a subset is
    # not sharded
    subset = selection is not None and not selection.everything
    on_ray = suite.settings.executor == "ray"
    lazy = not subset and not golds and can_shard(suite, any_size=on_ray)
    plan = plan_run(suite, lazy=lazy, baseline=bool(baseline), selection=selection)
    if rev is not None and golds:
        from queryeval.runner._review import apply_golds

        plan.cases = apply_golds(plan.cases, rev)
    base = load_baseline(suite, baseline, [s.name for s in plan.systems])
    out = Path(out_dir) if out_dir is not None else default_out_dir(suite)
    with run_lock(out):  # one run per directory: a second one is refused, naming the first
        runner = Runner(plan, out, progress=progress, use_cache=use_cache, review=rev)
        new, skipped = runner.run(resume=resume, overwrite=overwrite, retry_errors=retry_errors)
        summary = runner.finish(base)
        if rev is None:
            _drop_earlier_review(out, resumed=resume or retry_errors)
        # before the reports, which show their figures beside the original ones
        overlays = runner.apply_overlays()
        # the records as read_log gives them: review.json's overrides over the stored ones
        # (a review kept from the viewer is not applied: the figures are the stored scores,
        # as `queryeval report` without --review gives them)
        log = read_log(out, reviewed=rev is not None)
        log.summary, log.overlays, log.comparison = summary, overlays, None
        if base is not None:
            log.comparison = compare_with_baseline(suite, base, log.records, out)
            runner.store.write_json(COMPARISON, log.comparison)
        reports: dict[str, Path] = {}
        if write_reports:
            from queryeval.reports import write_reports as _write

            whole = (
                functools.partial(load_cases, suite.cases, suite.base_dir) if plan.lazy else None
            )
            reports = _write(
                suite, log, plan.cases, plan.scorers, load_cases=whole, extra=extra_reports
            )
        return RunResult(out, summary, summary["gates"], reports, new, skipped, overlays)


def _drop_earlier_review(out: Path, *, resumed: bool) -> None:
    """A run without a review file: the review.json of an earlier run in this directory no
    longer applies and goes, except the overrides written in `queryeval view` when this run
    resumes the one they review (they stay for the viewer and `report --review`)."""
    if resumed:
        try:
            if (read_review(out) or {}).get("file") == REVIEWED_IN_VIEWER:
                return
        except InputError:  # unreadable: it goes
            pass
    with contextlib.suppress(FileNotFoundError):
        (out / REVIEW).unlink()


def _needs_retry(record: Record) -> bool:
    """Whether a stored record has a score the evaluator could not give (`error`, or
    `unscored`: its judge, embedder or engine trouble), for `run --retry-errors`.

    >>> _needs_retry({"scores": {"a": {"status": "ok"}, "b": {"status": "unscored"}}})
    True
    """
    return any(s.get("status") in ("error", "unscored") for s in record.get("scores", {}).values())
