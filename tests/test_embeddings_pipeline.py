"""The local backend's pipelined encoder: the direct tokenizer gives exactly what the model's
own preprocessing gives, the vectors are `encode`'s in input order, errors on either side
stop the background thread, and a model it does not reproduce falls back to `encode`."""

from __future__ import annotations

import random
import threading
import unicodedata
from typing import Any

import numpy as np
import pytest

from queryeval.embeddings import Embedder, LocalBackend, MemoryCache, parse_embeddings_config
from queryeval.embeddings._pipeline import PROBE_TEXTS, PipelinedEncoder, direct_tokenizer
from queryeval.errors import InputError


@pytest.fixture(scope="module")
def model() -> Any:
    """The bundled all-MiniLM-L6-v2 on the CPU, in float32 (shared with the other tests)."""
    return LocalBackend("all-MiniLM-L6-v2", device="cpu", precision="fp32").model


def hostile_texts(count: int, seed: int = 7) -> list[str]:
    """Seeded strings drawn from many Unicode categories, whitespace runs and lengths from
    empty to past the model's 256-token limit."""
    rng = random.Random(seed)
    pools = [
        " \t\n\r\u00a0\u2003\u200b\ufeff",
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        ".,;:!?'\"()[]{}<>/\\|@#$%^&*-_=+`~",
        "àéîõüçñßøåæœ\u0301\u0308\u0327",
        "日本語中文한국어ไทยالعربيةעבריתРусскийΕλληνικά",
        "🙂🚀👩\u200d👩\u200d👧🏳️\u200d🌈",
        "\x00\x01\x1f\x7f\u0085\u2028",
    ]
    words = ["[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", "##ing", "SELECT", "Mount Skarra"]
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.choice([0, 1, 3, 12, 40, 400])):
            if rng.random() < 0.15:
                parts.append(rng.choice(words))
            else:
                pool = rng.choice(pools)
                parts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 8))))
        texts.append(rng.choice(["", " ", "  "]).join(parts))
    return texts


def test_direct_tokenizer_is_the_models_preprocessing(model: Any) -> None:
    tokenize = direct_tokenizer(model)
    assert tokenize is not None
    texts = list(PROBE_TEXTS) + hostile_texts(300)
    for start in range(0, len(texts), 37):  # batches of different padded lengths
        batch = texts[start : start + 37]
        theirs = model.preprocess(batch)
        mine = tokenize(batch)
        for key in ("input_ids", "token_type_ids", "attention_mask"):
            np.testing.assert_array_equal(mine[key], theirs[key].numpy(), err_msg=key)
    # the long texts are truncated to the model's limit, as preprocessing truncates them
    assert tokenize(["word " * 1000])["input_ids"].shape == (1, model.max_seq_length)
    # normalisation forms differ in code points: both sides see the same string
    nfd = unicodedata.normalize("NFD", "café naïve")
    np.testing.assert_array_equal(
        tokenize([nfd])["input_ids"], model.preprocess([nfd])["input_ids"]
    )


def test_vectors_are_encodes_in_input_order(model: Any) -> None:
    texts = [*hostile_texts(90, seed=11), "a cat", "a cat", "", "Paris is France's capital"]
    encoder = PipelinedEncoder(model, batch_size=8, depth=2)
    assert encoder.check(texts) is None and encoder.tokenizer == "direct"
    got = encoder.encode(texts)
    expected = model.encode(texts, batch_size=8, convert_to_numpy=True, show_progress_bar=False)
    assert got.shape == expected.shape == (len(texts), 384) and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, atol=2e-5)
    # a permutation of the input permutes the output (the length sort is undone)
    perm = np.random.default_rng(3).permutation(len(texts))
    np.testing.assert_allclose(encoder.encode([texts[i] for i in perm]), got[perm], atol=2e-5)
    assert encoder.encode([]).shape == (0, 384)
    assert encoder.encode(["only one"]).shape == (1, 384)


def wrapper_of(model: Any) -> type:
    """A class that stands for `model` (its modules, device, limit and forward pass), for
    subclasses that change its preprocessing and `encode`."""

    class Wrapped:
        device = model.device
        max_seq_length = model.max_seq_length

        def __getitem__(self, index: int) -> Any:
            return model[index]

        def __call__(self, features: Any) -> Any:
            return model(features)

    return Wrapped


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "queryeval-tokenize"]


