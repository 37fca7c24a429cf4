"""Runs on a Ray cluster (`settings.executor: ray`, `queryeval run --executor ray`; docs/ray.md).

`RayExecutor` carries units as `LocalExecutor` does (`run(units, worker, emit)`): each is a
task whose worker returns the unit's `Batch`, emitted in the driver (the only writer); a lost
unit is run again only if pure (no system or judge called: its calls would be paid twice).
It is also the workers' services: a `ServiceActor` each for the cluster (`engines.<db>`,
`judge`, `embedder`, `systems.<group>`: a live system's `Slots`), stand-ins for them in a
worker's `ClusterContext`, whose caches (gold results, model replies) are its node's.

>>> from queryeval.config import RaySettings
>>> RayExecutor(RaySettings(num_cpus=2, task_cpus=0.5)).settings.task_cpus
0.5
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import itertools
import logging
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from queryeval._gc import bulk_allocation
from queryeval.errors import InputError
from queryeval.runner._work import Emit, Unit, Worker
from queryeval.scorers import ScoringContext

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from queryeval.config import RaySettings, SuiteConfig

T = TypeVar("T")
COPYING = frozenset({"task_tests"})  # scorers that need the engine in their process (copies)


def import_ray() -> Any:
    """The `ray` module, or an InputError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise InputError("settings.executor: ray needs the Ray package, which is not "
                         "installed: pip install 'queryeval[ray]'",
                         where="settings.executor") from None  # fmt: skip
    return ray


def with_executor(
    suite: SuiteConfig, executor: str | None = None, *, address: str | None = None,
    shards: int | None = None,
) -> SuiteConfig:  # fmt: skip
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
    if executor not in (None, "local", "ray"):
        raise InputError(f"--executor: {executor!r}: expected local or ray", where="--executor")
    given = {k: v for k, v in {"address": address, "shards": shards}.items() if v is not None}
    if given and (executor or settings.executor) != "ray":
        raise InputError("--address and --shards apply to --executor ray", where="--executor")
    try:
        ray = RaySettings.model_validate(settings.ray.model_dump(exclude_unset=True) | given)
    except ValidationError as exc:
        error = exc.errors()[0]
        why = error["msg"].removeprefix("Value error, ")
        raise InputError(why, where=f"--{error['loc'][0]}") from None
    update = {"ray": ray} | ({"executor": executor} if executor else {})
    return suite.model_copy(update={"settings": settings.model_copy(update=update)})


