"""The services a Ray run shares across its workers, each one Ray actor, and the proxies a
worker's scoring context puts in their place.

- `EngineActor`: one per database; builds the engine on first use and runs every query
  of the run on it (the sandbox's limits are the engine's own, enforced in the actor's
  process). Its `max_concurrency` is the database's cap (`settings.ray.connections`,
  `connections_per_database`): no more queries run on a database at once, whichever node
  asks. It keeps the gold cache of its database (one SQLite file on its node).
- `JudgeActor`: the run's one judge: one adaptive rate limit, one spend cap, one reply
  cache (SQLite on its node), identical requests in flight asked once, for every worker.
- `EmbedderActor`: the run's one embedder (on a GPU when the cluster has one), batching
  the texts of concurrent callers (`queryeval.embeddings.EncodeBatcher`).
- `SlotsActor`: a semaphore across the cluster: each live system's `concurrency`.

A worker reaches them through `ClusterContext`, a `ScoringContext` whose engines, judge,
embedder and gold store are proxies of the actors: the scorers and systems are the ones of
a local run and do not know the difference. This module imports Ray only inside functions.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from queryeval.scorers import ScoringContext

if TYPE_CHECKING:
    import numpy as np

    from queryeval.config import SuiteConfig
    from queryeval.judges import Verdict

T = TypeVar("T")


def ray_get(ref: Any) -> Any:
    """`ray.get`, raising the task's own exception (not Ray's wrapper) when it has one."""
    import ray

    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise


async def ray_await(ref: Any) -> Any:
    """`await ref`, raising the task's own exception (as `ray_get`)."""
    import ray

    try:
        return await ref
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise


# --- the actors (plain classes; `ray.remote` is applied by `Services.start`) ----------------


class EngineActor:
    """The engine of one database: every query of the run on it, at most `cap` at once
    (a threaded actor with `max_concurrency=cap`)."""

    def __init__(self, suite: SuiteConfig, cache_dir: Path, database: str) -> None:
        self.suite, self.cache_dir, self.database = suite, cache_dir, database
        self._engine: Any = None
        self._gold: Any = None
        self._lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0
        self.calls = 0

    def _built(self) -> Any:
        with self._lock:
            if self._engine is None:
                from queryeval.engines import build_engine

                config = self.suite.databases[self.database]
                self._engine = build_engine(
                    self.database, config, self.suite.base_dir, self.cache_dir
                )
            return self._engine

    def describe(self) -> dict[str, Any]:
        """What a proxy keeps of the engine: its plain attributes."""
        engine = self._built()
        return {
            "name": engine.name,
            "limits": engine.limits,
            "identity": engine.identity,
            "language": engine.language,
            "emulated_kinds": engine.emulated_kinds,
            "in_process": engine.in_process,
            "dialect": engine.dialect,
        }

    def call(self, method: str, *args: Any) -> Any:
        """`engine.method(*args)` (execute, validate, explain, schema, refusal, ...)."""
        engine = self._built()
        with self._lock:
            self.in_flight += 1
            self.calls += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            return getattr(engine, method)(*args)
        finally:
            with self._lock:
                self.in_flight -= 1

    def describe_schema(self) -> str:
        """The schema text a prompt shows (`queryeval.engines.describe_schema`)."""
        from queryeval.engines import describe_schema

        return describe_schema(self._built())

    def gold(self, method: str, *args: Any) -> Any:
        """`GoldStore.method(*args)` on this actor's gold cache (get, put, get_order, ...)."""
        return getattr(self._gold_store(), method)(*args)

    def _gold_store(self) -> Any:
        with self._lock:
            if self._gold is None:
                from queryeval.engines import GoldStore

                self._gold = GoldStore(self.cache_dir)
            return self._gold

    def stats(self) -> dict[str, int]:
        """Calls made and the most that ran at once."""
        return {"calls": self.calls, "peak": self.peak}

    def close(self) -> None:
        """Close the engine and the gold cache."""
        for res in (self._engine, self._gold):
            if res is not None:
                res.close()
        self._engine = self._gold = None