def test_a_tokenizer_error_reaches_the_caller_and_stops_the_thread(model: Any) -> None:
    encoder = PipelinedEncoder(model, batch_size=4)
    calls = {"n": 0}
    original = encoder._features

    def failing(texts: list[str]) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise ValueError("tokenizer broke on batch 3")
        return original(texts)

    encoder._features = failing  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="batch 3"):
        encoder.encode([f"text {i}" for i in range(40)])
    assert _threads() == []


def test_a_model_error_stops_the_tokenizer_thread(model: Any) -> None:
    class Failing:
        device = model.device

        def __call__(self, features: Any) -> Any:
            raise RuntimeError("device out of memory")

        def preprocess(self, texts: list[str]) -> Any:
            return model.preprocess(texts)

    encoder = PipelinedEncoder(Failing(), batch_size=2, depth=1)
    with pytest.raises(RuntimeError, match="out of memory"):
        encoder.encode([f"text {i}" for i in range(200)])  # far more batches than the queue
    assert _threads() == []


def test_preprocessing_the_direct_tokenizer_does_not_reproduce_is_used_instead(
    model: Any,
) -> None:
    Wrapped = wrapper_of(model)

    class Prompted(Wrapped):
        """A model whose preprocessing puts a prompt before each text (as e5 models do)."""

        def preprocess(self, texts: list[str]) -> Any:
            return model.preprocess(["query: " + t for t in texts])

        def encode(self, texts: Any, **kwargs: Any) -> Any:
            return model.encode(["query: " + t for t in texts], **kwargs)

    encoder = PipelinedEncoder(Prompted(), batch_size=4)
    assert encoder.check(["Some Text"]) is None  # its vectors are the prompted model's
    assert encoder.tokenizer == "preprocess"  # the direct tokenizer (no prompt) was refused
    plain = PipelinedEncoder(model, batch_size=4)
    assert plain.check() is None and plain.tokenizer == "direct"
    prompted = encoder.encode(["Paris"])
    assert not np.allclose(prompted, plain.encode(["Paris"]), atol=1e-3)


def test_a_model_the_encoder_does_not_reproduce_falls_back_to_encode(
    model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(PipelinedEncoder, "check", lambda self, texts, tolerance: "differs")
    backend = LocalBackend("all-MiniLM-L6-v2", device="cpu")
    calls = {"encode": 0}
    original = model.encode

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls["encode"] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "encode", counting)
    vectors = backend.embed(["a", "b c"])
    assert backend.encoder_note == "differs" and calls["encode"] == 1
    assert vectors.shape == (2, 384)


def test_pipelined_backend_scores_as_encode_did(model: Any) -> None:
    pairs = [
        ("The capital of France is Paris", "Paris is France's capital city"),
        ("Mount Skarra is 1,412 metres high.", "The Ottery is 96 kilometres long."),
    ] + [(a, b) for a, b in zip(hostile_texts(20, 5), hostile_texts(20, 6), strict=True)]
    piped = Embedder(LocalBackend("all-MiniLM-L6-v2", device="cpu"), MemoryCache())
    plain = Embedder(LocalBackend("all-MiniLM-L6-v2", device="cpu", pipeline=False), MemoryCache())
    assert piped.similarities(pairs) == pytest.approx(plain.similarities(pairs), abs=1e-5)
    assert piped.backend.encoder_note is None  # type: ignore[attr-defined]
    assert plain.backend.encoder_note is None  # type: ignore[attr-defined]


def test_config_precision_pipeline_and_batch_defaults() -> None:
    config = parse_embeddings_config({})
    assert (config.precision, config.pipeline, config.batch_size) == ("auto", True, None)
    cpu = LocalBackend("all-MiniLM-L6-v2", device="cpu")
    assert (cpu.half, cpu.batch_size, cpu.cache_id) == (False, 64, cpu.model_id)
    gpu = LocalBackend("all-MiniLM-L6-v2", device="cuda:0")  # nothing loaded: no GPU needed
    assert (gpu.half, gpu.batch_size, gpu.chunk_size) == (True, 1024, 32 * 1024)
    assert gpu.cache_id == gpu.model_id + "#fp16"  # fp16 vectors never mix with fp32 ones
    pinned = LocalBackend("all-MiniLM-L6-v2", device="cuda", precision="fp32", batch_size=256)
    assert (pinned.half, pinned.batch_size, pinned.cache_id) == (False, 256, pinned.model_id)
    with pytest.raises(InputError, match=r"embeddings\.precision"):
        parse_embeddings_config({"precision": "int8"})