class RayExecutor:
    """Carries units over a Ray cluster, and is their services. A context manager: it joins
    the cluster at `settings.address`, or starts a local one (shut down after the run) unless
    the process is connected; `stats`: what the cluster did (run.json's `cluster`)."""

    def __init__(self, settings: RaySettings) -> None:
        self.settings, self.started = settings, False  # whether it started the cluster
        self.actors: dict[str, Any] = {}
        self.node = ""  # the driver's
        self.env: dict[str, str] = {}  # `_forwarded_env`, given to the tasks and actors
        self.stats: dict[str, Any] = {}
        self.batches_per_node: Counter[str] = Counter()

    def __enter__(self) -> RayExecutor:
        ray, s = import_ray(), self.settings
        if ray.is_initialized():
            return self
        options: dict[str, Any] = {"address": s.address, "namespace": "queryeval",
                                   "runtime_env": s.runtime_env, "log_to_driver": False,
                                   "logging_level": logging.WARNING}  # fmt: skip
        if s.address in (None, "local"):  # a new cluster, even where `ray start` left one
            options.update(address="local", num_cpus=s.num_cpus or os.cpu_count() or 1,
                           include_dashboard=False)  # fmt: skip
        try:
            ray.init(**options)
        except (ConnectionError, RuntimeError) as exc:
            raise InputError(f"cannot reach the Ray cluster at {options['address']}: {exc}",
                             where="settings.ray.address") from None  # fmt: skip
        self.started = True
        return self

    def __exit__(self, *exc: object) -> None:
        import ray

        if ray.is_initialized():
            self.stats = {"workers": self.workers, "task_cpus": self.settings.task_cpus}
            if self.batches_per_node:  # the busiest node first
                self.stats["batches_per_node"] = dict(self.batches_per_node.most_common())
            for name, actor in self.actors.items():  # grouped by the names' first part
                try:
                    value = ray.get(actor.stats.remote(), timeout=30)
                except Exception as exc:  # an actor that died: say so, the run is stored
                    value = {"error": type(exc).__name__}
                group, _, key = name.partition(".")
                self.stats.setdefault(group, {}).update({key: value} if key else value)
            if closing := [actor.close.remote() for actor in self.actors.values()]:
                ray.wait(closing, num_returns=len(closing), timeout=30)
            for actor in self.actors.values():
                ray.kill(actor)
        self.actors = {}
        if self.started:
            self.started = False
            ray.shutdown()

    @property
    def workers(self) -> int:
        """How many tasks the cluster runs at once (its CPUs over `task_cpus`)."""
        cpus = float(import_ray().cluster_resources().get("CPU", 1.0))
        return max(1, int(cpus / self.settings.task_cpus + 1e-9))

    def provider(
        self, suite: SuiteConfig, cache_dir: Path, concurrency: Mapping[str, int]
    ) -> RayExecutor:
        """Start the run's actors, each service built on first use (no engine actors where a
        scorer copies databases: the workers build their own; an embedder where the suite
        embeds texts); the executor is then the workers' services (`runner._work.Services`),
        a picklable handle. `concurrency`: the live systems' groups and their limits."""
        import ray

        from queryeval.engines import build_engine
        from queryeval.judges import build_judge

        s, gpus = self.settings, self.settings.embedder_gpus
        if gpus is None:
            gpus = 1.0 if ray.cluster_resources().get("GPU", 0) >= 1 else 0.0
        copies = any(scorer.name in COPYING for scorer in suite.scorers)
        hosted: list[tuple[str, Any, tuple[Any, ...], int, Any]] = [
            (f"engines.{name}", build_engine, (name, config, suite.base_dir, cache_dir),
             s.connections_per_database.get(name, s.connections), None)
            for name, config in suite.databases.items() if not copies
        ]  # fmt: skip
        if suite.judge is not None:
            hosted.append(("judge", build_judge, (suite, cache_dir), 0, _judge_report))
        if suite.embeddings is not None or any(c.name == "answer" for c in suite.scorers):
            embedder = lambda: ScoringContext(suite, cache_dir=cache_dir).embedder()  # noqa: E731
            report = lambda e: {"model_id": e.model_id, **vars(e.stats)}  # noqa: E731
            hosted.append(("embedder", embedder, (), 0, report))
        hosted += [(f"systems.{g}", Slots, (n,), 0, Slots.report) for g, n in concurrency.items()]
        self.env, remote = _forwarded_env(suite), ray.remote(ServiceActor)
        self.node = ray.get_runtime_context().get_node_id()
        for name, build, args, cap, report in hosted:
            self.actors[name] = remote.options(
                num_cpus=s.actor_cpus, num_gpus=gpus * (name == "embedder"), max_restarts=0,
                max_concurrency=cap or 1000, **_env(self.env),
            ).remote(build, args, cap or 1, report)  # fmt: skip
        return self

    def context(self, suite: SuiteConfig, cache_dir: Path) -> ClusterContext:
        """A scoring context with the actors' stand-ins, and this node's caches: `cache_dir`
        on the driver's node, else `queryeval-cache` in the node's temporary folder."""
        if import_ray().get_runtime_context().get_node_id() != self.node:
            cache_dir = Path(tempfile.gettempdir()) / "queryeval-cache"
        ctx = ClusterContext(suite, cache_dir=cache_dir)
        ctx.actors = self.actors
        return ctx

    def limit(self, group: str, n: int) -> AbstractAsyncContextManager[None]:
        """The cluster-wide slots of a live system's `group` (its actor, made by `provider`)."""
        return _Slot(self.actors[f"systems.{group}"])

    def share(self, value: Any) -> Any:
        """`value` in the cluster's object store, sent once to every worker (a reference)."""
        return import_ray().put(value)

    def run(self, units: Sequence[Unit], worker: Worker, emit: Emit) -> None:
        """Each unit a task; each `Batch` emitted here in unit order."""
        self.map(units, worker, emit)

    def map(self, items: Sequence[Any], fn: Callable[[Any], Any], emit: Emit) -> None:
        """`fn(item)` a task each, about two a worker in flight, emitted in item order; a task
        lost for good stops the run when the others have finished. Tasks are taken as they
        finish, so a lost one gives its live systems' slots back at once (an earlier task may
        be waiting for them)."""
        ray, s = import_ray(), self.settings
        self._check_fits()
        task, fn_ref, lost = _remote_apply(), ray.put(fn), list[str]()
        todo, pending = iter(enumerate(items)), dict[Any, int]()  # task -> its item
        arrived: dict[int, tuple[str, Any] | None] = {}  # before their turn; None: lost
        turn, bound = 0, 2 * self.workers
        try:
            while True:
                for i, item in itertools.islice(todo, max(0, bound - len(pending))):
                    pending[task.options(
                        num_cpus=s.task_cpus, retry_exceptions=False, **_env(self.env),
                        max_retries=s.max_retries if getattr(item, "pure", True) else 0,
                    ).remote(fn_ref, item)] = i  # fmt: skip
                if not pending:
                    break
                [ref], _ = ray.wait(list(pending), num_returns=1)
                i = pending.pop(ref)
                try:
                    with unwrapped():
                        arrived[i] = ray.get(ref)
                except Lost as exc:
                    arrived[i] = None
                    lost.append(f"unit {getattr(items[i], 'index', i)}: {exc}")
                    for name, actor in self.actors.items():
                        if name.startswith("systems."):
                            call(actor, "release", ref.task_id().hex(), True)
                while turn in arrived:
                    if (got := arrived.pop(turn)) is not None:
                        node, result = got
                        units = [node] if isinstance(items[turn], Unit) else []
                        self.batches_per_node.update(units)
                        emit(result)
                    turn += 1
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        if lost:
            raise InputError(f"{len(lost)} task(s) were lost with their Ray workers and not "
                             "retried (they call systems or a judge, or ran out of retries); "
                             f"what finished is stored: run again with --resume. First: {lost[0]}",
                             where="settings.executor")  # fmt: skip

    def _check_fits(self) -> None:
        """InputError where no node could ever run a task or the embedder (Ray would wait)."""
        s, nodes = self.settings, [n["Resources"] for n in import_ray().nodes() if n["Alive"]]
        for option, n, kind in (("task_cpus", s.task_cpus, "CPU"),
                                ("embedder_gpus", s.embedder_gpus or 0, "GPU")):  # fmt: skip
            most = max((float(r.get(kind, 0)) for r in nodes), default=0.0)
            if n > most:
                raise InputError(f"{option} {n:g} is more than any node of the cluster has "
                                 f"({most:g} {kind}s at most): Ray would wait for such a node "
                                 "forever", where=f"settings.ray.{option}")  # fmt: skip


