"""The fake OpenAI-compatible server itself (shared with other areas' tests): embeddings in
both encodings, request recording, scripted replies before the handler, auth."""

from __future__ import annotations

import math

import pytest
from openai import AuthenticationError, OpenAI

from fakes.openai_server import EmbeddingRequest, FakeOpenAI, Reply, hashed_embedding


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (
        math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    )


def test_embeddings_default_is_deterministic_and_normalised() -> None:
    with FakeOpenAI(embedding_dim=32) as server:
        client = OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        texts = ["the capital of France is Paris", "Paris is the capital of France", "bananas"]
        as_b64 = client.embeddings.create(model="emb", input=texts)  # the SDK asks for base64
        as_float = client.embeddings.create(model="emb", input=texts, encoding_format="float")
        client.close()
    vecs = [d.embedding for d in as_b64.data]
    assert [len(v) for v in vecs] == [32, 32, 32]
    for v, f in zip(vecs, (d.embedding for d in as_float.data), strict=True):
        assert v == pytest.approx(f, abs=1e-6)
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-5) for v in vecs)
    assert cosine(vecs[0], vecs[1]) == pytest.approx(1.0, abs=1e-5)  # same words
    assert cosine(vecs[0], vecs[2]) < 0.5
    assert vecs[0] == pytest.approx(hashed_embedding(texts[0], 32), abs=1e-6)
    assert server.embedding_requests[0].texts == texts


def test_custom_embedding_handler() -> None:
    def embed(req: EmbeddingRequest) -> list[list[float]]:
        return [[float(len(t)), 0.0] for t in req.texts]

    with FakeOpenAI(embed=embed) as server:
        client = OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        out = client.embeddings.create(model="m", input="abc", encoding_format="float")
        client.close()
    assert out.data[0].embedding == [3.0, 0.0]


def test_script_comes_before_the_handler_and_requests_are_recorded() -> None:
    with FakeOpenAI(Reply.text("handler")) as server:
        server.script(Reply.text("first"), Reply.server_error(503))
        client = OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        msgs = [{"role": "user", "content": "hi"}]
        first = client.chat.completions.create(model="m", messages=msgs)  # type: ignore[arg-type]
        with pytest.raises(Exception, match=r"503|internal"):
            client.chat.completions.create(model="m", messages=msgs)  # type: ignore[arg-type]
        third = client.chat.completions.create(model="m", messages=msgs)  # type: ignore[arg-type]
        client.close()
    assert (first.choices[0].message.content, third.choices[0].message.content) == (
        "first",
        "handler",
    )
    assert server.replies_sent == [200, 503, 200]
    assert server.chat_requests[0].content("user") == "hi"
    assert first.usage is not None and first.usage.prompt_tokens > 0


def test_api_key_is_checked() -> None:
    with FakeOpenAI(api_key="secret") as server:
        client = OpenAI(base_url=server.base_url, api_key="wrong", max_retries=0)
        with pytest.raises(AuthenticationError):
            client.embeddings.create(model="m", input="x")
        client.close()
