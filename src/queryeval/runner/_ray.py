"""Runs on a Ray cluster (`settings.executor: ray`, `queryeval run --executor ray`).

`RayExecutor` is an executor like the others (`run(items, work, emit)`; `emit` is called
in the driver, which stays the only writer of results.jsonl), in two uses:

- **a large run of saved predictions** (`runner._sharded`): the work (`CheckRange`,
  `ScoreShard`) and the items (byte ranges, shards) are plain data; each becomes a Ray task
  with `settings.ray.task_cpus` CPUs (fractional by default, so the service actors never
  starve), retried by Ray when its worker is lost (`max_retries`: the work is pure).
  The workers read the input files by path: on a cluster of several machines the suite's
  folder must be on storage every node mounts at the same path (see docs/ray.md).
- **every other run** (live systems, engines, judges, embedders): the items are sent in
  batches (`ScoreBatch`: (system, case, saved output or None)); a worker builds the run's
  scorers and systems once (`ClusterContext`, whose engines, judge and embedder are the
  run's actors: `runner._ray_actors`), generates what is live under the system's
  concurrency across the cluster, scores, and returns the outputs and scores; the driver
  makes each record exactly as a local run does. A batch that calls a system or a judge
  is never retried by Ray (its calls would be paid twice); when its worker is lost its
  cases are reported and the run stops after the other batches, for `--resume` (the store
  and the judge's cache decide what is asked again).

Ray is imported only here and only when a run asks for it.

>>> from queryeval.config import RaySettings
>>> RayExecutor(RaySettings(num_cpus=2, task_cpus=0.5)).settings.task_cpus
0.5
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval._gc import bulk_allocation
from queryeval.cases import Case, Output, Score
from queryeval.errors import InputError
from queryeval.runner._executors import Emit, ScoreWork, WorkItem
from queryeval.runner._pipeline import Scored, ascore_output, make_record, score_output
from queryeval.runner._ray_actors import (
    ClusterContext,
    Services,
    forwarded_env,
    ray_await,
    ray_get,
)
from queryeval.runner._shard_score import import_plugins

if TYPE_CHECKING:
    from queryeval.config import RaySettings, SuiteConfig
    from queryeval.runner._run import SystemRun
    from queryeval.scorers import Scorer
    from queryeval.systems import TextFields

INSTALL = "pip install 'queryeval[ray]'"


def import_ray() -> Any:
    """The `ray` module, or an InputError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise InputError(
            f"settings.executor: ray needs the Ray package, which is not installed: {INSTALL}",
            where="settings.executor",
        ) from None
    return ray


def with_executor(
    suite: SuiteConfig,
    executor: str | None = None,
    *,
    address: str | None = None,
    shards: int | None = None,
) -> SuiteConfig:
    """The suite with the command line's executor options over its `settings` (checked as
    the suite file's are: InputError naming the option).

    >>> from queryeval.config import SuiteConfig
    >>> suite = SuiteConfig(name="s", cases="c.yaml", systems=[{"name": "a", "predictions": "p"}])
    >>> with_executor(suite, "ray", shards=4).settings.ray.shards
    4
    >>> with_executor(suite, "ray", address="http://x")
    Traceback (most recent call last):
    ...
    queryeval.errors.InputError: --address: 'http://x' is not a Ray address: expected auto, ...
    """
    from pydantic import ValidationError

    from queryeval.config import RaySettings

    settings = suite.settings
    if executor is not None and executor not in ("local", "ray"):
        raise InputError(f"--executor: {executor!r}: expected local or ray", where="--executor")
    if (address is not None or shards is not None) and (executor or settings.executor) != "ray":
        raise InputError("--address and --shards apply to --executor ray", where="--executor")
    ray_options = settings.ray.model_dump(exclude_unset=True)
    for option, value in (("address", address), ("shards", shards)):
        if value is None:
            continue
        try:
            RaySettings.model_validate({option: value})
        except ValidationError as exc:
            why = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise InputError(why, where=f"--{option}") from None
        ray_options[option] = value
    update: dict[str, Any] = {"ray": RaySettings.model_validate(ray_options)}
    if executor is not None:
        update["executor"] = executor
    return suite.model_copy(update={"settings": settings.model_copy(update=update)})


