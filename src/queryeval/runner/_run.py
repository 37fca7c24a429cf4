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
from queryeval.cases import Case, CaseInfo, Output, load_cases
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
from queryeval.runner._progress import progress
from queryeval.runner._select import CaseSelection
from queryeval.runner._work import Batch

if TYPE_CHECKING:
    from queryeval.runner._pipeline import Scored
    from queryeval.runner._review import Review
    from queryeval.stats import RunColumns

# the packages whose versions run.json records (those installed)
_VERSIONED = ("pydantic", "numpy", "duckdb", "duckdb-kql", "neo4j", "openai",
              "sentence-transformers", "torch", "rapidfuzz", "sacrebleu", "sqlglot",
              "xlsxwriter")  # fmt: skip
_NOT_ADDED = frozenset({"bytes", "max_bytes", "path"})  # a cache file's, the same file


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

        self.plan, self.progress, self.use_cache = plan, progress, use_cache
        self.cases: Sequence[CaseInfo] = plan.cases  # a sharded run's: the units' stubs
        self.review = review  # the review file applied (run.json records it)
        # what the summary needs of every record, kept in memory so it is not read back
        self.columns = RunColumns([s.name for s in plan.systems])
        self.done: set[tuple[str, str]] = set()
        # stored outputs scored again (`run --retry-errors`), by (system, case id)
        self.retry: dict[tuple[str, str], Output] = {}
        self.store = LogWriter(out_dir)
        self.info: RunInfo = {}  # run.json as last written
        self.executor: Any = None  # what carried the units (its stats: run.json's `cluster`)
        self._errors: dict[str, tuple[int, str]] = {}  # label -> error scores, the first's
        self._calls: dict[str, dict[str, dict[str, Any]]] = {}  # worker -> system -> counters

    def _write_info(self, status: str) -> None:
        """run.json: what ran, with which inputs and versions, and `status`; what an
        earlier run in this directory (resumed) recorded is kept unless this one says it."""
        plan, info, now = self.plan, self.info, datetime.now(UTC).isoformat(timespec="seconds")
        info.setdefault("started_at", now)
        info.update(RunInfo(
            suite=plan.suite.name,
            suite_file=str(plan.suite.source) if plan.suite.source else None,
            config_hash=plan.config_hash,
            inputs_hash=plan.inputs_hash,
            input_files=plan.input_files,
            config=plan.suite.model_dump(mode="json", exclude={"base_dir", "source"}),
            scorers={k: s.describe() for k, s in plan.scorers.items()},
            systems=[_describe(s) for s in plan.systems],
            seed=plan.suite.seed,
            versions=dict(_versions()),
            status=status,
            updated_at=now,
        ))  # fmt: skip
        # model and endpoint systems' calls, cache hits, tokens, cost: every worker's added up
        if calls := functools.reduce(_added, self._calls.values(), dict[str, Any]()):
            info["system_calls"] = calls
        for key in ("cluster", "review", "selection"):  # this run's, when it has them
            info.pop(key, None)  # type: ignore[misc]
        if cluster := getattr(self.executor, "stats", None):
            info["cluster"] = cluster  # the Ray executor's actors and workers
        if self.review is not None:
            info["review"] = self.review.describe()
        if plan.selection is not None:
            info["selection"] = plan.selection
        if status == "complete":
            info["finished_at"] = now
        self.store.write_json(RUN, info)

    def _resumed(self, retry_errors: bool) -> list[Record]:
        """The stored records of the run resumed (its torn tail cut, its run.json checked
        against this plan), kept and counted done; with `retry_errors` those the evaluator
        could not score are left out, their outputs kept to be scored again."""
        if (was := read_run_info(self.store.dir)) is not None:
            self.info, plan = was, self.plan
            before = was.get("review") or {}
            now = self.review.describe() if self.review is not None else {}
            golds = before.get("gold_corrections") or now.get("gold_corrections")
            sha = before.get("sha256") != now.get("sha256")
            changed = {  # where: (what, whether it changed)
                "review": ("review file's gold corrections", golds and sha),
                "config_hash": ("suite configuration", was.get("config_hash") != plan.config_hash),
                "inputs_hash": ("cases or predictions", was.get("inputs_hash") != plan.inputs_hash),
            }
            for where, (what, differs) in changed.items():
                if differs:
                    raise InputError(f"the {what} changed since this run began; --resume needs "
                                     "the same inputs (use a new --out directory, or --overwrite)",
                                     path=self.store.dir / RUN, where=where)  # fmt: skip
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

    def run(
        self, *, resume: bool = False, overwrite: bool = False, retry_errors: bool = False
    ) -> tuple[int, int]:
        """Generate and score every (system, case) not yet stored; (new, skipped).
        `retry_errors` (a resume): stored records with a score in `error` or `unscored` are
        scored again from their stored outputs (the system is not called again)."""
        from queryeval.runner._check import gold_precheck
        from queryeval.runner._units import schedule

        resume, store, plan = resume or retry_errors, self.store, self.plan
        if store.has_results() and not (resume or overwrite):
            raise InputError("this directory already holds a run; pass --resume to continue it "
                             "or --overwrite to replace it", path=store.results_path)  # fmt: skip
        if overwrite and not resume:
            store.clear()
        kept = self._resumed(retry_errors) if resume else []
        run_key = f"{plan.config_hash}:{store.dir}:{uuid.uuid4().hex}"  # one run's state
        with schedule(
            plan, done=self.done, stored=self.retry, use_cache=self.use_cache, key=run_key
        ) as scheduled:
            self.executor = scheduled.executor
            if scheduled.stubs is not None:  # the units read their own cases
                self.cases = scheduled.stubs
            if not plan.lazy:  # the first golds of each server database still to score, on
                # the worker's engines (a cluster's are its actors), before anything is written
                names = {s.name for s in plan.systems}
                left = [c for c in plan.cases if any((n, c.id) not in self.done for n in names)]
                ctx = scheduled.worker.start().ctx  # closed with the worker
                gold_precheck(plan.suite, plan.scorers.values(), left, ctx, servers=True)
                self._print_estimate()
            if self.retry:  # the retried records leave the file; their new ones are appended
                store.rewrite(kept)
            del kept
            self._write_info("running")
            todo = sum(unit.todo() for unit in scheduled.units)
            store.open_for_append()
            try:
                with progress(todo, plan.suite.name, self.progress) as advance:
                    scheduled.executor.run(scheduled.units, scheduled.worker,
                                           lambda done: advance(self._keep(done)))  # fmt: skip
            finally:
                store.close()
            if not self._calls:  # else the calls were made in the workers
                self._calls = {"": scheduled.worker.calls()}
        return todo, len(self.done)

    def _print_estimate(self) -> None:
        """Before spending: judge calls not in cache, tokens and cost (nothing is called)."""
        from queryeval.scorers import estimate, judged_scorers

        if any(judged_scorers(list(self.plan.scorers.values()))):
            suite, systems = self.plan.suite, self.plan.systems
            outputs = {s.name: s.predictions.outputs for s in systems if s.predictions}
            found = estimate(suite, self.plan.cases, outputs, cache_dir=cache_dir(suite))
            print(f"[queryeval] {found.line()}", file=sys.stderr)

    def _keep(self, done: Scored | Batch) -> int:
        """The driver's side of every result: stored, kept for the summary, errors counted
        (too many stop the run: a scorer bug is not a score); how many records it held."""
        if not isinstance(done, Batch):  # one Scored record
            self.store.append(done.record)
            self.columns.add(done.record, done.scores)
            for label, score in done.scores.items():
                if score.status == "error":
                    self._count_error(label, 1, score.explanation)
            return 1
        self.store.write_lines(done.lines)  # a unit scored elsewhere (they come in unit order)
        self.columns.extend(done.columns)
        if done.calls:  # each worker's counters so far (they only grow)
            self._calls[done.worker] = done.calls
        for table in done.columns.systems.values():
            for label, column in table.scorers.items():
                if (n := column.error_count()[0]) > 0:
                    first = next(iter(column.reasons.values()), "")
                    self._count_error(label, n, first.partition(":")[2] or first)
        return done.scored

    def _count_error(self, label: str, n: int, explanation: str) -> None:
        before, first = self._errors.get(label, (0, explanation))
        self._errors[label] = (n := before + n), first
        planned = len(self.plan.systems) * len(self.cases)
        _check_errors(self.plan.suite, [(label, n, planned, first)], "planned ")

    def finish(self, baseline: RunLog | None = None) -> Summary:
        """Write summary.json (with a review file, `reviewed_summary`) and mark run.json
        complete; relative gates are checked against the `baseline` run's summary."""
        _check_errors(self.plan.suite, [
            (label, *column.error_count(), next(iter(column.reasons.values()), ""))
            for name in self.columns.systems
            for label, column in self.columns.system(name).scorers.items()
        ])  # fmt: skip
        if self.review is None:
            summary = summarized(self.plan, self.columns, baseline, self.cases)
            self.store.write_json(SUMMARY, summary)
        else:
            summary = reviewed_summary(self.plan, self.store, self.review, baseline)
        if baseline is not None:
            self.info["baseline"] = str(baseline.path)
        self._write_info("complete")
        return summary

    def apply_overlays(self) -> list[dict[str, Any]]:
        """The suite's correction overlays (docs/audit.md), before the reports (which show
        their figures): each corrected case scored again from its stored output into
        overlay-<name>.json (the run's own files stay); run.json records each one's name
        and hash. An earlier run's overlay files in this directory go first."""
        out, suite = self.store.dir, self.plan.suite
        for stale in [*out.glob(OVERLAYS), *out.glob(OVERLAY_PAGES)]:
            stale.unlink(missing_ok=True)
        if not suite.overlays:
            return []
        from queryeval.audit import apply_overlays
        from queryeval.scorers import ScoringContext

        with contextlib.closing(ScoringContext(suite, cache_dir=cache_dir(suite))) as ctx:
            done = apply_overlays(out, suite, _whole_cases(self.plan), ctx)
        keys = ("name", "sha256", "file")
        self.info["overlays"] = [
            cast(OverlayInfo, {k: c["overlay"][k] for k in keys if k in c["overlay"]}) for c in done
        ]
        self.store.write_json(RUN, self.info)
        return done