@functools.cache
def _remote_apply() -> Any:
    return import_ray().remote(_apply)


def _apply(fn: Callable[[Any], Any], item: Any) -> tuple[str, Any]:
    """`fn(item)` in a task, with the node it ran on."""
    with bulk_allocation():  # thousands of acyclic objects, freed when the item ends
        result = fn(item)
    return import_ray().get_runtime_context().get_node_id(), result


def _env(env: Mapping[str, str]) -> dict[str, Any]:
    """Ray options giving `env` to a task's or an actor's process."""
    return {"runtime_env": {"env_vars": dict(env)}} if env else {}


def _forwarded_env(suite: SuiteConfig) -> dict[str, str]:
    """The variables the suite names (`api_key_env`, any `*_env` option) set here."""

    def names(value: Any) -> Iterator[str]:
        value = dict(enumerate(value)) if isinstance(value, list) else value
        for key, item in value.items() if isinstance(value, dict) else ():
            if isinstance(key, str) and key.endswith("_env") and isinstance(item, str):
                yield item
            else:
                yield from names(item)

    named = names(suite.model_dump(mode="json", exclude={"base_dir", "source"}))
    return {name: os.environ[name] for name in sorted(set(named)) if name in os.environ}


class Lost(Exception):
    """A task or actor lost with its worker or node (after Ray's retries)."""


