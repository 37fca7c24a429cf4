"""The GPU benches' shared pieces: the product's pipelined encoder
(`src/queryeval/embeddings/_pipeline.py`, loaded by path, since the device machine's image has
torch and sentence-transformers but none of queryeval's other dependencies), the
encode-and-threshold baseline a user writes, and an fp16 copy of a model.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np

_PIPELINE = Path(__file__).resolve().parent.parent / "src/queryeval/embeddings/_pipeline.py"


def half_copy(model: Any) -> Any:
    """An fp16 copy of a SentenceTransformer (the original stays fp32 for the baseline)."""
    return copy.deepcopy(model).half()


def pipeline_module() -> Any:
    """queryeval's `embeddings._pipeline` module, imported from its file alone."""
    name = "queryeval_embeddings_pipeline"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _PIPELINE)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def checked_encoder(model: Any, batch_size: int, texts: list[str]) -> Any:
    """queryeval's PipelinedEncoder for `model`, checked against `encode` as the local
    backend checks it (fp16 tolerance where the model is fp16); raises where the check fails."""
    import torch

    encoder = pipeline_module().PipelinedEncoder(model, batch_size=batch_size)
    half = next(model.parameters()).dtype == torch.float16
    note = encoder.check(texts, tolerance=1e-2 if half else 1e-4)
    if note is not None:
        raise RuntimeError(f"the pipelined encoder fails its check: {note}")
    return encoder


def _verdicts(unit: np.ndarray, n: int, threshold: float) -> list[float]:
    """Unit vectors of n answers then n references -> 1.0 where the pair's cosine reaches
    `threshold`, else 0.0."""
    cosines = np.einsum("ij,ij->i", unit[:n], unit[n:])
    return [1.0 if c >= threshold else 0.0 for c in cosines]


def pipeline_verdicts(
    encoder: Any, answers: list[str], references: list[str], threshold: float
) -> list[float]:
    """End-to-end semantic scoring with queryeval's encoder, as its Embedder does it: embed
    both sides, normalise, cosine per pair, threshold."""
    vectors = np.asarray(encoder.encode(answers + references), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return _verdicts(vectors / np.where(norms == 0, 1.0, norms), len(answers), threshold)


def encode_verdicts(
    model: Any, answers: list[str], references: list[str], threshold: float, batch_size: int
) -> list[float]:
    """What a user writes: `encode` both sides (normalised), cosine per pair, threshold."""
    vectors = model.encode(answers + references, batch_size=batch_size,
                           normalize_embeddings=True, convert_to_numpy=True,
                           show_progress_bar=False)  # fmt: skip
    return _verdicts(vectors, len(answers), threshold)