def test_fp16_vectors_are_cached_apart_and_close_to_fp32() -> None:
    half = LocalBackend("all-MiniLM-L6-v2", device="cpu", precision="fp16")
    full = LocalBackend("all-MiniLM-L6-v2", device="cpu", precision="fp32")
    cache = MemoryCache()
    texts = ["The capital of France is Paris", "Solby is a fishing port."]
    a = Embedder(half, cache).encode(texts)
    b = Embedder(full, cache).encode(texts)  # not served the fp16 vectors
    assert len(cache) == 4 and half.encoder_note is None
    assert next(half.model.parameters()).dtype.itemsize == 2
    assert next(full.model.parameters()).dtype.itemsize == 4
    assert np.all(np.einsum("ij,ij->i", a, b) > 0.999)


def test_a_model_changed_after_the_check_is_tokenized_as_it_now_is(model: Any) -> None:
    encoder = PipelinedEncoder(model, batch_size=4)
    assert encoder.check() is None and encoder.tokenizer == "direct"
    long_text = "The highest peak of Veland is Mount Skarra. " * 20
    saved = model.max_seq_length
    try:
        model.max_seq_length = 32  # shared model: a user may change it at any time
        got = encoder.encode([long_text, "short"])
        expected = model.encode([long_text, "short"], convert_to_numpy=True)
    finally:
        model.max_seq_length = saved
    np.testing.assert_allclose(got, expected, atol=2e-5)
    assert encoder.tokenizer == "preprocess"


def test_a_shorter_limit_in_preprocessing_refuses_the_direct_tokenizer(model: Any) -> None:
    Wrapped = wrapper_of(model)

    class Truncating(Wrapped):
        """Preprocessing that truncates at 64 tokens while the model says 256."""

        def preprocess(self, texts: list[str]) -> Any:
            tokenizer = model[0].tokenizer
            out = dict(tokenizer(texts, padding=True, truncation=True, max_length=64,
                                 return_tensors="pt"))  # fmt: skip
            return {**out, "modality": "text"}

        def encode(self, texts: Any, **kwargs: Any) -> Any:
            features = self.preprocess(list(texts))
            return model(features)["sentence_embedding"].detach().numpy()

    encoder = PipelinedEncoder(Truncating(), batch_size=4)
    encoder.check()
    assert encoder.tokenizer == "preprocess"


def test_special_tokens_split_as_the_tokenizer_says(model: Any) -> None:
    tokenizer = model[0].tokenizer
    saved = getattr(tokenizer, "split_special_tokens", False)
    try:
        tokenizer.split_special_tokens = True
        direct = direct_tokenizer(model)
        assert direct is not None
        text = ["hello [MASK] world [SEP]"]
        np.testing.assert_array_equal(
            direct(text)["input_ids"], model.preprocess(text)["input_ids"].numpy()
        )
    finally:
        tokenizer.split_special_tokens = saved


def test_non_text_inputs_and_a_failing_pipeline_go_to_encode(
    model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(TypeError, match="strings only"):
        PipelinedEncoder(model).encode([("a", "b")])  # type: ignore[list-item]

    def broken(self: Any, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("Custom PreTokenizer cannot be serialized")

    monkeypatch.setattr(PipelinedEncoder, "__init__", broken)
    backend = LocalBackend("all-MiniLM-L6-v2", device="cpu")
    vectors = backend.embed(["first text", "second"])
    assert backend.encoder_note is not None and "cannot be serialized" in backend.encoder_note
    expected = model.encode(["first text", "second"], convert_to_numpy=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)


def test_a_huge_text_is_cut_where_the_model_stops_reading(model: Any) -> None:
    from queryeval.embeddings._backends import CHARS_PER_TOKEN

    backend = LocalBackend("all-MiniLM-L6-v2", device="cpu")
    cap = CHARS_PER_TOKEN * model.max_seq_length
    prose = "The highest peak of Veland is Mount Skarra, and the Ottery is long. "
    huge = prose * (2 * 2**20 // len(prose))  # 2 MB: the tokenizer would hold 200 MB
    natural = prose * 30  # over the token limit, under the character cap
    got = backend.embed([huge, natural, "short"])
    expected = model.encode([huge[:cap], natural, "short"], convert_to_numpy=True)
    np.testing.assert_allclose(got, expected, atol=2e-5)
    # the cut changes nothing the model reads: the same as the whole text through encode
    np.testing.assert_allclose(got[0], model.encode([prose * 400])[0], atol=2e-5)