def _check_errors(
    suite: SuiteConfig, counts: Iterable[tuple[str, int, int, str]], of: str = ""
) -> None:
    """InputError when a scorer raised on more than `settings.max_scorer_error_share` of
    its cases: `counts` are (label, errors, cases, the first error's explanation)."""
    share = suite.settings.max_scorer_error_share
    for label, n, total, first in counts:
        if n > share * total:
            first = first.splitlines()[0][:300] if first else "no message"
            raise InputError(f"scorer {label!r} raised on {n} of {total} {of}cases, more than "
                             f"settings.max_scorer_error_share ({share:g}): a scorer bug is not"
                             f" a score; first: {first} (the records are kept; fix the scorer "
                             "and run again with --overwrite)", path=suite.source,
                             where=f"scorers.{label}")  # fmt: skip


def summarized(
    plan: RunPlan,
    records: RunColumns | Iterable[Mapping[str, Any]],
    baseline: RunLog | None,
    cases: Sequence[CaseInfo] | None = None,
) -> Summary:
    """The summary of a run's records (or their columns) over `cases` (the plan's by
    default), its gates checked (relative ones against the `baseline` run's summary)."""
    from queryeval.stats import check_gates, summarize

    suite, cases = plan.suite, plan.cases if cases is None else cases
    with bulk_allocation():
        summary = summarize(suite.name, cases, records, plan.scorers,
                            [s.name for s in plan.systems], seed=suite.seed,
                            max_unscored_share=suite.settings.max_unscored_share)  # fmt: skip
    base = baseline.summary if baseline is not None else None
    summary["gates"] = check_gates(suite.gates, summary, base)
    return summary