class JudgeActor:
    """The run's one judge (an async actor: one event loop, so one limiter and one cache
    serve every worker's calls)."""

    def __init__(self, suite: SuiteConfig, cache_dir: Path) -> None:
        from queryeval.judges import build_judge

        self.judge = build_judge(suite, cache_dir)

    async def verdict(self, rubric: str, inputs: dict[str, Any]) -> Verdict:
        """The judge's verdict (`Judge.judge`)."""
        assert self.judge is not None
        return await self.judge.judge(rubric, inputs)

    async def stats(self) -> dict[str, Any]:
        """Judgments, requests, cache hits, tokens, cost, and the HTTP calls made."""
        assert self.judge is not None
        out = self.judge.stats.as_dict()
        out["http_calls"] = self.judge.client.stats.calls
        return out

    async def close(self) -> None:
        """Close the judge's client and cache."""
        if self.judge is not None:
            await self.judge.aclose()
            self.judge.close()


class EmbedderActor:
    """The run's one embedder: texts of concurrent callers are encoded in shared batches."""

    def __init__(self, suite: SuiteConfig, cache_dir: Path) -> None:
        self.suite, self.cache_dir = suite, cache_dir
        self._embedder: Any = None
        self._batcher: Any = None

    def _built(self) -> Any:
        if self._embedder is None:
            from queryeval.embeddings import EncodeBatcher, embedder_from_context

            ctx = ScoringContext(self.suite, cache_dir=self.cache_dir)
            self._embedder = embedder_from_context(ctx)
            self._batcher = EncodeBatcher(self._embedder)
        return self._embedder

    async def model_id(self) -> str:
        """The model's id (builds the embedder: EmbeddingsUnavailable when it cannot)."""
        return str(self._built().model_id)

    async def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of `texts`, batched with the other callers' texts."""
        import numpy as np

        self._built()
        vectors = await asyncio.gather(*(self._batcher.encode(t) for t in texts))
        return np.stack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)

    async def stats(self) -> dict[str, Any]:
        """The model and the texts asked for, embedded and found in the cache."""
        if self._embedder is None:
            return {"model_id": None}
        st = self._embedder.stats
        return {
            "model_id": self._embedder.model_id,
            "requested": st.requested,
            "embedded": st.embedded,
            "cache_hits": st.cache_hits,
            "batches": self._batcher.batches,
        }

    async def close(self) -> None:
        """Close the embedder's cache and backend."""
        if self._embedder is not None:
            self._embedder.close()


