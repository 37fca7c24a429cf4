"""Runs on a Ray cluster (`settings.executor: ray`, `queryeval run --executor ray`).

`RayExecutor` carries units like `LocalExecutor` (`run(units, worker, emit)`, `map`):
each unit becomes a Ray task with `settings.ray.task_cpus` CPUs (fractional by default, so
the service actors never starve), whose worker builds its process's state once
(`runner._work.Worker`) and returns the unit's `Batch`; `emit` is called in the driver,
which stays the only writer of results.jsonl. A pure unit (saved predictions, no judge) is
retried by Ray when its worker is lost; a unit that calls a system or a judge is not (its
calls would be paid twice): its cases are reported and the run stops after the others, for
`--resume`. The workers read input files by path: on a cluster of several machines the
suite's folder must be on storage every node mounts at the same path (see docs/ray.md).
A run's engines, judge, embedder and live systems' limits are the cluster's actors
(`provider`, `runner._ray_actors`).

Ray is imported only here and only when a run asks for it.

>>> from queryeval.config import RaySettings
>>> RayExecutor(RaySettings(num_cpus=2, task_cpus=0.5)).settings.task_cpus
0.5
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval._gc import bulk_allocation
from queryeval.errors import InputError
from queryeval.runner._ray_actors import RayServices, forwarded_env, ray_get
from queryeval.runner._work import Emit, Unit, Worker

if TYPE_CHECKING:
    from queryeval.config import RaySettings, SuiteConfig


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

    def __init__(self, settings: RaySettings) -> None:
        self.settings = settings
        self.started = False  # whether this executor started the cluster
        self.services: RayServices | None = None
        self.lost: list[str] = []  # why tasks were lost with their workers
        self.stats: dict[str, Any] = {}  # what the cluster did (run.json's `cluster`)
        self.batches_per_node: dict[str, int] = {}
        self.env: dict[str, str] = {}  # the suite's keys, given to the tasks (forwarded_env)

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

    # --- carrying units ---------------------------------------------------------------

    def provider(
        self,
        suite: SuiteConfig,
        cache_dir: Path,
        *,
        concurrency: Mapping[str, int],
        embeddings: bool,
    ) -> RayServices:
        """Start the run's actors (engines, judge, embedder, each live system's slots),
        ended with the executor."""
        import ray

        s = self.settings
        self.env = forwarded_env(suite)
        embedder_gpus = s.embedder_gpus
        if embedder_gpus is None:
            embedder_gpus = 1.0 if ray.cluster_resources().get("GPU", 0) >= 1 else 0.0
        self.services = RayServices.start(
            suite,
            cache_dir,
            caps={
                name: s.connections_per_database.get(name, s.connections)
                for name in suite.databases
            },
            concurrency=concurrency,
            embeddings=embeddings,
            actor_cpus=s.actor_cpus,
            embedder_gpus=embedder_gpus,
        )
        return self.services

    def share(self, value: Any) -> Any:
        """`value` in the cluster's object store, sent once to every worker (a reference)."""
        return import_ray().put(value)

    def run(self, units: Sequence[Unit], worker: Worker, emit: Emit) -> None:
        """Each unit a task; each `Batch` emitted here as it finishes."""
        retries = self.settings.max_retries

        def keep(done: tuple[str, Any]) -> None:
            node, batch = done
            self.batches_per_node[node] = self.batches_per_node.get(node, 0) + 1
            emit(batch)

        try:
            self._map(units, worker, keep, retries=lambda u: retries if u.pure else 0, node=True)
        finally:
            nodes = sorted(self.batches_per_node.items(), key=lambda kv: -kv[1])
            self.batches_per_node = dict(nodes)

    def map(self, items: Sequence[Any], fn: Callable[[Any], Any], emit: Emit) -> None:
        """A pure `fn` over the items, one task each (retried when a worker is lost)."""
        self._map(items, fn, emit, retries=lambda _: self.settings.max_retries)

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

    def _map(
        self,
        items: Iterable[Any],
        work: Callable[[Any], Any],
        emit: Emit,
        *,
        retries: Callable[[Any], int],
        node: bool = False,
    ) -> None:
        """One task per item, a bounded number in flight; results emitted in the order
        they finish. A task lost with its worker (after its retries) is recorded in
        `lost`; the exception of `work` itself stops the run."""
        ray = import_ray()
        self._check_fits()
        task = _remote_apply()
        work_ref = ray.put(work)
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
            ref = options.remote(work_ref, item, node)
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
        self._raise_lost()

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


def _describe(item: Any) -> str:
    if isinstance(item, Unit):
        return f"unit {item.index} ({item.todo()} case(s) of {', '.join(item.systems)})"
    return type(item).__name__


_REMOTE: Any = None


def _remote_apply() -> Any:
    global _REMOTE
    if _REMOTE is None:
        import ray

        _REMOTE = ray.remote(_apply)
    return _REMOTE


def _apply(work: Callable[[Any], Any], item: Any, node: bool) -> Any:
    with bulk_allocation():  # thousands of acyclic objects, freed when the item ends
        result = work(item)
    if not node:
        return result
    import ray

    return ray.get_runtime_context().get_node_id(), result