def reviewed_summary(
    plan: RunPlan, store: LogWriter, review: Review, baseline: RunLog | None
) -> Summary:
    """The summary of the stored records with the review's overrides (its `review` section:
    counts and judge-human agreement) into summary.json; review.json gets the overridden
    scores (what `log.read_log` puts over the stored records), run.json the review file."""
    from queryeval.runner._review import apply_overrides, reviewed

    _whole_cases(plan)
    records = apply_overrides(list(iter_records(store.dir)), review, plan.scorers)
    summary = summarized(plan, records, baseline)
    summary["review"], scores = reviewed(review, records)
    store.write_json(REVIEW, scores)
    store.write_json(SUMMARY, summary)
    info = read_run_info(store.dir) or {}
    info["review"] = review.describe()
    store.write_json(RUN, info)
    return summary


def _whole_cases(plan: RunPlan) -> list[Case]:
    """The plan's cases, loaded whole where the units read their own."""
    if plan.lazy:
        plan.cases, plan.lazy = load_cases(plan.suite.cases, plan.suite.base_dir), False
    return plan.cases


def _describe(system: SystemRun) -> SystemInfo:
    """A system configuration as run.json records it."""
    out = SystemInfo(name=system.name, params=system.params)
    if callable(describe := getattr(system.callable, "describe", None)):
        out.update(describe())
    return out


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
        elif (
            isinstance(mine, int | float)
            and isinstance(value, int | float)
            and not isinstance(value, bool)
        ):
            out[key] = max(mine, value) if key in _NOT_ADDED else mine + value
        else:
            out[key] = value
    return out


