"""The services a Ray run shares across its workers, each hosted by one `ServiceActor`, and
the `Proxy` a worker's scoring context puts in each one's place.

One actor per service for the whole cluster, whichever node asks (named as in run.json's
`cluster`):

- `engines.<database>`: the engine, built on first use; every query of the run on that
  database runs in the actor's process (the sandbox's limits are the engine's own), at most
  the database's cap at once (`settings.ray.connections`, `connections_per_database`);
- `judge`: one adaptive rate limit, one spend cap, one reply cache, identical requests in
  flight asked once;
- `embedder`: one model (on a GPU when the cluster has one), the texts of concurrent
  callers encoded in shared batches (`queryeval.embeddings.EncodeBatcher`);
- `systems.<group>`: a live system's `concurrency`, a semaphore across the cluster.

A worker reaches them through `ClusterContext`, a `ScoringContext` whose engines, judge and
embedder are proxies: the scorers and systems are the ones of a local run and do not know
the difference. The gold cache is opened by each worker, as by a forked local worker (one
SQLite file in `cache_dir`, written after each unit). This module imports Ray only inside
functions.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from queryeval.scorers import ScoringContext

if TYPE_CHECKING:
    import numpy as np

    from queryeval.config import RaySettings, SuiteConfig

T = TypeVar("T")


class Lost(Exception):
    """A task or actor lost with its worker or node (after Ray's retries)."""


@contextlib.contextmanager
def _unwrapped() -> Iterator[None]:
    """A task's own exception instead of Ray's wrapper; `Lost` when its worker died."""
    import ray

    lost = (
        ray.exceptions.WorkerCrashedError,
        ray.exceptions.NodeDiedError,
        ray.exceptions.OutOfMemoryError,
        ray.exceptions.TaskCancelledError,
        ray.exceptions.ObjectLostError,
    )
    try:
        yield
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise
    except lost as exc:
        raise Lost(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def ray_get(ref: Any) -> Any:
    """`ray.get`, raising the task's own exception (not Ray's wrapper), `Lost` when the
    task was lost with its worker."""
    import ray

    with _unwrapped():
        return ray.get(ref)


async def ray_await(ref: Any) -> Any:
    """`await ref`, raising as `ray_get` does."""
    with _unwrapped():
        return await ref


class ServiceActor:
    """One service of the run for the whole cluster (an async actor; `ray.remote` is applied
    by `RayServices.start`). `build(*args)` makes it on first use; `call` runs one of its
    methods (or a function of it): a coroutine on the actor's event loop, anything else on
    one of `threads` threads (0: on the loop, one at a time). `report(service)`: what
    `stats` tells besides the calls made and the most at once."""

    def __init__(self, build: Callable[..., Any], args: tuple[Any, ...], threads: int = 0,
                 report: Callable[[Any], dict[str, Any]] | None = None) -> None:  # fmt: skip
        self._build, self._args, self._report = build, args, report
        self._service: Any = None
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(threads) if threads else None
        self.calls = self.in_flight = self.peak = 0

    def _built(self) -> Any:
        with self._lock:
            if self._service is None:
                self._service = self._build(*self._args)
            return self._service

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._pool is None:
            return fn(*args)
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def call(self, method: str | Callable[..., Any], *args: Any) -> Any:
        """`service.method(*args)`, or `method(service, *args)` for a function."""
        self.calls += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            service = await self._run(self._built)
            if isinstance(method, str):
                fn = getattr(service, method)
            else:
                fn, args = method, (service, *args)
            if inspect.iscoroutinefunction(fn):
                return await fn(*args)
            return await self._run(fn, *args)
        finally:
            self.in_flight -= 1

    async def attrs(self, names: tuple[str, ...]) -> dict[str, Any]:
        """The service's attributes `names` (built first: its error when it cannot be)."""
        service = await self._run(self._built)
        return {name: getattr(service, name) for name in names}

    async def stats(self) -> dict[str, Any]:
        """Calls made, the most at once, and the service's own report."""
        out: dict[str, Any] = {"calls": self.calls, "peak": self.peak}
        if self._report is not None and self._service is not None:
            out.update(self._report(self._service))
        return out

    async def close(self) -> None:
        """Close the service (an async client inside this loop first)."""
        service, self._service = self._service, None
        for name in ("aclose", "close"):
            fn = getattr(service, name, None)
            if callable(fn):
                result = fn()
                if inspect.isawaitable(result):
                    await result


class SharedEmbedder:
    """The run's embedder in its actor: concurrent callers' texts encoded in shared batches."""

    def __init__(self, suite: SuiteConfig, cache_dir: Path) -> None:
        from queryeval.embeddings import EncodeBatcher, embedder_from_context

        self.embedder = embedder_from_context(ScoringContext(suite, cache_dir=cache_dir))
        self.model_id = self.embedder.model_id
        self.batcher = EncodeBatcher(self.embedder)

    async def encode(self, texts: list[str]) -> np.ndarray:
        """(n, d) unit vectors, one per text."""
        import numpy as np

        vectors = await asyncio.gather(*(self.batcher.encode(t) for t in texts))
        return np.stack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)

    async def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two texts."""
        import numpy as np

        v = await self.encode([a, b])
        return float(np.clip(v[0] @ v[1], -1.0, 1.0))

    async def similarities(self, pairs: list[tuple[str, str]]) -> list[float]:
        """Cosine similarity of each pair."""
        import numpy as np

        if not pairs:
            return []
        v, n = await self.encode([a for a, _ in pairs] + [b for _, b in pairs]), len(pairs)
        return [float(s) for s in np.clip(np.einsum("ij,ij->i", v[:n], v[n:]), -1.0, 1.0)]

    def report(self) -> dict[str, Any]:
        """The model and the texts asked for, embedded and found in the cache."""
        st = self.embedder.stats
        return {
            "model_id": self.model_id,
            "requested": st.requested,
            "embedded": st.embedded,
            "cache_hits": st.cache_hits,
            "batches": self.batcher.batches,
        }

    def close(self) -> None:
        """Close the embedder's cache and backend."""
        self.embedder.close()


class Slots:
    """A semaphore of `n` slots shared by the cluster. Slots are held by a task (its id), so
    the slots of a task lost with its worker are given back (`release(holder, every=True)`,
    by the driver) instead of leaking."""

    def __init__(self, n: int) -> None:
        self.n, self.in_flight, self.peak = n, 0, 0
        self._sem = asyncio.Semaphore(n)
        self._held: dict[str, int] = {}
        self._lost: set[str] = set()

    async def acquire(self, holder: str) -> None:
        """Wait for a slot (a lost holder's pending requests get none)."""
        await self._sem.acquire()
        if holder in self._lost:  # its task died while this request waited
            self._sem.release()
            return
        self._held[holder] = self._held.get(holder, 0) + 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)

    async def release(self, holder: str, every: bool = False) -> None:
        """Give a slot back; `every`: every slot of a lost task, whose requests still
        waiting get none."""
        if every:
            self._lost.add(holder)
        held = self._held.get(holder, 0)
        n = held if every else min(held, 1)
        self._held[holder] = held - n
        self.in_flight -= n
        for _ in range(n):
            self._sem.release()

    def report(self) -> dict[str, int]:
        """The slots and the most held at once."""
        return {"slots": self.n, "peak": self.peak}