class RayExecutor:
    """Maps work over a Ray cluster (see the module docstring). Use it as a context
    manager: it joins the cluster at `settings.address`, or starts a local one sized to
    this machine (and shuts it down after the run), unless the process is connected
    already; the run's actors end with it."""

    def __init__(
        self,
        settings: RaySettings,
        *,
        cases: Sequence[Case] = (),
        text_fields: TextFields | None = None,
        use_cache: bool = True,
        key: str = "",
    ) -> None:
        self.settings = settings
        self.cases = list(cases)
        self.text_fields = text_fields
        self.use_cache = use_cache
        self.key = f"{key}:{uuid.uuid4().hex}"  # a worker's state serves one run only
        self.started = False  # whether this executor started the cluster
        self.services: Services | None = None
        self._driver_ctx: ClusterContext | None = None
        self.lost: list[str] = []  # why tasks were lost with their workers
        self.stats: dict[str, Any] = {}  # what the cluster did (run.json's `cluster`)
        self.batches_per_node: dict[str, int] = {}
        self.env: dict[str, str] = {}  # the suite's keys, given to the tasks (forwarded_env)
        self._calls: dict[str, dict[str, dict[str, Any]]] = {}  # worker -> system -> stats

    # --- the cluster ------------------------------------------------------------------

    def __enter__(self) -> RayExecutor:
        ray = import_ray()
        if ray.is_initialized():
            return self
        s = self.settings
        common: dict[str, Any] = {
            "namespace": "queryeval",
            "runtime_env": s.runtime_env,
            "log_to_driver": False,
            "logging_level": logging.WARNING,
        }
        if s.address in (None, "local"):
            ray.init(  # "local": a new cluster, even where `ray start` left one running
                address="local",
                num_cpus=s.num_cpus or os.cpu_count() or 1,
                include_dashboard=False,
                **common,
            )
        else:
            try:
                ray.init(address=s.address, **common)
            except (ConnectionError, RuntimeError) as exc:
                raise InputError(
                    f"cannot reach the Ray cluster at {s.address}: {exc}",
                    where="settings.ray.address",
                ) from None
        self.started = True
        return self

    def __exit__(self, *exc: object) -> None:
        import ray

        ctx, self._driver_ctx = self._driver_ctx, None
        if ctx is not None:
            ctx.close()
        services, self.services = self.services, None
        if ray.is_initialized():
            self.stats = {"workers": self.workers, "task_cpus": self.settings.task_cpus}
            if self.batches_per_node:
                self.stats["batches_per_node"] = self.batches_per_node
            if services is not None:
                self.stats.update(services.stats())
                services.stop()
        if self.started:
            self.started = False
            ray.shutdown()

    @property
    def workers(self) -> int:
        """How many tasks the cluster runs at once (its CPUs over `task_cpus`)."""
        import ray

        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        return max(1, int(cpus / self.settings.task_cpus + 1e-9))

    # --- mapping --------------------------------------------------------------------

    def run(
        self, items: Sequence[Any], work: Callable[[Any], Any], emit: Callable[..., None]
    ) -> None:
        """Map `work` over `items` on the cluster and `emit` each result here: a run's
        `ScoreWork` in batches (`ScoreBatch`), other (picklable) work one task per item."""
        self._check_fits()
        if isinstance(work, ScoreWork):
            self._run_items(items, work, emit)
        else:
            self.map(items, work, emit, retries=lambda _: self.settings.max_retries)
        self._raise_lost()

    def _check_fits(self) -> None:
        """InputError when no node could ever run a task (`task_cpus`) or hold the
        embedder (`embedder_gpus`): Ray would wait for such a node forever."""
        import ray

        nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
        cpus = max((float(r.get("CPU", 0)) for r in nodes), default=0.0)
        gpus = max((float(r.get("GPU", 0)) for r in nodes), default=0.0)
        s = self.settings
        if s.task_cpus > cpus:
            raise InputError(
                f"task_cpus {s.task_cpus:g} is more than any node of the cluster has "
                f"({cpus:g} CPUs at most): no task could ever start",
                where="settings.ray.task_cpus",
            )
        if s.embedder_gpus and s.embedder_gpus > gpus:
            raise InputError(
                f"embedder_gpus {s.embedder_gpus:g} is more than any node of the cluster has "
                f"({gpus:g} GPUs at most)",
                where="settings.ray.embedder_gpus",
            )

    def map(
        self,
        items: Iterable[Any],
        work: Callable[[Any], Any],
        emit: Callable[[Any], None],
        *,
        retries: Callable[[Any], int],
    ) -> None:
        """One task per item, a bounded number in flight; results emitted in the order
        they finish. A task lost with its worker (after its retries) is recorded in
        `lost`; the exception of `work` itself stops the run."""
        ray = import_ray()
        task = _remote_apply()
        work_ref = ray.put(_WithoutCycles(work))
        cpus = self.settings.task_cpus
        window = 2 * self.workers
        env = {"runtime_env": {"env_vars": self.env}} if self.env else {}
        queue = iter(items)
        pending: dict[Any, Any] = {}

        def submit() -> bool:
            item = next(queue, _END)
            if item is _END:
                return False
            n = retries(item)
            options = task.options(num_cpus=cpus, max_retries=n, retry_exceptions=False, **env)
            ref = options.remote(work_ref, item)
            pending[ref] = item
            return True

        try:
            while len(pending) < window and submit():
                pass
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    item = pending.pop(ref)
                    try:
                        result = _get(ref)
                    except _Lost as exc:
                        self.lost.append(f"{_describe(item)}: {exc}")
                        self._give_back(ref)
                    else:
                        emit(result)
                    submit()
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise

    @property
    def system_calls(self) -> dict[str, dict[str, Any]]:
        """Model and endpoint systems' calls, cache hits, tokens and cost in every worker,
        added up (run.json's `system_calls`, as a local run counts them)."""
        out: dict[str, dict[str, Any]] = {}
        for per_system in self._calls.values():
            for name, stats in per_system.items():
                out[name] = _added(out.get(name, {}), stats)
        return out

    def _give_back(self, ref: Any) -> None:
        """The concurrency slots a lost task held, given back."""
        if self.services is not None and self.services.slots:
            import ray

            holder = ref.task_id().hex()
            ray.get([s.release_holder.remote(holder) for s in self.services.slots.values()])

    def _raise_lost(self) -> None:
        if self.lost:
            lost, self.lost = self.lost, []
            raise InputError(
                f"{len(lost)} task(s) were lost with their Ray workers and not retried (they "
                "call systems or a judge, or ran out of retries); what finished is stored: "
                f"run again with --resume. First: {lost[0]}",
                where="settings.executor",
            )

    # --- the item path --------------------------------------------------------------

    def _run_items(self, items: Sequence[WorkItem], work: ScoreWork, emit: Emit) -> None:
        ray = import_ray()
        suite = work.ctx.suite
        assert suite is not None, "a run has a suite"
        cases = self.cases or _cases_of(items)
        position = {case.id: i for i, case in enumerate(cases)}
        systems: dict[str, SystemRun] = {}
        batches: list[Batch] = []
        open_: dict[bool, list[tuple[str, int, Output | None]]] = {True: [], False: []}
        size = self.settings.batch_size
        for system, case in items:
            systems[system.name] = system
            output = work.stored.get((system.name, case.id))
            if output is None and system.predictions is not None:
                output = system.predictions.get(case.id)
            pure = output is not None and suite.judge is None
            open_[pure].append((system.name, position[case.id], output))
            if len(open_[pure]) >= size:
                batches.append(Batch(tuple(open_[pure]), pure))
                open_[pure] = []
        batches += [Batch(tuple(rest), pure) for pure, rest in open_.items() if rest]
        batches.sort(key=lambda b: b.items[0][1])  # case order, as a local run goes
        if not batches:
            return
        live = {s.group or s.name: s.concurrency for s in systems.values() if s.callable}
        self.env = forwarded_env(suite)
        self.services = Services.start(
            suite,
            work.ctx.cache_dir,
            caps={
                name: self.settings.connections_per_database.get(name, self.settings.connections)
                for name in suite.databases
            },
            concurrency=live,
            embeddings=_needs_embeddings(suite, work.scorers),
            actor_cpus=self.settings.actor_cpus,
            embedder_gpus=self._embedder_gpus(ray),
        )
        # the driver's scorers are prepared too, on the same services: their `aggregate`
        # reports what preparing set (a calibrated threshold, the embedding model)
        self._driver_ctx = ClusterContext(suite, work.ctx.cache_dir, self.services)
        for scorer in work.scorers.values():
            scorer.prepare(cases, self._driver_ctx)
        score = ScoreBatch(
            self.key,
            suite,
            work.ctx.cache_dir,
            ray.put(cases),
            self.services,
            self.text_fields,
            self.use_cache,
        )

        nodes: dict[str, int] = {}

        def keep(result: BatchResult) -> None:
            nodes[result.node] = nodes.get(result.node, 0) + 1
            if result.system_calls:  # each worker's counters so far (they only grow)
                self._calls[result.worker] = result.system_calls
            for name, pos, output, scores in result.items:
                record = make_record(name, cases[pos], output, scores, work.scorers)
                emit(Scored(record, scores))

        try:
            self.map(
                batches,
                score,
                keep,
                retries=lambda b: self.settings.max_retries if b.pure else 0,
            )
        finally:
            self.batches_per_node = dict(sorted(nodes.items(), key=lambda kv: -kv[1]))

    def _embedder_gpus(self, ray: Any) -> float:
        if self.settings.embedder_gpus is not None:
            return self.settings.embedder_gpus
        return 1.0 if ray.cluster_resources().get("GPU", 0) >= 1 else 0.0