@functools.cache
def _versions() -> dict[str, str]:
    """Python's, queryeval's and each installed `_VERSIONED` package's version, each read
    from its METADATA header's `Version:` line (not the whole file parsed as an e-mail, as
    `importlib.metadata.version` does: half the CPU of a run's run.json).

    >>> from importlib.metadata import version
    >>> _versions()["pydantic"] == version("pydantic")
    True
    """
    out = {"python": platform.python_version(), "queryeval": __version__}
    for name in _VERSIONED:
        with contextlib.suppress(PackageNotFoundError):
            dist = distribution(name)
            header = (dist.read_text("METADATA") or "").partition("\n\n")[0]
            lines = (x[9:].strip() for x in header.splitlines() if x.startswith("Version: "))
            out[name] = next(lines, None) or dist.version
    return out


def default_out_dir(suite: SuiteConfig) -> Path:
    """runs/<suite name> beside the working folder, unless the suite names `out`."""
    return suite.resolve(suite.out) if suite.out else Path("runs") / suite.name


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
    suite's; `extra_reports` beside the suite's (`--junit`); `use_cache=False` asks model
    systems again; `review` (a review file) corrects golds before scoring and overrides
    verdicts after; `selection` runs a subset; `retry_errors` resumes, scoring again from
    their stored outputs the records a judge, engine or scorer left `unscored` or `error`.

    >>> import inspect
    >>> "selection" in inspect.signature(run_suite).parameters
    True
    """
    from queryeval.runner._baseline import compare_with_baseline, load_baseline
    from queryeval.runner._units import can_shard

    rev = None
    if review is not None:  # the reader imported only for a review file (issue 31)
        from queryeval.runner._review import apply_golds, load_review

        rev = load_review(review)
    # sharded workers load their own cases: not a run correcting golds or running a subset
    whole = (rev is not None and rev.golds) or (selection and not selection.everything)
    lazy = not whole and can_shard(suite, any_size=suite.settings.executor == "ray")
    plan = plan_run(suite, lazy=lazy, baseline=bool(baseline), selection=selection)
    if rev is not None and rev.golds:
        plan.cases = apply_golds(plan.cases, rev)
    base = load_baseline(suite, baseline, [s.name for s in plan.systems])
    out = Path(out_dir) if out_dir is not None else default_out_dir(suite)
    with run_lock(out):  # one run per directory: a second one is refused, naming the first
        runner = Runner(plan, out, progress=progress, use_cache=use_cache, review=rev)
        new, skipped = runner.run(resume=resume, overwrite=overwrite, retry_errors=retry_errors)
        summary = runner.finish(base)
        if rev is None:
            _drop_earlier_review(out, resumed=resume or retry_errors)
        overlays = runner.apply_overlays()  # before the reports, which show their figures
        # the records as read_log gives them: review.json's overrides over the stored ones
        # (a review kept from the viewer is not applied, as by `report` without --review)
        log = read_log(out, reviewed=rev is not None)
        log.summary, log.overlays, log.comparison = summary, overlays, None
        if base is not None:
            log.comparison = compare_with_baseline(suite, base, log.records, out)
            runner.store.write_json(COMPARISON, log.comparison)
        reports: dict[str, Path] = {}
        if write_reports:
            from queryeval.reports import write_reports as _write

            load = functools.partial(load_cases, suite.cases, suite.base_dir) if plan.lazy else None
            reports = _write(suite, log, runner.cases, plan.scorers, load_cases=load,
                             extra=extra_reports)  # fmt: skip
        return RunResult(out, summary, summary["gates"], reports, new, skipped, overlays)


def _drop_earlier_review(out: Path, *, resumed: bool) -> None:
    """A run without a review file: an earlier run's review.json here goes, except the
    overrides written in `queryeval view` when this run resumes the one they review."""
    with contextlib.suppress(InputError):  # unreadable: it goes
        if resumed and (read_review(out) or {}).get("file") == REVIEWED_IN_VIEWER:
            return
    with contextlib.suppress(FileNotFoundError):
        (out / REVIEW).unlink()


def _needs_retry(record: Record) -> bool:
    """Whether a stored record has a score the evaluator could not give (`error`, or
    `unscored`), for `run --retry-errors`.

    >>> _needs_retry({"scores": {"a": {"status": "ok"}, "b": {"status": "unscored"}}})
    True
    """
    return any(s.get("status") in ("error", "unscored") for s in record.get("scores", {}).values())
