"""A text with an unpaired UTF-16 surrogate (what a JSON escape such as "\\ud800" decodes to,
from a live system's reply) is the system's invalid output: that case fails, the cases
scored beside it are scored as usual, and results.jsonl stays readable UTF-8."""

from __future__ import annotations

import doctest
import json
import sys
from pathlib import Path

import pytest

import queryeval._unicode
import queryeval.embeddings._pipeline
from queryeval.embeddings import Embedder, MemoryCache, text_key
from queryeval.runner import load_suite, run_suite

ANSWERS = {
    "c1": "Paris is the capital",
    "c2": "Paris is \ud800 the capital",  # right, but not text
    "c3": "Solby is a port for fishing",
}
REFERENCES = {
    "c1": "The capital is Paris",
    "c2": "The capital is Paris",
    "c3": "Solby is a fishing port",
}


def run_callable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, system: str, suite: str
) -> dict[str, dict]:
    """Run a suite over `REFERENCES` whose one system is `system` (the source of a module
    with `answer(case, **params)`) and the extra suite lines `suite`; the records of
    results.jsonl by case id, read as strict UTF-8."""
    name = f"system_{tmp_path.name}"
    (tmp_path / f"{name}.py").write_text(system)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    cases = [
        {"id": k, "conversation": [{"content": "q", "target": {"answer": v}}]}
        for k, v in REFERENCES.items()
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "suite.yaml").write_text(
        "name: surrogates\n"
        "cases: cases.jsonl\n"
        f"systems: [{{name: s, callable: '{name}:answer'}}]\n" + suite
    )
    run_suite(load_suite(tmp_path / "suite.yaml"), tmp_path / "run", progress=False)
    lines = (tmp_path / "run" / "results.jsonl").read_bytes().decode("utf-8").splitlines()
    return {r["case_id"]: r for r in map(json.loads, lines)}


def test_a_live_answer_with_a_lone_surrogate_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = run_callable(
        tmp_path,
        monkeypatch,
        "ANSWERS = " + repr(ANSWERS) + "\n"
        "def answer(case, **params):\n"
        "    return {'answer': ANSWERS[case.id]}\n",
        "scorers:\n"
        "  - {name: answer, options: {evaluation_method: semantic_fixed}}\n"
        "  - {name: answer, id: kw, weight: 0, options: {evaluation_method: keyword}}\n"
        "embeddings: {device: cpu, cache: false}\n"
        "reports: [json]\n",
    )
    assert set(records) == set(ANSWERS)
    bad = records["c2"]
    assert bad["output"]["attempts"][0]["answer"] == "Paris is \ufffd the capital"
    for label in ("answer", "kw"):
        assert bad["scores"][label]["value"] == 0.0
        assert "unpaired surrogate at character 9" in bad["scores"][label]["explanation"]
    for case in ("c1", "c3"):  # batched with it, scored as usual
        assert records[case]["scores"]["answer"]["value"] == 1.0, records[case]["scores"]


def test_the_embedder_takes_a_lone_surrogate_without_failing_its_batch() -> None:
    from queryeval.embeddings import LocalBackend

    embedder = Embedder(LocalBackend("all-MiniLM-L6-v2", device="cpu"), MemoryCache())
    texts = ["Paris is the capital", "broken \udc00 text", "broken \ufffd text"]
    vectors = embedder.encode(texts)
    assert vectors.shape == (3, 384)
    # embedded as U+FFFD, under a key of its own (never another text's)
    assert float(vectors[1] @ vectors[2]) == pytest.approx(1.0, abs=1e-5)
    assert text_key(texts[1]) != text_key(texts[2])
    assert embedder.stats.embedded == 3


@pytest.mark.parametrize("module", [queryeval._unicode, queryeval.embeddings._pipeline])
def test_docstring_examples_run(module: object) -> None:
    failed, attempted = doctest.testmod(module)  # type: ignore[arg-type]
    assert attempted and not failed


def test_a_crash_message_with_a_lone_surrogate_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The system's error text reaches the record (and the failure's details) as well."""
    records = run_callable(
        tmp_path,
        monkeypatch,
        "def answer(case, **params):\n"
        "    if case.id == 'c2':\n"
        "        raise RuntimeError('bad \\ud800 state')\n"
        "    return {'answer': 'Paris is the capital'}\n",
        "scorers: [{name: answer, options: {evaluation_method: keyword}}]\n"
        "reports: [json, html, excel, markdown, junit]\n",
    )
    assert set(records) == set(REFERENCES)
    assert "bad \ufffd state" in records["c2"]["error"]
    assert records["c2"]["scores"]["answer"]["value"] == 0.0


def test_a_model_reply_with_a_lone_surrogate_is_cached_and_read_back(tmp_path: Path) -> None:
    from queryeval.llm import ReplyCache, request_key
    from queryeval.llm._client import Reply

    cache = ReplyCache(tmp_path / "replies.sqlite")
    key = request_key(model="m", prompt="say \udc00")  # hashed, not raised
    reply = Reply(text="SELECT '\ud800'", usage={"prompt_tokens": 1}, cost=None)
    cache.put(key, "m", "chat", reply)
    assert cache.get(key) == reply
    assert key != request_key(model="m", prompt="say \ufffd")


def test_a_lone_surrogate_inside_a_structured_output_is_invalid() -> None:
    from queryeval.scorers._produced import _surrogate_in

    assert _surrogate_in({"collection": "R", "search_query": "Cozy \ud800 Italian"}) == (
        "under 'search_query'"
    )
    assert _surrogate_in([{"code": "LP"}, {"code": "LP\ud800"}]) == "in item 1"
    assert _surrogate_in({"filters": [{"value": "ok"}], "\udc00": 1}) is not None
    assert _surrogate_in({"collection": "Café", "limit": 3, "tags": ["naïve"]}) is None