_END: Any = object()


class _Lost(Exception):
    """A task lost with its worker or node (after Ray's retries)."""


def _get(ref: Any) -> Any:
    """A task's result; `_Lost` when its worker died, the task's own exception when it
    raised one."""
    import ray

    try:
        return ray_get(ref)
    except (
        ray.exceptions.WorkerCrashedError,
        ray.exceptions.NodeDiedError,
        ray.exceptions.OutOfMemoryError,
        ray.exceptions.TaskCancelledError,
        ray.exceptions.ObjectLostError,
    ) as exc:
        raise _Lost(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


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
        elif (
            key not in _NOT_ADDED
            and isinstance(value, int | float)
            and not isinstance(value, bool)
            and isinstance(mine, int | float)
        ):
            out[key] = mine + value
        elif key in _NOT_ADDED and isinstance(value, int | float) and isinstance(mine, int | float):
            out[key] = max(mine, value)
        else:
            out[key] = value
    return out


def _describe(item: Any) -> str:
    if isinstance(item, Batch):
        return f"{len(item.items)} case(s) from case #{item.items[0][1]}"
    index = getattr(item, "index", None)
    return f"shard {index}" if index is not None else type(item).__name__


def _cases_of(items: Sequence[WorkItem]) -> list[Case]:
    seen: dict[str, Case] = {}
    for _, case in items:
        seen.setdefault(case.id, case)
    return list(seen.values())


def _needs_embeddings(suite: SuiteConfig, scorers: Any) -> bool:
    """Whether the run may embed texts (an `embeddings:` section, or an answer scorer)."""
    return suite.embeddings is not None or any(
        getattr(s, "name", "") == "answer" for s in scorers.values()
    )


_REMOTE: Any = None


def _remote_apply() -> Any:
    global _REMOTE
    if _REMOTE is None:
        import ray

        _REMOTE = ray.remote(_apply)
    return _REMOTE


def _apply(work: Callable[[Any], Any], item: Any) -> Any:
    return work(item)


@dataclass(frozen=True)
class _WithoutCycles:
    """`work` with the cyclic collector paused (`queryeval._gc`), as in the local pool."""

    work: Callable[[Any], Any]

    def __call__(self, item: Any) -> Any:
        with bulk_allocation():
            return self.work(item)


# --- the worker's side of the item path -------------------------------------------------


@dataclass(frozen=True)
class Batch:
    """(system name, case position, saved output or None for a live system) items; `pure`:
    no system or judge is called (so Ray may run it again)."""

    items: tuple[tuple[str, int, Output | None], ...]
    pure: bool


@dataclass(frozen=True)
class BatchResult:
    """A scored batch: the node that scored it, and (system, case position, output,
    scores) per item."""

    node: str
    items: list[tuple[str, int, Output, dict[str, Score]]]
    worker: str = ""  # the worker process (node:pid), whose counters follow
    system_calls: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class ScoreBatch:
    """A batch's work in a worker: outputs generated where live (each system's calls under
    its cluster-wide concurrency), every scorer's score; returns (system, case position,
    output, scores) per item. The run's scorers, systems and context are built once per
    process (`_state`)."""

    key: str
    suite: SuiteConfig
    cache_dir: Path
    cases: Any  # ObjectRef of the run's cases
    services: Services
    text_fields: TextFields | None
    use_cache: bool

    def __call__(self, batch: Batch) -> BatchResult:
        import ray

        state = _state(self)
        node = ray.get_runtime_context().get_node_id()
        if all(o is not None for _, _, o in batch.items) and not state.asynchronous:
            out = []
            for name, pos, output in batch.items:
                assert output is not None
                scored = score_output(name, state.cases[pos], output, state.scorers, state.ctx)
                out.append((name, pos, output, scored.scores))
            return BatchResult(node, out)
        out = state.loop.run_until_complete(self._all(state, batch))
        calls = {
            name: getattr(system.callable, "run_stats")()  # noqa: B009 - model/endpoint only
            for name, system in state.systems.items()
            if hasattr(system.callable, "run_stats")
        }
        return BatchResult(node, out, f"{node}:{os.getpid()}", calls)

    async def _all(
        self, state: _WorkerState, batch: Batch
    ) -> list[tuple[str, int, Output, dict[str, Score]]]:
        return list(await asyncio.gather(*(self._one(state, *item) for item in batch.items)))

    async def _one(
        self, state: _WorkerState, name: str, pos: int, output: Output | None
    ) -> tuple[str, int, Output, dict[str, Score]]:
        case = state.cases[pos]
        if output is None:
            system = state.systems[name]
            assert system.callable is not None
            slots = self.services.slots.get(system.group or system.name)
            if slots is None:
                output = await system.callable.generate(case)
            else:
                import ray

                holder = ray.get_runtime_context().get_task_id()
                await ray_await(slots.acquire.remote(holder))
                try:
                    output = await system.callable.generate(case)
                finally:
                    await ray_await(slots.release.remote(holder))
        scored = await ascore_output(name, case, output, state.scorers, state.ctx)
        return name, pos, output, scored.scores


@dataclass
class _WorkerState:
    key: str
    cases: list[Case]
    scorers: dict[str, Scorer]
    ctx: ClusterContext
    systems: dict[str, SystemRun]
    asynchronous: bool
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)


