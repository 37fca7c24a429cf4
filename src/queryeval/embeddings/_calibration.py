"""A saved similarity threshold: found on a labelled validation set for one embedding model,
reused by `semantic_dynamic`, and refused for any other model."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from queryeval.errors import InputError

if TYPE_CHECKING:
    import numpy as np

    from queryeval.embeddings._embedder import Embedder


class Calibration(BaseModel):
    """What `queryeval calibrate` found, and on what."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["semantic_threshold"] = "semantic_threshold"
    model_id: str
    threshold: float
    metric: Literal["accuracy", "f1"]
    score: float = Field(description="the metric at the threshold, on the validation set")
    n: int
    proxy: bool = Field(description="true when labels were the seed's similarity > 0.9 proxy")
    confusion: dict[str, int] = Field(description="tp, fp, fn, tn at the threshold")
    coarse_threshold: float | None = Field(
        default=None, description="the best of the seed's grid 0.50..0.90 alone"
    )
    coarse_score: float | None = None
    default_score: float | None = Field(
        default=None, description="the metric at the seed's fixed 0.75, for comparison"
    )
    suite: str | None = None
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))


def save_calibration(calibration: Calibration, path: Path) -> Path:
    """Write the calibration as indented JSON; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(calibration.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return path


def load_calibration(path: Path, *, model_id: str | None = None) -> Calibration:
    """Read a calibration; InputError when it is missing, malformed, or made with another
    embedding model than `model_id` (a threshold does not transfer between models)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(
            "calibration file not found; run `queryeval calibrate VALIDATION_SUITE.yaml` first "
            "or use evaluation_method: semantic_fixed",
            path=path,
        )
    try:
        calibration = Calibration.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise InputError(
            f"not a calibration file: {first['msg']}",
            path=path,
            where=".".join(str(p) for p in first["loc"]) or None,
        ) from None
    if model_id is not None and calibration.model_id != model_id:
        raise InputError(
            f"this threshold was calibrated for embedding model {calibration.model_id!r} and "
            f"cannot be used with {model_id!r}; re-run `queryeval calibrate` with this model",
            path=path,
            where="model_id",
        )
    return calibration


def encode_with_progress(
    embedder: Embedder,
    texts: Sequence[str],
    say: Callable[[str], None],
    *,
    steps: int = 20,
    min_chunk: int = 64,
    heartbeat_s: float = 30.0,
) -> np.ndarray:
    """`embedder.encode(texts)` in about `steps` chunks (at least `min_chunk` texts each),
    saying after each how many texts are done and the seconds so far; while one chunk
    takes longer than `heartbeat_s` (the model's first load, a loaded machine), a line
    every `heartbeat_s` says it is still at work. The same vectors as one `encode` call.

    >>> import numpy as np
    >>> class Fake:
    ...     def encode(self, texts): return np.ones((len(texts), 2), np.float32)
    >>> lines = []
    >>> encode_with_progress(Fake(), ["a"] * 5, lines.append, min_chunk=2).shape
    (5, 2)
    >>> [line.split(" (")[0] for line in lines]
    ['embedded 2/5 texts', 'embedded 4/5 texts', 'embedded 5/5 texts']
    """
    import numpy as np

    texts = list(texts)
    if not texts:
        return embedder.encode(texts)
    size = max(min_chunk, math.ceil(len(texts) / max(1, steps)))
    start, done = time.monotonic(), [0]
    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.wait(heartbeat_s):
            say(
                f"still embedding: {done[0]}/{len(texts)} texts done "
                f"({time.monotonic() - start:.0f} s)"
            )

    ticker = threading.Thread(target=heartbeat, name="calibrate-progress", daemon=True)
    ticker.start()
    parts = []
    try:
        for first in range(0, len(texts), size):
            parts.append(embedder.encode(texts[first : first + size]))
            done[0] = min(len(texts), first + size)
            say(f"embedded {done[0]}/{len(texts)} texts ({time.monotonic() - start:.1f} s)")
    finally:
        stop.set()
        ticker.join()
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