class SlotsActor:
    """A semaphore of `n` slots shared by the cluster (an async actor). Slots are held by
    a task (its id), so the slots of a task lost with its worker are given back
    (`release_holder`, by the driver) instead of leaking."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._sem = asyncio.Semaphore(n)
        self.in_flight = 0
        self.peak = 0
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

    async def release(self, holder: str) -> None:
        """Give a slot back."""
        if self._held.get(holder, 0) <= 0:
            return
        self._held[holder] -= 1
        self.in_flight -= 1
        self._sem.release()

    async def release_holder(self, holder: str) -> int:
        """Give back every slot a (lost) task held, and refuse its requests still waiting;
        how many were given back."""
        self._lost.add(holder)
        n = self._held.pop(holder, 0)
        for _ in range(n):
            self.in_flight -= 1
            self._sem.release()
        return n

    async def stats(self) -> dict[str, int]:
        """The slots and the most held at once."""
        return {"slots": self.n, "peak": self.peak}


# --- what the driver starts ----------------------------------------------------------------


def forwarded_env(suite: SuiteConfig) -> dict[str, str]:
    """The environment variables the suite names (`api_key_env`, `password_env`,
    `user_env`, any `*_env` option) that are set here: given to the run's tasks and actors,
    whose processes were started with the cluster's environment, not the driver's.

    >>> import os
    >>> from queryeval.config import SuiteConfig
    >>> os.environ["QE_DOC_KEY"] = "secret"
    >>> suite = SuiteConfig(name="s", cases="c", systems=[{"name": "a", "predictions": "p"}],
    ...                     judge={"model": "m", "api_key_env": "QE_DOC_KEY"})
    >>> forwarded_env(suite)
    {'QE_DOC_KEY': 'secret'}
    >>> del os.environ["QE_DOC_KEY"]
    """
    import os

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
    """The run's actors, a worker's services (`runner._work.Services`): picklable handles
    that travel with the worker to every process."""

    engines: dict[str, Any] = field(default_factory=dict)  # database -> EngineActor
    judge: Any = None
    embedder: Any = None
    slots: dict[str, Any] = field(default_factory=dict)  # system group -> SlotsActor

    @classmethod
    def start(
        cls,
        suite: SuiteConfig,
        cache_dir: Path,
        *,
        caps: Mapping[str, int],
        concurrency: Mapping[str, int],
        embeddings: bool,
        actor_cpus: float,
        embedder_gpus: float,
    ) -> RayServices:
        """Start the actors a run needs (their services are built on first use)."""
        import ray

        env = forwarded_env(suite)

        def actor(c: type, **options: Any) -> Any:
            if env:
                options["runtime_env"] = {"env_vars": env}
            return ray.remote(c).options(num_cpus=actor_cpus, max_restarts=0, **options)

        out = cls()
        for name in suite.databases:
            out.engines[name] = actor(EngineActor, max_concurrency=caps[name]).remote(
                suite, cache_dir, name
            )
        if suite.judge is not None:
            out.judge = actor(JudgeActor, max_concurrency=1000).remote(suite, cache_dir)
        if embeddings:
            out.embedder = actor(EmbedderActor, max_concurrency=1000, num_gpus=embedder_gpus)
            out.embedder = out.embedder.remote(suite, cache_dir)
        for group, n in concurrency.items():
            out.slots[group] = actor(SlotsActor, max_concurrency=1000).remote(n)
        return out

    def context(self, suite: SuiteConfig, cache_dir: Path) -> ClusterContext:
        """A scoring context whose services are these actors' proxies."""
        return ClusterContext(suite, cache_dir, self)

    def limit(self, group: str, n: int) -> _Slot | None:
        """The cluster-wide slots of a live system's `group` (None: no limit)."""
        slots = self.slots.get(group)
        return None if slots is None else _Slot(slots)

    def stats(self) -> dict[str, Any]:
        """What each actor did (for run.json's `cluster`): queries per database and the
        most at once, the judge's calls and cost, the embedder's batches, each system's
        most concurrent calls."""
        import ray

        named: dict[str, Any] = {f"engines.{k}": a for k, a in self.engines.items()}
        named.update({f"systems.{k}": a for k, a in self.slots.items()})
        if self.judge is not None:
            named["judge"] = self.judge
        if self.embedder is not None:
            named["embedder"] = self.embedder
        out: dict[str, Any] = {}
        refs = {name: actor.stats.remote() for name, actor in named.items()}
        for name, ref in refs.items():
            try:
                value = ray.get(ref, timeout=30)
            except Exception as exc:  # an actor that died: say so, the run is stored
                value = {"error": f"{type(exc).__name__}"}
            group, _, key = name.partition(".")
            if key:
                out.setdefault(group, {})[key] = value
            else:
                out[group] = value
        return out

    def stop(self) -> None:
        """Close the services (best effort) and end the actors."""
        import ray

        handles = [*self.engines.values(), self.judge, self.embedder, *self.slots.values()]
        handles = [h for h in handles if h is not None]
        closing = [h.close.remote() for h in handles if hasattr(h, "close")]
        if closing:
            ray.wait(closing, num_returns=len(closing), timeout=30)
        for h in handles:
            ray.kill(h)


class _Slot:
    """A slot of a `SlotsActor`, held by the running task (given back by the driver when
    the task is lost with its worker)."""

    def __init__(self, actor: Any) -> None:
        self._actor = actor

    async def __aenter__(self) -> None:
        await ray_await(self._actor.acquire.remote(_task_id()))

    async def __aexit__(self, *exc: object) -> None:
        await ray_await(self._actor.release.remote(_task_id()))


def _task_id() -> str:
    import ray

    return str(ray.get_runtime_context().get_task_id())


# --- the worker's side -------------------------------------------------------------------


class RemoteEngine:
    """An engine whose queries run in its database's `EngineActor`: the plain attributes
    are kept here, every method call goes to the actor."""

    def __init__(self, actor: Any) -> None:
        self._actor = actor
        self.__dict__.update(ray_get(actor.describe.remote()))
        self._schema: dict[str, Any] | None = None

    def cached_schema(self) -> dict[str, Any]:
        """`schema()`, asked once per worker."""
        if self._schema is None:
            self._schema = self.schema()
        return self._schema

    def described_schema(self) -> str:
        """The schema text of a prompt, described by the engine in its actor."""
        return str(ray_get(self._actor.describe_schema.remote()))

    def close(self) -> None:
        """Nothing to close here (the actor closes the engine)."""

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("__"):
            raise AttributeError(method)
        actor = self._actor

        def call(*args: Any) -> Any:
            return ray_get(actor.call.remote(method, *args))

        return call


