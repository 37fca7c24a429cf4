"""The embeddings layer: the real offline model, the persistent cache, batching, the
OpenAI-compatible backend against a local fake server, and lazy imports."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fakes.openai_server import EmbeddingRequest, FakeOpenAI, hashed_embedding
from queryeval.config import SuiteConfig
from queryeval.embeddings import (
    BUNDLED_MODEL_ID,
    Embedder,
    EmbeddingsUnavailable,
    EncodeBatcher,
    LocalBackend,
    MemoryCache,
    OpenAIBackend,
    SqliteCache,
    build_embedder,
    embedder_from_context,
    parse_embeddings_config,
    resolve_device,
    similarity,
)
from queryeval.errors import InputError
from queryeval.scorers import ScoringContext

ROOT = Path(__file__).resolve().parent.parent
HF_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
HF_ENV_BEFORE = {k: os.environ.get(k) for k in HF_ENV}


@pytest.fixture(scope="session")
def local_backend() -> LocalBackend:
    """The bundled all-MiniLM-L6-v2, loaded once for the whole session."""
    backend = LocalBackend("all-MiniLM-L6-v2", device="cpu")
    _ = backend.model
    return backend


class CountingBackend:
    """Wraps a backend and counts the texts it is asked to embed."""

    def __init__(self, inner: LocalBackend | OpenAIBackend) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.calls = 0
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts.extend(texts)
        return self.inner.embed(texts)


def test_seed_paraphrase_is_similar(local_backend: LocalBackend) -> None:
    emb = Embedder(local_backend)
    sim = emb.similarity("The capital of France is Paris", "Paris is France's capital city")
    assert sim >= 0.7  # the seed's semantic_fixed at threshold 0.7 -> 1.0
    assert similarity("The capital of France is Paris", "Paris is France's capital city") == (
        pytest.approx(sim, abs=1e-6)
    )


def test_cosine_matches_sentence_transformers_reference(local_backend: LocalBackend) -> None:
    from sentence_transformers.util import cos_sim

    a, b = "Mount Skarra is 1,412 metres high.", "The highest peak of Veland is Mount Skarra."
    raw = local_backend.model.encode([a, b])  # un-normalised, straight from the library
    expected = float(cos_sim(raw[0], raw[1]))
    assert Embedder(local_backend).similarity(a, b) == pytest.approx(expected, abs=1e-5)


def test_vectors_are_unit_length_and_model_is_offline(local_backend: LocalBackend) -> None:
    vectors = Embedder(local_backend).encode(["one", "two words", ""])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors[:2], axis=1), 1.0, atol=1e-5)
    assert local_backend.model_id == BUNDLED_MODEL_ID
    # offline by the loader's setting, not by the process's environment (left as it was)
    assert {k: os.environ.get(k) for k in HF_ENV} == HF_ENV_BEFORE


def test_a_model_not_on_disk_is_unavailable_without_reaching_a_hub(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket

    from queryeval.embeddings._backends import load_sentence_transformer

    reached: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        reached.append(args)
        raise OSError("network refused by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    with pytest.raises(EmbeddingsUnavailable, match="offline"):
        load_sentence_transformer("queryeval-tests/no-such-model-here", "cpu")
    assert reached == []


def test_two_threads_loading_at_once_leave_the_hub_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Thread A enters the offline scope, B enters, A leaves (B still loading: still offline,
    bars still off), B leaves: the hub's offline switch and the progress bars are as before.
    Saved and restored per thread, A would turn offline mode off under B and B would leave it
    on for the process."""
    import threading

    from huggingface_hub import constants
    from transformers.utils import logging as hf_logging

    from queryeval.embeddings._backends import _hub_offline

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the premise: online, bars on
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.enable_progress_bar()
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, tuple[bool, bool]] = {}

    def state() -> tuple[bool, bool]:
        return constants.HF_HUB_OFFLINE, hf_logging.is_progress_bar_enabled()

    def first() -> None:
        with _hub_offline():
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def second() -> None:
        a_in.wait(10)
        with _hub_offline():
            b_in.set()
            a_out.wait(10)
            seen["b after a left"] = state()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    after = state()
    if not bars:
        hf_logging.disable_progress_bar()
    assert seen == {"b after a left": (True, False)}
    assert after == (False, True)


