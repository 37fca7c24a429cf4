"""The runs the viewer serves: every run directory found below its folders, each with what
its small files say (run.json, summary.json, review.json), an index of its records built
on first use, and what could not be read, in words."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from queryeval import __version__
from queryeval.errors import InputError
from queryeval.log import RESULTS, REVIEW, RUN, SUMMARY, lock_holder, read_json
from queryeval.viewer._index import RunIndex, iter_run_dirs


def run_id(path: Path) -> str:
    """A run's id in the viewer: a short hash of its resolved path (stable across restarts)."""
    return hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:12]


@dataclass
class Run:
    """One run directory as the viewer knows it."""

    id: str
    path: Path
    name: str
    index: RunIndex
    info: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None
    review: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    _stamp: tuple[Any, ...] = ()
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def load(self) -> None:
        """Read run.json, summary.json and review.json again when one of them changed (one
        thread at a time: the server's requests run in a thread pool)."""
        with self._lock:
            self._load()

    def _load(self) -> None:
        stamp = tuple(_mtime(self.path / n) for n in (RUN, SUMMARY, REVIEW, RESULTS))
        if stamp == self._stamp:
            return
        self._stamp = stamp
        self.problems = []
        self.info = self._json(RUN)
        self.summary = self._json(SUMMARY)
        self.review = self._json(REVIEW)
        if self.info is None and not any(RUN in p for p in self.problems):
            self.problems.append(f"no {RUN}: what ran is unknown (an older or foreign run)")
        if self.summary is None and not any(SUMMARY in p for p in self.problems):
            self.problems.append(
                f"no {SUMMARY}: the run is running or was stopped before the end; the "
                "figures are counted from the records stored so far"
            )
        made = ((self.info or {}).get("versions") or {}).get("queryeval")
        if self.info is not None and made != __version__:
            self.problems.append(
                f"written by queryeval {made or 'of an unknown version'} (this is "
                f"{__version__}): fields it lacks are shown empty"
            )

    def _json(self, name: str) -> dict[str, Any] | None:
        try:
            return read_json(self.path, name)
        except InputError as exc:
            self.problems.append(f"{name} cannot be read: {exc.message}")
            return None

    @property
    def suite(self) -> str:
        """The suite's name (from the summary, else run.json, else '—')."""
        return str(
            (self.summary or {}).get("suite") or (self.info or {}).get("suite") or "(unknown suite)"
        )

    @property
    def when(self) -> str:
        """When the run finished, else started, else results.jsonl's time."""
        info = self.info or {}
        stamp = info.get("finished_at") or info.get("started_at")
        if stamp:
            return str(stamp)
        mtime = _mtime(self.path / RESULTS) or 0
        return datetime.fromtimestamp(mtime / 1e9, UTC).isoformat(timespec="seconds")

    def index_problems(self) -> list[str]:
        """What the index could not read (after a refresh)."""
        state = self.index.state
        out = []
        if state.bad_count:
            lines = ", ".join(str(b["line"]) for b in state.bad[:10])
            more = f" (first: {lines})" if lines else ""
            out.append(
                f"{state.bad_count} line(s) of results.jsonl are not records and are left out{more}"
            )
        if self.index.torn_tail:
            holder = lock_holder(self.path)
            out.append(
                "the last line of results.jsonl is incomplete: "
                + ("a run is writing it now" if holder else "the run was killed mid-write")
                + "; it is left out"
            )
        if state.cases_problem:
            out.append(state.cases_problem)
        if state.duplicates:
            out.append(
                f"{state.duplicates} record(s) repeat a (system, case) (a resumed or retried "
                "run): the last one counts"
            )
        return out


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


