"""A pipelined sentence-transformers encoder for the GPU path of bench_embeddings.py: the
texts are sorted by length (less padding), a background thread tokenizes batch k+1 (into
pinned memory on CUDA) while the device runs batch k in fp16, and the pooled, normalised
vectors stay on the device until the cosines are taken.

This is the benchmark's prototype of what the embeddings service could do on a GPU; the
service itself (queryeval.embeddings.LocalBackend) still calls `SentenceTransformer.encode`.
It runs on any device (fp32 on CPU, where `check_against_encode` verifies it).
"""

from __future__ import annotations

import copy
import queue
import threading
from typing import Any

_DONE = object()


def half_copy(model: Any) -> Any:
    """An fp16 copy of a SentenceTransformer (the original stays fp32 for the baseline)."""
    return copy.deepcopy(model).half()


def _tokenizer(model: Any) -> Any:
    # sentence-transformers >= 5 names it `preprocess`; 3.x and 4.x `tokenize`
    return getattr(model, "preprocess", None) or model.tokenize


_MODEL: Any = None  # a tokenizer process's own copy of the model (CPU)


def _load(model_dir: str) -> None:
    global _MODEL
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    _MODEL = SentenceTransformer(model_dir, device="cpu")


def _tokenize_arrays(texts: list[str]) -> dict[str, Any]:
    import torch

    features = _tokenizer(_MODEL)(texts)
    return {k: v.numpy() if torch.is_tensor(v) else v for k, v in features.items()}


class TokenizerProcesses:
    """Worker processes that tokenize with the model's own `preprocess` (each loads the
    model on its CPU once, at start): tokenization outside the interpreter lock of the
    process that drives the GPU, where threads gain nothing (the tokenizer's wrapper builds
    its tensors from Python lists under that lock)."""

    def __init__(self, model_dir: str, processes: int) -> None:
        import concurrent.futures
        import multiprocessing

        self.pool = concurrent.futures.ProcessPoolExecutor(
            processes, mp_context=multiprocessing.get_context("spawn"),
            initializer=_load, initargs=(model_dir,),
        )  # fmt: skip
        list(self.pool.map(_tokenize_arrays, [["start"]] * processes))  # all started

    def map(self, chunks: list[list[str]]) -> Any:
        """The features of each chunk, in order, as NumPy arrays."""
        return self.pool.map(_tokenize_arrays, chunks)

    def close(self) -> None:
        self.pool.shutdown()


def pipelined_encode(
    model: Any,
    texts: list[str],
    batch_size: int = 512,
    depth: int = 4,
    workers: int = 1,
    processes: TokenizerProcesses | None = None,
) -> Any:
    """Normalised embeddings of `texts` as a (len(texts), dim) float tensor on the model's
    device, in input order. Tokenization runs `depth` batches ahead in `workers` threads
    (batch k goes to thread k mod workers), or in `processes`; the GPU takes the batches
    as they come."""
    import torch

    device = model.device
    cuda = device.type == "cuda"
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    tokenize = _tokenizer(model)
    batches: queue.Queue[Any] = queue.Queue(maxsize=depth * workers)
    starts = list(range(0, len(order), batch_size))
    if processes is not None:
        workers = 1
        tokenized = processes.map([[texts[i] for i in order[s : s + batch_size]] for s in starts])

        def tokenize_next(_: list[str]) -> dict[str, Any]:
            arrays = next(tokenized)
            return {k: torch.from_numpy(v) if not isinstance(v, str) else v
                    for k, v in arrays.items()}  # fmt: skip

        tokenize = tokenize_next

    def produce(mine: list[int]) -> None:
        try:
            for start in mine:
                index = order[start : start + batch_size]
                features = tokenize([texts[i] for i in index])
                if cuda:
                    features = {
                        k: v.pin_memory() if torch.is_tensor(v) else v for k, v in features.items()
                    }
                batches.put((index, features))
        except BaseException as exc:  # handed to the consumer, raised there
            batches.put(exc)
        batches.put(_DONE)

    threads = [
        threading.Thread(target=produce, args=(starts[k::workers],), name=f"bench-tokenize-{k}",
                         daemon=True)
        for k in range(workers)
    ]  # fmt: skip

    for thread in threads:
        thread.start()
    # sentence-transformers >= 6 renamed get_sentence_embedding_dimension
    dim = (
        getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    )()
    out = torch.empty((len(texts), dim), dtype=torch.float32, device=device)
    with torch.inference_mode():
        running = workers
        while running:
            item = batches.get()
            if item is _DONE:
                running -= 1
                continue
            if isinstance(item, BaseException):
                raise item
            index, features = item
            features = {
                k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v
                for k, v in features.items()
            }
            vectors = model(features)["sentence_embedding"].float()
            where = torch.as_tensor(index, device=device)
            out[where] = torch.nn.functional.normalize(vectors, dim=1)
    for thread in threads:
        thread.join()
    return out


def pipelined_verdicts(
    model: Any,
    answers: list[str],
    references: list[str],
    threshold: float,
    batch_size: int,
    workers: int = 1,
    processes: TokenizerProcesses | None = None,
) -> tuple[list[float], Any]:
    """End-to-end semantic scoring of (answer, reference) pairs: embed both sides, cosine per
    pair on the device, threshold; returns (verdicts, cosines as a CPU tensor)."""
    import torch

    vectors = pipelined_encode(
        model, answers + references, batch_size, workers=workers, processes=processes
    )
    n = len(answers)
    cosines = (vectors[:n] * vectors[n:]).sum(dim=1)
    if vectors.device.type == "cuda":
        torch.cuda.synchronize()
    cos = cosines.cpu()
    return [1.0 if c >= threshold else 0.0 for c in cos.tolist()], cos


def encode_verdicts(
    model: Any, answers: list[str], references: list[str], threshold: float, batch_size: int
) -> list[float]:
    """What a user writes: `encode` both sides (normalised), cosine per pair, threshold."""
    import numpy as np

    vectors = model.encode(answers + references, batch_size=batch_size,
                           normalize_embeddings=True, convert_to_numpy=True,
                           show_progress_bar=False)  # fmt: skip
    n = len(answers)
    cosines = np.einsum("ij,ij->i", vectors[:n], vectors[n:])
    return [1.0 if c >= threshold else 0.0 for c in cosines]


def check_against_encode(model: Any, texts: list[str]) -> float:
    """Largest |difference| between the pipelined encoder's vectors and `encode`'s on the
    model's own device and dtype (a test of the pipeline's bookkeeping)."""
    import torch

    mine = pipelined_encode(model, texts, batch_size=16).cpu()
    theirs = torch.as_tensor(
        model.encode(texts, batch_size=16, normalize_embeddings=True, show_progress_bar=False)
    )
    return float((mine - theirs).abs().max())
