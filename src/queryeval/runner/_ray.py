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

import functools
import itertools
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval._gc import bulk_allocation
from queryeval.errors import InputError
from queryeval.runner._ray_actors import Lost, RayServices, forwarded_env, ray_get
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
        self.stats: dict[str, Any] = {}  # what the cluster did (run.json's `cluster`)
        self.batches_per_node: dict[str, int] = {}
        self.env: dict[str, str] = {}  # the suite's keys, given to the tasks (forwarded_env)

    # --- the cluster ------------------------------------------------------------------

    def __enter__(self) -> RayExecutor:
        ray = import_ray()
        if ray.is_initialized():
            return self
        s = self.settings
        options: dict[str, Any] = {"address": s.address, "namespace": "queryeval",
                                   "runtime_env": s.runtime_env, "log_to_driver": False,
                                   "logging_level": logging.WARNING}  # fmt: skip
        if s.address in (None, "local"):  # a new cluster, even where `ray start` left one
            options.update(address="local", num_cpus=s.num_cpus or os.cpu_count() or 1,
                           include_dashboard=False)  # fmt: skip
        try:
            ray.init(**options)
        except (ConnectionError, RuntimeError) as exc:
            raise InputError(
                f"cannot reach the Ray cluster at {options['address']}: {exc}",
                where="settings.ray.address",
            ) from None
        self.started = True
        return self

    def __exit__(self, *exc: object) -> None:
        import ray

        services, self.services = self.services, None
        if ray.is_initialized():
            self.stats = {"workers": self.workers, "task_cpus": self.settings.task_cpus}
            if self.batches_per_node:  # the busiest node first
                nodes = sorted(self.batches_per_node.items(), key=lambda kv: -kv[1])
                self.stats["batches_per_node"] = dict(nodes)
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
        """Start the run's actors (engines, gold cache, judge, embedder, each live system's
        slots), ended with the executor."""
        import ray

        self.env = forwarded_env(suite)
        gpus = self.settings.embedder_gpus
        if gpus is None:
            gpus = 1.0 if ray.cluster_resources().get("GPU", 0) >= 1 else 0.0
        self.services = RayServices.start(
            suite, cache_dir, self.settings, concurrency, embeddings=embeddings, gpus=gpus
        )
        return self.services

    def share(self, value: Any) -> Any:
        """`value` in the cluster's object store, sent once to every worker (a reference)."""
        return import_ray().put(value)

    def run(self, units: Sequence[Unit], worker: Worker, emit: Emit) -> None:
        """Each unit a task (retried when lost only if pure); each `Batch` emitted here as
        it finishes."""
        self._map(units, worker, emit, pure=lambda unit: unit.pure, per_node=True)

    def map(self, items: Sequence[Any], fn: Callable[[Any], Any], emit: Emit) -> None:
        """A pure `fn` over the items, one task each (retried when a worker is lost)."""
        self._map(items, fn, emit, pure=lambda _: True)

    def _check_fits(self) -> None:
        """InputError when no node could ever run a task (`task_cpus`) or hold the
        embedder (`embedder_gpus`): Ray would wait for such a node forever."""
        import ray

        nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
        s = self.settings
        asked = {"task_cpus": (s.task_cpus, "CPU"), "embedder_gpus": (s.embedder_gpus or 0, "GPU")}
        for option, (n, resource) in asked.items():
            most = max((float(r.get(resource, 0)) for r in nodes), default=0.0)
            if n > most:
                raise InputError(
                    f"{option} {n:g} is more than any node of the cluster has ({most:g} "
                    f"{resource}s at most): Ray would wait for such a node forever",
                    where=f"settings.ray.{option}",
                )

    def _map(
        self,
        items: Iterable[Any],
        work: Callable[[Any], Any],
        emit: Emit,
        *,
        pure: Callable[[Any], bool],
        per_node: bool = False,
    ) -> None:
        """One task per item, a bounded number in flight; results emitted in the order
        they finish. A task lost with its worker (after its retries, if `pure`) is
        reported when the others have finished; the exception of `work` itself stops the
        run."""
        ray = import_ray()
        self._check_fits()
        task = _remote_apply()
        work_ref = ray.put(work)
        env = {"runtime_env": {"env_vars": self.env}} if self.env else {}
        queue, pending, lost = iter(items), {}, []

        def submit() -> None:
            for item in itertools.islice(queue, 1):
                retries = self.settings.max_retries if pure(item) else 0
                options = task.options(
                    num_cpus=self.settings.task_cpus,
                    max_retries=retries,
                    retry_exceptions=False,
                    **env,
                )
                pending[options.remote(work_ref, item)] = item

        try:
            for _ in range(2 * self.workers):
                submit()
            while pending:
                [ref], _ = ray.wait(list(pending), num_returns=1)
                item = pending.pop(ref)
                try:
                    node, result = ray_get(ref)
                except Lost as exc:
                    lost.append(f"{_describe(item)}: {exc}")
                    if self.services is not None:  # the concurrency slots it held
                        self.services.release(ref.task_id().hex())
                else:
                    if per_node:
                        self.batches_per_node[node] = self.batches_per_node.get(node, 0) + 1
                    emit(result)
                submit()
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        if lost:
            raise InputError(
                f"{len(lost)} task(s) were lost with their Ray workers and not retried (they "
                "call systems or a judge, or ran out of retries); what finished is stored: "
                f"run again with --resume. First: {lost[0]}",
                where="settings.executor",
            )


def _describe(item: Any) -> str:
    if isinstance(item, Unit):
        return f"unit {item.index} ({item.todo()} case(s) of {', '.join(item.systems)})"
    return type(item).__name__


@functools.cache
def _remote_apply() -> Any:
    import ray

    return ray.remote(_apply)


def _apply(work: Callable[[Any], Any], item: Any) -> tuple[str, Any]:
    """`work(item)` in a task, with the node it ran on."""
    import ray

    with bulk_allocation():  # thousands of acyclic objects, freed when the item ends
        result = work(item)
    return ray.get_runtime_context().get_node_id(), result