class Catalog:
    """The runs below `roots`, found again on each `runs()` (new runs appear), each loaded
    once and again only when its files change."""

    def __init__(self, roots: Sequence[Path], index_root: Path | None = None) -> None:
        self.roots = [Path(r) for r in roots]
        self.index_root = index_root
        self._runs: dict[str, Run] = {}
        self._lock = threading.Lock()

    def runs(self) -> list[Run]:
        """Every run found, loaded, oldest first."""
        found = []
        with self._lock:
            for path in iter_run_dirs(self.roots):
                rid = run_id(path)
                run = self._runs.get(rid)
                if run is None:
                    run = self._runs[rid] = Run(
                        rid, path, self._name(path), RunIndex(path, self.index_root)
                    )
                found.append(run)
        for run in found:
            run.load()
        found.sort(key=lambda r: (r.when, r.name))
        return found

    def _name(self, path: Path) -> str:
        for root in self.roots:
            try:
                rel = path.resolve().relative_to(root.resolve())
            except ValueError:
                continue
            return str(rel) if str(rel) != "." else path.resolve().name
        return path.name

    def get(self, rid: str) -> Run:
        """One run by id, loaded and its index refreshed; InputError when unknown."""
        run = self._runs.get(rid)
        if run is None:
            self.runs()
            run = self._runs.get(rid)
        if run is None:
            raise InputError(f"no run with id {rid!r}", where="run")
        run.load()
        run.index.refresh()
        return run


def headline(run: Run) -> list[dict[str, Any]]:
    """Each system's headline: pass rate with its CI, counts, flags, scorer means."""
    systems = (run.summary or {}).get("systems") or {}
    out = []
    for name, e in systems.items():
        out.append(
            {
                "name": name,
                "pass_rate": e.get("pass_rate"),
                "pass_rate_scored": e.get("pass_rate_scored"),
                "ci": e.get("pass_rate_ci95"),
                "passed": e.get("passed"),
                "failed": e.get("failed"),
                "no_verdict": e.get("no_verdict"),
                "cases": e.get("cases"),
                "flagged": bool(e.get("flagged")),
                "system_errors": e.get("system_errors", 0),
                "scorers": {
                    label: {
                        "mean": s.get("mean"),
                        "ci": s.get("ci95"),
                        "flagged": bool(s.get("flagged")),
                    }
                    for label, s in (e.get("scorers") or {}).items()
                },
            }
        )
    return out


def reviewed_headline(run: Run, rows: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The pass rate of each system counted from its records (with the review's overrides
    when there are any), with a bootstrap CI: the figures of a run without a summary, and
    the reviewed figures of a reviewed run."""
    import numpy as np

    from queryeval.stats import mean_ci

    seed = int((run.info or {}).get("seed") or 0)
    out = []
    for name, (verdicts, reviewed) in rows.items():
        judged = verdicts[verdicts >= 0]
        ci = mean_ci((judged == 1).astype(np.float64), seed=seed)
        out.append(
            {
                "name": name,
                "pass_rate": float(judged.mean()) if len(judged) else None,
                "ci": ci.as_dict() if ci is not None else None,
                "passed": int(np.count_nonzero(verdicts == 1)),
                "failed": int(np.count_nonzero(verdicts == 0)),
                "no_verdict": int(np.count_nonzero(verdicts < 0)),
                "cases": len(verdicts),
                "overrides": reviewed,
            }
        )
    return out


def trends(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Per suite, per system: the pass rate of each run over time (runs of different suites
    are never joined into one line)."""
    by_suite: dict[str, list[Run]] = {}
    for run in runs:
        by_suite.setdefault(run.suite, []).append(run)
    out = []
    for suite, members in by_suite.items():
        series: dict[str, list[dict[str, Any]]] = {}
        for run in members:
            for system, e in ((run.summary or {}).get("systems") or {}).items():
                series.setdefault(system, []).append(
                    {
                        "run": run.id,
                        "name": run.name,
                        "when": run.when,
                        "pass_rate": e.get("pass_rate"),
                        "ci": e.get("pass_rate_ci95"),
                    }
                )
        out.append({"suite": suite, "runs": [r.id for r in members], "series": series})
    return out