@contextlib.contextmanager
def unwrapped() -> Iterator[None]:
    """Around `ray.get` or `await ref`: the task's own exception, not Ray's wrapper; `Lost`
    for any other Ray error (a worker, node, actor or object lost)."""
    from ray import exceptions as e

    try:
        yield
    except e.RayTaskError as exc:
        if isinstance(cause := getattr(exc, "cause", None), BaseException):
            raise cause from None
        raise
    except e.RayError as exc:
        raise Lost(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def call(actor: Any, method: str | Callable[..., Any], *args: Any) -> Any:
    """`ServiceActor.call` in `actor`, waited for (see `unwrapped`)."""
    with unwrapped():
        return import_ray().get(actor.call.remote(method, *args))


async def acall(actor: Any, method: str, *args: Any) -> Any:
    """`call`, awaited."""
    with unwrapped():
        return await actor.call.remote(method, *args)


class ServiceActor:
    """One service of the run (an async actor): `build(*args)` makes it on first use; `call`
    runs one of its methods (or a function of it), a coroutine on the actor's event loop,
    anything else on one of `threads` threads (Ray's `max_concurrency` bounds the calls)."""

    def __init__(self, build: Callable[..., Any], args: tuple[Any, ...], threads: int = 1,
                 report: Callable[[Any], dict[str, Any]] | None = None) -> None:  # fmt: skip
        self._build, self._args, self._report = build, args, report
        self._service: Any = None
        self._pool, self.calls, self.in_flight, self.peak = ThreadPoolExecutor(threads), 0, 0, 0

    async def call(self, method: str | Callable[..., Any], *args: Any) -> Any:
        """`service.method(*args)`, or `method(service, *args)` for a function."""
        self.calls, self.in_flight = self.calls + 1, self.in_flight + 1
        self.peak, loop = max(self.peak, self.in_flight), asyncio.get_running_loop()
        try:
            if (service := self._service) is None:  # built on the loop: once
                service = self._service = self._build(*self._args)
            fn = getattr(service, method) if isinstance(method, str) else method
            args = args if isinstance(method, str) else (service, *args)
            if inspect.iscoroutinefunction(fn):
                return await fn(*args)
            return await loop.run_in_executor(self._pool, fn, *args)
        finally:
            self.in_flight -= 1

    async def stats(self) -> dict[str, Any]:
        """Calls, the most at once, and `report(service)` once it is built."""
        report = self._report(self._service) if self._report and self._service else {}
        return {"calls": self.calls, "peak": self.peak, **report}

    async def close(self) -> None:
        """Close the service (an async client inside this loop first), then the threads."""
        for name in ("aclose", "close"):
            if inspect.isawaitable(result := getattr(self._service, name, lambda: None)()):
                await result
        self._service = None
        self._pool.shutdown(wait=False, cancel_futures=True)


def _member(service: Any, name: str) -> tuple[Any] | None:
    """`(service.name,)`, or None for a method (called in the actor)."""
    return None if callable(value := getattr(service, name)) else (value,)


def _judge_report(judge: Any) -> dict[str, Any]:
    """The judge's figures as a model system's `system_calls`, and its judgments."""
    http, cache = judge.client.stats, judge.service.cache
    out = {**judge.stats.as_dict(), "calls": http.calls, "retries": http.retries,
           "rate_limited": http.rate_limited}  # fmt: skip
    return out | ({"cache": cache.stats()} if cache is not None else {})


class Slots:
    """`n` slots for the cluster, held by tasks (their ids): the driver gives back those of
    a task lost with its worker (`release(task, every=True)`); its waiting requests get none."""

    def __init__(self, n: int) -> None:
        self.n, self.in_flight, self.peak, self._sem = n, 0, 0, asyncio.Semaphore(n)
        self._held: Counter[str] = Counter()
        self._lost: set[str] = set()

    async def acquire(self, holder: str) -> None:
        """Wait for a slot."""
        await self._sem.acquire()
        self._held[holder] += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        if holder in self._lost:
            await self.release(holder)

    async def release(self, holder: str, every: bool = False) -> None:
        """Give back a slot of `holder`, or `every` one."""
        self._lost.update([holder] if every else ())
        n = self._held[holder] if every else min(self._held[holder], 1)
        self._held[holder] -= n
        self.in_flight -= n
        for _ in range(n):
            self._sem.release()

    def report(self) -> dict[str, int]:
        """The slots and the most held at once."""
        return {"slots": self.n, "peak": self.peak}


@dataclass
class _Slot:
    """A slot of a live system's `Slots`, held by the running task (reusable)."""

    actor: Any

    async def __aenter__(self) -> None:
        await acall(self.actor, "acquire", str(import_ray().get_runtime_context().get_task_id()))

    async def __aexit__(self, *exc: object) -> None:
        await acall(self.actor, "release", str(import_ray().get_runtime_context().get_task_id()))


class Proxy:
    """A service in its actor, seen from a worker: `attrs`, else each member asked of the
    actor once (a value kept here, or a method called there); nothing to close here."""

    _actor: Any = None

    def __init__(self, actor: Any, attrs: Mapping[str, Any]) -> None:
        self._actor = actor
        self.__dict__.update(attrs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("flush", "close", "aclose"):
            raise AttributeError(name)
        value = call(self._actor, _member, name)
        value = functools.partial(call, self._actor, name) if value is None else value[0]
        self.__dict__[name] = value
        return value


class ClusterContext(ScoringContext):
    """A worker's scoring context: engines, judge and embedder stand in for the actors."""

    actors: dict[str, Any]  # by name

    def resource(self, key: str, factory: Callable[[], T]) -> T:
        """The shared resource under `key`; an actor's stand-in for a service it hosts."""
        name = "engines." + key[7:] if key.startswith("engine:") else key
        if (actor := self.actors.get(name)) is not None:
            factory = functools.partial(_stand_in, self.suite, name, actor)
        return super().resource(key, factory)


def _stand_in(suite: Any, name: str, actor: Any) -> Any:
    """A worker's stand-in for the service `name` hosted by `actor`."""
    from queryeval.engines import describe_schema
    from queryeval.judges import build_judge

    if name == "judge":  # rubrics and requests made here, each verdict asked of the actor
        judge = build_judge(suite, None)
        assert judge is not None, "a judge actor, a judge section"
        judge.__dict__["judge"] = functools.partial(acall, actor, "judge")
        return judge
    if name == "embedder":
        return Proxy(actor, {})
    schema = functools.cache(functools.partial(call, actor, "cached_schema"))  # asked once
    return Proxy(actor, {"described_schema": functools.partial(call, actor, describe_schema),
                         "cached_schema": schema})  # fmt: skip