_STATE: _WorkerState | None = None


def _state(work: ScoreBatch) -> _WorkerState:
    """This process's state for the run (built on first use; another run's is closed)."""
    global _STATE
    if _STATE is not None and _STATE.key == work.key:
        return _STATE
    if _STATE is not None:
        old, _STATE = _STATE, None
        old.ctx.close()
        old.loop.close()
    import ray

    from queryeval.runner._run import system_runs
    from queryeval.scorers import build_scorers
    from queryeval.systems import attach_systems

    import_plugins(work.suite)
    cases: list[Case] = ray.get(work.cases)
    ctx = ClusterContext(work.suite, work.cache_dir, work.services)
    scorers = build_scorers(work.suite)
    text_fields = work.text_fields
    if text_fields is None:
        from queryeval.runner._run import suite_reads
        from queryeval.systems import text_fields_for

        text_fields = text_fields_for(suite_reads(list(scorers.values())))
    systems = {s.name: s for s in system_runs(work.suite, cases, text_fields, predictions=False)}
    attach_systems(
        [s.callable for s in systems.values() if s.callable is not None],
        ctx,
        use_cache=work.use_cache,
    )
    for scorer in scorers.values():
        scorer.prepare(cases, ctx)
    asynchronous = any(s.is_async or s.blocking for s in scorers.values())
    _STATE = _WorkerState(work.key, cases, scorers, ctx, systems, asynchronous)
    return _STATE