def _judge_report(judge: Any) -> dict[str, Any]:
    """Judgments, requests, cache hits, tokens, cost, and the HTTP calls made."""
    return {**judge.stats.as_dict(), "http_calls": judge.client.stats.calls}


def forwarded_env(suite: SuiteConfig) -> dict[str, str]:
    """The environment variables the suite names (`api_key_env`, `password_env`,
    `user_env`, any `*_env` option) that are set here: given to the run's tasks and actors,
    whose processes were started with the cluster's environment, not the driver's.

    >>> from queryeval.config import SuiteConfig
    >>> os.environ["QE_DOC_KEY"] = "secret"
    >>> suite = SuiteConfig(name="s", cases="c", systems=[{"name": "a", "predictions": "p"}],
    ...                     judge={"model": "m", "api_key_env": "QE_DOC_KEY"})
    >>> forwarded_env(suite)
    {'QE_DOC_KEY': 'secret'}
    >>> del os.environ["QE_DOC_KEY"]
    """
    names: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and key.endswith("_env") and isinstance(item, str):
                    names.add(item)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(suite.model_dump(mode="json", exclude={"base_dir", "source"}))
    return {name: os.environ[name] for name in sorted(names) if name in os.environ}


@dataclass
class RayServices:
    """The run's actors by name (see the module docstring): a worker's services
    (`runner._work.Services`), picklable handles that travel with the worker."""

    actors: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def start(
        cls,
        suite: SuiteConfig,
        cache_dir: Path,
        settings: RaySettings,
        concurrency: Mapping[str, int],
        *,
        embeddings: bool,
        gpus: float,
    ) -> RayServices:
        """Start the actors a run needs (each service is built on first use)."""
        import ray

        from queryeval.engines import build_engine
        from queryeval.judges import build_judge

        env = forwarded_env(suite)
        remote = ray.remote(ServiceActor)
        out = cls()

        def host(name: str, build: Any, args: tuple[Any, ...], report: Any = None,
                 cap: int = 0, num_gpus: float = 0.0) -> None:  # fmt: skip
            """`cap`: calls at once, each on a thread (0: unbounded, on the event loop)."""
            options = {"runtime_env": {"env_vars": env}} if env else {}
            out.actors[name] = remote.options(
                num_cpus=settings.actor_cpus, num_gpus=num_gpus, max_restarts=0,
                max_concurrency=cap or 1000, **options,
            ).remote(build, args, cap, report)  # fmt: skip

        for name, config in suite.databases.items():
            engine = (name, config, suite.base_dir, cache_dir)
            cap = settings.connections_per_database.get(name, settings.connections)
            host(f"engines.{name}", build_engine, engine, cap=cap)
        if suite.judge is not None:
            host("judge", build_judge, (suite, cache_dir), _judge_report)
        if embeddings:
            report = SharedEmbedder.report
            host("embedder", SharedEmbedder, (suite, cache_dir), report, num_gpus=gpus)
        for group, n in concurrency.items():
            host(f"systems.{group}", Slots, (n,), Slots.report)
        return out

    def context(self, suite: SuiteConfig, cache_dir: Path) -> ClusterContext:
        """A scoring context whose services are these actors' proxies."""
        return ClusterContext(suite, cache_dir, self)

    def limit(self, group: str, n: int) -> _Slot | None:
        """The cluster-wide slots of a live system's `group` (None: no limit)."""
        actor = self.actors.get(f"systems.{group}")
        return None if actor is None else _Slot(actor)

    def release(self, holder: str) -> None:
        """Give back every slot the (lost) task `holder` held."""
        import ray

        systems = [a for name, a in self.actors.items() if name.startswith("systems.")]
        ray.get([a.call.remote("release", holder, True) for a in systems])

    def stats(self) -> dict[str, Any]:
        """What each actor did (run.json's `cluster`): queries per database and the most at
        once, the judge's calls and cost, the embedder's batches, each live system's most
        concurrent calls."""
        import ray

        refs = {name: actor.stats.remote() for name, actor in self.actors.items()}
        out: dict[str, Any] = {}
        for name, ref in refs.items():
            try:
                value = ray.get(ref, timeout=30)
            except Exception as exc:  # an actor that died: say so, the run is stored
                value = {"error": type(exc).__name__}
            group, _, key = name.partition(".")
            if key:
                out.setdefault(group, {})[key] = value
            else:
                out[group] = value
        return out

    def stop(self) -> None:
        """Close the services (best effort) and end the actors."""
        import ray

        closing = [actor.close.remote() for actor in self.actors.values()]
        if closing:
            ray.wait(closing, num_returns=len(closing), timeout=30)
        for actor in self.actors.values():
            ray.kill(actor)