class RemoteGoldStore:
    """The gold cache, kept by the `EngineActor`s: a gold result by the actor of its
    database (its key starts with the engine's identity); what does not name a database
    (a gold query's parsed ordering, keyed by language and query) by the first actor.
    Every `GoldStore` method is forwarded."""

    def __init__(self, by_identity: Callable[[str], Any], first: Any) -> None:
        self._by_identity = by_identity
        self._first = first

    def _actor(self, args: tuple[Any, ...]) -> Any:
        key = args[0] if args else None
        if isinstance(key, tuple) and len(key) == 4 and isinstance(key[0], str):
            return self._by_identity(key[0])  # (identity, max_rows, max_bytes, query)
        if isinstance(key, list | tuple) and key and isinstance(key[0], tuple) and len(key[0]) == 4:
            return self._by_identity(key[0][0])  # get_many: keys of one database
        return self._first

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("__"):
            raise AttributeError(method)

        def call(*args: Any) -> Any:
            return ray_get(self._actor(args).gold.remote(method, *args))

        return call

    def close(self) -> None:
        """Nothing to close here."""


class RemoteJudge:
    """The judge, seen from a worker: verdicts come from the run's `JudgeActor`; rubrics
    and requests (no calls) from a local judge without a cache."""

    def __init__(self, suite: SuiteConfig, actor: Any) -> None:
        from queryeval.judges import build_judge

        local = build_judge(suite, None)
        assert local is not None, "a judge actor is started for a suite with a judge"
        self._local = local
        self._actor = actor

    async def judge(self, rubric: str, inputs: dict[str, Any]) -> Verdict:
        """The verdict of the shared judge."""
        verdict: Verdict = await ray_await(self._actor.verdict.remote(rubric, inputs))
        return verdict

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._local, name)

    async def aclose(self) -> None:
        """Nothing to close here (the actor's client stays)."""

    def close(self) -> None:
        """Close the local judge (it holds no client in use)."""
        self._local.close()


class RemoteEmbedder:
    """The embedder, seen from a worker: `encode` goes to the run's `EmbedderActor`."""

    def __init__(self, actor: Any) -> None:
        self._actor = actor
        self.model_id = ray_get(actor.model_id.remote())

    def encode(self, texts: list[str]) -> np.ndarray:
        """(n, d) unit vectors, one per text."""
        vectors: np.ndarray = ray_get(self._actor.encode.remote(list(texts)))
        return vectors

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two texts."""
        import numpy as np

        v = self.encode([a, b])
        return float(np.clip(v[0] @ v[1], -1.0, 1.0))

    def similarities(self, pairs: list[tuple[str, str]]) -> list[float]:
        """Cosine similarity of each pair."""
        import numpy as np

        if not pairs:
            return []
        v = self.encode([a for a, _ in pairs] + [b for _, b in pairs])
        n = len(pairs)
        return [float(s) for s in np.clip(np.einsum("ij,ij->i", v[:n], v[n:]), -1.0, 1.0)]

    def close(self) -> None:
        """Nothing to close here."""


class ClusterContext(ScoringContext):
    """A worker's scoring context: engines, the judge, the embedder and the gold cache are
    proxies of the run's actors; everything else (memos, KG validators) is the worker's."""

    def __init__(self, suite: SuiteConfig, cache_dir: Path, services: RayServices) -> None:
        super().__init__(suite, cache_dir=cache_dir)
        self.services = services

    def resource(self, key: str, factory: Callable[[], T]) -> T:
        """The shared resource under `key`; the actors' proxies for the services."""
        remote = self._remote_factory(key)
        return super().resource(key, remote if remote is not None else factory)

    def _remote_factory(self, key: str) -> Callable[[], Any] | None:
        services = self.services
        if key.startswith("engine:") and key[len("engine:") :] in services.engines:
            actor = services.engines[key[len("engine:") :]]
            return lambda: RemoteEngine(actor)
        if key == "engines:gold-store" and services.engines:
            first = next(iter(services.engines.values()))
            return lambda: RemoteGoldStore(self._engine_actor_of, first)
        if key == "judge" and services.judge is not None and self.suite is not None:
            suite = self.suite
            return lambda: RemoteJudge(suite, services.judge)
        if key == "embedder" and services.embedder is not None:
            return lambda: RemoteEmbedder(services.embedder)
        return None

    def _engine_actor_of(self, identity: str) -> Any:
        for name, actor in self.services.engines.items():
            if self.engine(name).identity == identity:
                return actor
        raise KeyError(f"no database of this run has the identity {identity!r}")