def test_persistent_cache_hit_makes_no_model_call(
    local_backend: LocalBackend, tmp_path: Path
) -> None:
    texts = [
        "The Ottery is 96 kilometres long.",
        "Solby is a fishing port.",
        "Solby is a fishing port.",
    ]
    first = CountingBackend(local_backend)
    cache = SqliteCache(tmp_path / "e.sqlite")
    v1 = Embedder(first, cache).encode(texts)
    cache.close()
    assert first.calls == 1 and first.texts == texts[:2]  # the duplicate is embedded once
    # a new process would see only the file: a new cache object and a new embedder
    second = CountingBackend(local_backend)
    embedder = Embedder(second, SqliteCache(tmp_path / "e.sqlite"))
    v2 = embedder.encode(texts)
    assert second.calls == 0 and second.texts == []
    assert embedder.stats.cache_hits == 2 and embedder.stats.embedded == 0
    np.testing.assert_array_equal(v1, v2)
    # a different model never reads another model's vectors
    other = CountingBackend(local_backend)
    other.model_id = "another/model"
    Embedder(other, SqliteCache(tmp_path / "e.sqlite")).encode(texts[:1])
    assert other.calls == 1


def test_similarities_batch_in_one_call(local_backend: LocalBackend) -> None:
    counting = CountingBackend(local_backend)
    emb = Embedder(counting, MemoryCache())
    pairs = [("a cat", "a dog"), ("Paris", "Paris"), ("sun", "moon")]
    sims = emb.similarities(pairs)
    assert counting.calls == 1
    assert sims[1] == pytest.approx(1.0, abs=1e-5)
    assert sims == pytest.approx([emb.similarity(a, b) for a, b in pairs], abs=1e-6)
    assert emb.similarities([]) == []


def test_batcher_coalesces_concurrent_requests(local_backend: LocalBackend) -> None:
    counting = CountingBackend(local_backend)
    batcher = EncodeBatcher(Embedder(counting, MemoryCache()))
    texts = [f"answer number {i}" for i in range(100)]

    async def run() -> list[np.ndarray]:
        return await asyncio.gather(*(batcher.encode(t) for t in texts))

    vectors = asyncio.run(run())
    assert batcher.batches == 1 and counting.calls == 1
    direct = Embedder(local_backend).encode(texts)
    np.testing.assert_allclose(np.stack(vectors), direct, atol=1e-6)
    # a second event loop works too (the batcher is not tied to the first)
    assert len(asyncio.run(run())) == 100


def test_device_selection() -> None:
    import torch

    assert resolve_device("cpu") == "cpu"
    assert resolve_device("cuda:1") == "cuda:1"
    expected = "cuda" if torch.cuda.is_available() else None
    auto = resolve_device("auto")
    assert auto == expected if expected else auto in ("cpu", "mps")


def test_missing_model_is_unavailable_not_an_error_of_the_answer(tmp_path: Path) -> None:
    backend = LocalBackend(str(tmp_path / "no-such-model"), device="cpu")
    with pytest.raises(EmbeddingsUnavailable, match="offline"):
        backend.embed(["x"])


def _scaled(request: EmbeddingRequest) -> list[list[float]]:
    """The fake's hashed bag of words times 3: the client must normalise."""
    return [[3.0 * x for x in hashed_embedding(t, 32)] for t in request.texts]


def test_openai_backend_against_local_fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_EMB_KEY", "test-key")
    with FakeOpenAI(embed=_scaled, api_key="test-key") as server:
        config = parse_embeddings_config(
            {
                "backend": "openai",
                "model": "fake-embed",
                "base_url": server.base_url,
                "api_key_env": "FAKE_EMB_KEY",
                "batch_size": 2,
            }
        )
        emb = build_embedder(config, cache_dir=tmp_path)
        texts = ["Harrowick is the capital", "the capital is Harrowick", "puffins", ""]
        vectors = emb.encode(texts)
        assert len(server.embedding_requests) == 2  # batch_size 2 -> two requests
        assert all(r.model == "fake-embed" for r in server.embedding_requests)
        assert server.embedding_requests[1].texts == ["puffins", " "]  # empty text: a space
        assert server.embedding_requests[0].body["encoding_format"] == "float"
        expected = np.array([hashed_embedding(t, 32) for t in texts[:3]], dtype=np.float32)
        np.testing.assert_allclose(vectors[:3], expected, atol=1e-6)  # unit length, in order
        assert emb.similarity(texts[0], texts[1]) == pytest.approx(1.0, abs=1e-6)
        assert emb.model_id == f"openai:fake-embed@{server.base_url}"
        emb.close()
        # cached across runs: a new embedder sends nothing
        again = build_embedder(config, cache_dir=tmp_path)
        again.encode(texts)
        assert len(server.embedding_requests) == 2
        again.close()