class _Slot:
    """A slot of a live system's `Slots`, held by the running task (given back by the
    driver when the task is lost with its worker)."""

    def __init__(self, actor: Any) -> None:
        self._actor = actor

    async def __aenter__(self) -> None:
        await ray_await(self._actor.call.remote("acquire", _task_id()))

    async def __aexit__(self, *exc: object) -> None:
        await ray_await(self._actor.call.remote("release", _task_id()))


def _task_id() -> str:
    import ray

    return str(ray.get_runtime_context().get_task_id())


# --- the worker's side -------------------------------------------------------------------


def _call(actor: Any, method: str | Callable[..., Any], *args: Any) -> Any:
    return ray_get(actor.call.remote(method, *args))


async def _await(actor: Any, method: str, *args: Any) -> Any:
    return await ray_await(actor.call.remote(method, *args))


class Proxy:
    """A service hosted by a `ServiceActor`, seen from a worker: `attrs` are kept here
    (plain values, or functions standing in for methods); any other attribute is `local`'s
    when there is one, else a method called in the actor. Closing it closes nothing there."""

    _actor: Any = None
    _local: Any = None

    def __init__(self, actor: Any, attrs: Mapping[str, Any] | None = None, local: Any = None):
        self._actor, self._local = actor, local
        self.__dict__.update(attrs or {})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if self._local is not None:
            return getattr(self._local, name)
        return functools.partial(_call, self._actor, name)

    def flush(self) -> None:
        """Nothing to write here (the actor closes its service after the run)."""

    async def aclose(self) -> None:
        """Nothing to close in the loop here."""

    def close(self) -> None:
        """Close the local stand-in, if any."""
        if self._local is not None:
            self._local.close()


