"""A small offline RAG system for the example suite: BM25 retrieval (bm25s) over the Veland
corpus, then an extractive answer made of the retrieved sentences that best match the question.

Grid parameters: `top_k` chunks retrieved, `chunk_size` (max words per chunk, whole sentences
packed greedily; 0 = whole passages), `answer_sentences` sentences in the answer.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import orjson

CORPUS = Path(__file__).resolve().parent / "data" / "corpus.jsonl"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")
_WORD = re.compile(r"\w\w+")


@functools.cache
def passages() -> tuple[dict[str, str], ...]:
    """The corpus: {id, title, text} per passage."""
    return tuple(orjson.loads(line) for line in CORPUS.read_bytes().splitlines() if line.strip())


def sentences(text: str) -> list[str]:
    """Split a passage into sentences (the corpus is plain, well-punctuated prose)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def chunk(text: str, chunk_size: int) -> list[str]:
    """Whole sentences packed greedily into chunks of at most `chunk_size` words (a longer
    sentence is a chunk of its own); 0 keeps the passage whole."""
    if chunk_size <= 0:
        return [text]
    chunks: list[str] = []
    current: list[str] = []
    words = 0
    for sentence in sentences(text):
        n = len(sentence.split())
        if current and words + n > chunk_size:
            chunks.append(" ".join(current))
            current, words = [], 0
        current.append(sentence)
        words += n
    if current:
        chunks.append(" ".join(current))
    return chunks


@functools.cache
def index(chunk_size: int) -> tuple[Any, tuple[str, ...], tuple[str, ...]]:
    """(BM25 index, chunk texts, passage id of each chunk), built once per chunk size."""
    import bm25s

    texts: list[str] = []
    owners: list[str] = []
    for p in passages():
        for c in chunk(p["text"], chunk_size):
            texts.append(c)
            owners.append(p["id"])
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    return retriever, tuple(texts), tuple(owners)


@functools.cache
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _stopwords()}


def retrieve(question: str, *, top_k: int, chunk_size: int) -> list[tuple[str, str, float]]:
    """The `top_k` best chunks for the question: (passage id, chunk text, BM25 score)."""
    import bm25s

    retriever, texts, owners = index(chunk_size)
    tokens = bm25s.tokenize([question], stopwords="en", show_progress=False)
    k = min(top_k, len(texts))
    ids, scores = retriever.retrieve(tokens, k=k, show_progress=False)
    return [(owners[i], texts[i], float(s)) for i, s in zip(ids[0], scores[0], strict=True)]


def extract_answer(question: str, chunks: list[tuple[str, str, float]], n_sentences: int) -> str:
    """The `n_sentences` retrieved sentences sharing the most question words (weighted by how
    well their chunk was retrieved), in order of that score."""
    asked = _content_words(question)
    top = max((s for _, _, s in chunks), default=0.0) or 1.0
    scored: list[tuple[float, int, str]] = []
    for rank, (_, text, score) in enumerate(chunks):
        for sentence in sentences(text):
            overlap = len(asked & _content_words(sentence))
            scored.append((overlap + 0.5 * score / top, -rank, sentence))
    scored.sort(reverse=True)
    return " ".join(s for _, _, s in scored[:n_sentences])


def answer(case: Any, *, top_k: int = 3, chunk_size: int = 50, answer_sentences: int = 1) -> dict:
    """The system under test: `case.question` -> {answer, retrieved passage ids}."""
    question = case.question
    chunks = retrieve(question, top_k=top_k, chunk_size=chunk_size)
    return {
        "answer": extract_answer(question, chunks, answer_sentences) or "I don't know.",
        "retrieved": [pid for pid, _, _ in chunks],
    }