def test_openai_backend_failures_are_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", api_key_env="NO_SUCH_KEY_VAR")
    with pytest.raises(EmbeddingsUnavailable, match="NO_SUCH_KEY_VAR"):
        backend.embed(["x"])
    monkeypatch.setenv("FAKE_EMB_KEY", "wrong-key")
    with FakeOpenAI(api_key="test-key") as server:  # answers 401 to a wrong key
        backend = OpenAIBackend("m", base_url=server.base_url, api_key_env="FAKE_EMB_KEY")
        with pytest.raises(EmbeddingsUnavailable, match="endpoint failed"):
            backend.embed(["x"])


def test_config_errors_name_the_suite_and_field(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        parse_embeddings_config({"backend": "cohere"}, path=tmp_path / "suite.yaml")
    assert "suite.yaml" in str(err.value) and "embeddings.backend" in str(err.value)
    with pytest.raises(InputError, match=r"embeddings\.batch_sise"):
        parse_embeddings_config({"batch_sise": 8})


def test_embedder_from_context_is_built_once(tmp_path: Path) -> None:
    suite = SuiteConfig.model_validate(
        {
            "name": "s",
            "cases": "x",
            "systems": [{"name": "a", "predictions": "p"}],
            "embeddings": {"device": "cpu", "batch_size": 8},
        }
    )
    ctx = ScoringContext(suite, cache_dir=tmp_path)
    first = embedder_from_context(ctx)
    assert embedder_from_context(ctx) is first
    assert first.model_id == BUNDLED_MODEL_ID
    assert isinstance(first.cache, SqliteCache)
    ctx.close()


def test_importing_embeddings_does_not_load_torch() -> None:
    code = (
        "import sys, queryeval.embeddings, queryeval.scorers.answer, queryeval.stats;"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers', 'openai') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == ""


class HashedBackend:
    """Deterministic raw vectors (a hashed bag of words, scaled): the Embedder must
    normalise them; records every text it is asked for."""

    model_id = "hashed"

    def __init__(self) -> None:
        self.calls = 0
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts.extend(texts)
        return np.array([[2.5 * x for x in hashed_embedding(t, 16)] for t in texts], np.float32)


def test_embedder_rows_with_hits_duplicates_and_chunks() -> None:
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
    texts = [f"{words[i % 8]} {words[(i * 3) % 8]} {i % 11}" for i in range(40)]
    cache = MemoryCache()
    Embedder(HashedBackend(), cache).encode(texts[5:9])  # four texts cached beforehand
    backend = HashedBackend()
    embedder = Embedder(backend, cache, chunk_size=3)
    got = embedder.encode(texts)

    def unit(text: str) -> np.ndarray:
        v = np.array(hashed_embedding(text, 16), np.float32)
        return v / np.linalg.norm(v)

    np.testing.assert_allclose(got, np.stack([unit(t) for t in texts]), atol=1e-6)
    distinct = list(dict.fromkeys(texts))
    assert sorted(backend.texts) == sorted(set(distinct) - set(texts[5:9]))  # each once
    assert backend.calls == -(-len(backend.texts) // 3)  # chunks of 3
    assert embedder.stats.cache_hits == len(set(texts[5:9]))
    assert embedder.stats.embedded == len(backend.texts)
    pairs = list(zip(texts[:20], texts[20:], strict=True))
    expected = [float(unit(a) @ unit(b)) for a, b in pairs]
    assert embedder.similarities(pairs) == pytest.approx(expected, abs=1e-6)
    assert backend.calls == -(-len(backend.texts) // 3)  # all cached by now


def test_normalising_leaves_zero_vectors_and_read_only_arrays_alone() -> None:
    from queryeval.embeddings._embedder import _normalise

    raw = np.array([[3.0, 4.0], [0.0, 0.0]], np.float32)
    raw.flags.writeable = False
    out = _normalise(raw)
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])
    assert raw[0, 0] == 3.0  # a read-only input is copied, not changed


def test_encode_never_hands_out_the_caches_memory() -> None:
    embedder = Embedder(HashedBackend(), MemoryCache())
    first = embedder.encode(["one text", "another text"])
    first *= 0.0  # the caller's array is the caller's
    again = embedder.encode(["one text", "another text"])  # served from the cache
    assert np.allclose(np.linalg.norm(again, axis=1), 1.0)