_ACTOR_OF = {"judge": "judge", "embedder": "embedder"}
_ENGINE_ATTRS = (
    "name",
    "limits",
    "identity",
    "language",
    "emulated_kinds",
    "in_process",
    "dialect",
)


class ClusterContext(ScoringContext):
    """A worker's scoring context: engines, the judge and the embedder are proxies of the
    run's actors; everything else (the gold cache, memos, KG validators) is the worker's."""

    def __init__(self, suite: SuiteConfig, cache_dir: Path, services: RayServices) -> None:
        super().__init__(suite, cache_dir=cache_dir)
        self.services = services

    def resource(self, key: str, factory: Callable[[], T]) -> T:
        """The shared resource under `key`; the actors' proxies for the services."""
        name = "engines." + key[7:] if key.startswith("engine:") else _ACTOR_OF.get(key, "")
        actor = self.services.actors.get(name)
        if actor is not None:
            factory = functools.partial(self._proxy, name, actor)
        return super().resource(key, factory)

    def _proxy(self, name: str, actor: Any) -> Any:
        from queryeval.engines import describe_schema
        from queryeval.judges import build_judge

        if name.startswith("engines."):  # plain attributes kept; the schema asked once
            attrs = ray_get(actor.attrs.remote(_ENGINE_ATTRS))
            attrs["described_schema"] = functools.partial(_call, actor, describe_schema)
            attrs["cached_schema"] = functools.cache(
                functools.partial(_call, actor, "cached_schema")
            )
            return Proxy(actor, attrs)
        if name == "judge":  # verdicts from the actor; rubrics and requests from a local judge
            local = build_judge(self.suite, None)  # type: ignore[arg-type]
            return Proxy(actor, {"judge": functools.partial(_await, actor, "judge")}, local)
        if name == "embedder":
            return Proxy(actor, ray_get(actor.attrs.remote(("model_id",))))
        return Proxy(actor)
