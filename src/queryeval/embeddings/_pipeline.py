"""Pipelined local encoding: the texts sorted by length (little padding), the next batches
tokenized in a background thread by the model's Rust tokenizer directly (outside the
interpreter lock, into pinned memory on CUDA) while the device runs the current one, and the
vectors kept on the device until the whole call is done.

This is the local backend's one speed boundary. Why it is hand-written: sentence-transformers'
`encode` tokenizes each batch in the thread that drives the device, through the transformers
wrapper, which builds its tensors from Python lists under the interpreter lock; on a GPU that
host work, not the model, sets the pace (bench/README.md, "GPU").

Nothing here is trusted blindly. `PipelinedEncoder.check` compares, once per model, the direct
tokenizer's output with the model's own preprocessing on `PROBE_TEXTS` (and the first real
batch), and the encoder's vectors with `encode`'s; where either differs the backend falls
back to `encode`. Only numpy and torch are imported, lazily (the GPU benchmark loads this
module by path on a machine without queryeval's other dependencies).
"""

from __future__ import annotations

import itertools
import queue
import threading
import weakref
from collections.abc import Callable, Generator, Sequence
from typing import Any

import numpy as np

# Texts that tell a plain padded, truncated fast-tokenizer call from a model's preprocessing
# where they differ: whitespace (stripped or not), case, accents and combining marks, scripts,
# emoji, control and zero-width characters, special-token strings, and a text past any
# model's length limit (truncation side and length).
PROBE_TEXTS: tuple[str, ...] = (
    "",
    "   ",
    "  leading and trailing spaces  ",
    "UPPER lower MiXeD Case",
    "naïve café déjà vu — “quotes” ‘single’ «guillemets»",
    "e\u0301 combining accent and ﬁ ligature ① circled",
    "日本語のテキスト、中文文本和한국어",
    "emoji 🙂🚀 and a family 👩\u200d👩\u200d👧",
    "tabs\tand\nnewlines\r\nand\u00a0no-break spaces",
    "control \x00\x01\x1f\x7f characters",
    "zero\u200bwidth\ufeffmarks",
    "[CLS] [SEP] [PAD] [MASK] <s> </s> <pad> <unk>",
    "SELECT name, SUM(total) FROM orders WHERE id >= 10.5 GROUP BY name;",
    "1234567890 3.14159e-10 -0.0 1,412 metres",
    "The highest peak of Veland is Mount Skarra. " * 120,
)

Features = dict[str, Any]
_DONE = object()
# model -> {(tokenizer, tolerance): None or why its vectors are not encode's}
_VERIFIED: weakref.WeakKeyDictionary[Any, dict[tuple[str, float], str | None]] = (
    weakref.WeakKeyDictionary()
)


def _preprocess(model: Any) -> Callable[[list[str]], Features]:
    # sentence-transformers >= 5 names it `preprocess`; 3.x and 4.x `tokenize`
    return getattr(model, "preprocess", None) or model.tokenize


MAX_DIRECT_LENGTH = 16_384
"""Models with a longer (or no) token limit tokenize through their own preprocessing: the
probe that checks truncation must be longer than the limit."""


class DirectTokenizer:
    """The model's fast (Rust) tokenizer called directly, with the padding and truncation
    that its preprocessing applies, returning NumPy arrays; built from the model's settings
    of the moment (`settings`), which `PipelinedEncoder` compares before every call."""

    def __init__(self, model: Any, tokenizer: Any, limit: int) -> None:
        from tokenizers import Tokenizer

        self.settings = _settings(model)
        self.limit = limit
        # A copy: the transformers wrapper re-configures its own on every call, from any thread.
        rust = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
        rust.encode_special_tokens = bool(getattr(tokenizer, "split_special_tokens", False))
        rust.enable_truncation(
            self.limit, stride=0, strategy="longest_first", direction=tokenizer.truncation_side
        )
        rust.enable_padding(
            direction=tokenizer.padding_side,
            pad_id=tokenizer.pad_token_id or 0,
            pad_type_id=tokenizer.pad_token_type_id,
            pad_token=tokenizer.pad_token or "[PAD]",
        )
        self.special = [str(t) for t in getattr(tokenizer, "all_special_tokens", ())]
        self._encode_batch = getattr(rust, "encode_batch_fast", None) or rust.encode_batch

    def __call__(self, texts: list[str]) -> dict[str, np.ndarray]:
        encodings = self._encode_batch(texts, add_special_tokens=True)
        return {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        }

    def probe(self) -> list[str]:
        """Texts beyond `PROBE_TEXTS` that this tokenizer's settings call for: one past its
        token limit (a shorter limit in the preprocessing shows as another width) and the
        model's own special tokens as plain text."""
        return ["word " * (self.limit + 16), " ".join(self.special) + " text"]


def direct_tokenizer(model: Any) -> DirectTokenizer | None:
    """The model's fast tokenizer called directly (see `DirectTokenizer`); None where the
    model has no fast tokenizer as its first module, no token limit up to
    `MAX_DIRECT_LENGTH`, or a tokenizer that cannot be copied (a Python pre-tokenizer).

    >>> direct_tokenizer(object()) is None
    True
    """
    tokenizer = getattr(_first_module(model), "tokenizer", None)
    if tokenizer is None or not getattr(tokenizer, "is_fast", False):
        return None
    limit = _limit(model, tokenizer)
    if not 0 < limit <= MAX_DIRECT_LENGTH:
        return None
    try:
        return DirectTokenizer(model, tokenizer, limit)
    except Exception:  # e.g. "Custom PreTokenizer cannot be serialized": preprocess it is
        return None


def _limit(model: Any, tokenizer: Any) -> int:
    limit = getattr(model, "max_seq_length", None) or tokenizer.model_max_length
    try:
        return int(limit)
    except (TypeError, ValueError, OverflowError):
        return 0


def _settings(model: Any) -> tuple[Any, ...]:
    """What the direct tokenizer copies from the model: a change means a new one."""
    tokenizer = getattr(_first_module(model), "tokenizer", None)
    return (
        getattr(model, "max_seq_length", None),
        getattr(tokenizer, "model_max_length", None),
        getattr(tokenizer, "truncation_side", None),
        getattr(tokenizer, "padding_side", None),
        getattr(tokenizer, "split_special_tokens", None),
    )


def _first_module(model: Any) -> Any:
    try:
        return model[0]
    except (TypeError, IndexError, KeyError):
        return None


class PipelinedEncoder:
    """Raw sentence embeddings of a SentenceTransformer, as `encode` gives them, with
    tokenization overlapped with the device's work.

    >>> PipelinedEncoder.__name__
    'PipelinedEncoder'
    """

    def __init__(self, model: Any, *, batch_size: int = 64, depth: int = 4) -> None:
        self.model = model
        self.batch_size = batch_size
        self.depth = depth
        self._direct = direct_tokenizer(model)
        self._extras: dict[str, Any] = {}  # non-tensor entries of preprocessing (`modality`)
        self._keys: tuple[str, ...] = ()
        self.tokenizer = "preprocess"  # which tokenizer the batches go through

    def check(self, texts: Sequence[str] = (), tolerance: float = 1e-4) -> str | None:
        """Settle which tokenizer to use and verify the encoder; None when its vectors are
        `encode`'s (largest |difference| of normalised vectors within `tolerance`), else why
        not. The direct tokenizer is used only where it gives exactly what the model's own
        preprocessing gives on `PROBE_TEXTS` and on `texts` (a first real batch). The
        vectors are compared once per model object (a model is loaded once per process)."""
        import torch

        probe = list(PROBE_TEXTS) + [str(t) for t in itertools.islice(texts, self.batch_size)]
        if self._direct is not None:
            probe += self._direct.probe()
        theirs = _preprocess(self.model)(probe)
        self._extras = {k: v for k, v in theirs.items() if not torch.is_tensor(v)}
        self._keys = tuple(k for k, v in theirs.items() if torch.is_tensor(v))
        if self._direct is not None:
            mine = self._direct(probe)
            same = set(self._keys) <= set(mine) and all(
                np.array_equal(mine[k], theirs[k].numpy()) for k in self._keys
            )
            self.tokenizer = "direct" if same else "preprocess"
        key = (self.tokenizer, tolerance)
        verdicts = _VERIFIED.setdefault(self.model, {})
        if key not in verdicts:
            verdicts[key] = self._compare_with_encode(tolerance)
        return verdicts[key]

    def _compare_with_encode(self, tolerance: float) -> str | None:
        short = [t for t in PROBE_TEXTS if len(t) < 200]  # the vectors' plumbing, not lengths
        expected = self.model.encode(
            short, batch_size=4, convert_to_numpy=True, show_progress_bar=False
        )
        got = self.encode(short)
        if got.shape != expected.shape:
            return f"vectors of shape {got.shape} where encode gives {expected.shape}"
        diff = float(np.abs(_unit(got) - _unit(np.asarray(expected, np.float32))).max())
        if not diff <= tolerance:
            return f"vectors differ from encode's by {diff:.2e} (more than {tolerance:.0e})"
        return None

    def _features(self, texts: list[str]) -> Features:
        import torch

        if self.tokenizer == "direct" and self._direct is not None:
            arrays = self._direct(texts)
            features: Features = {k: torch.from_numpy(arrays[k]) for k in self._keys}
            features.update(self._extras)
            return features
        return dict(_preprocess(self.model)(texts))

    def _batches(self, texts: list[str], order: np.ndarray) -> Generator[Features, None, None]:
        """The tokenized batches in `order`, produced `depth` ahead by a background thread;
        the thread stops when the consumer stops (an error, or the generator closed)."""
        import torch

        pin = self.model.device.type == "cuda"
        ready: queue.Queue[Any] = queue.Queue(maxsize=self.depth)
        stop = threading.Event()

        def put(item: Any) -> bool:
            while not stop.is_set():
                try:
                    ready.put(item, timeout=0.05)
                    return True
                except queue.Full:
                    continue
            return False

        def produce() -> None:
            try:
                for start in range(0, len(order), self.batch_size):
                    batch = [texts[i] for i in order[start : start + self.batch_size]]
                    features = self._features(batch)
                    if pin:
                        features = {
                            k: v.pin_memory() if torch.is_tensor(v) else v
                            for k, v in features.items()
                        }
                    if not put(features):
                        return
            except BaseException as exc:  # raised again in the consuming thread
                put(exc)
                return
            put(_DONE)

        thread = threading.Thread(target=produce, name="queryeval-tokenize", daemon=True)
        thread.start()
        try:
            while (item := ready.get()) is not _DONE:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            thread.join()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """An (n, d) float32 array of raw embeddings, one row per text, in input order.

        The model's own `encode` gives the same vectors up to float rounding (the batches
        are the same length-sorted slices, padded alike)."""
        import torch

        texts = list(texts)
        if not all(type(t) is str for t in texts):
            raise TypeError("PipelinedEncoder.encode takes strings only (encode takes pairs)")
        n = len(texts)
        model = self.model
        device = model.device
        cuda = device.type == "cuda"
        direct = self._direct
        if self.tokenizer == "direct" and direct and _settings(model) != direct.settings:
            self.tokenizer = "preprocess"  # the model changed since the check: no guessing
        if n == 0:
            return np.zeros((0, _dimension(model)), dtype=np.float32)
        order = length_order(texts)
        out: Any = None
        batches = self._batches(texts, order)
        with torch.inference_mode():
            done = 0
            try:
                for features in batches:
                    on_device = {  # asynchronous only from pinned memory (CUDA)
                        k: v.to(device, non_blocking=cuda) if torch.is_tensor(v) else v
                        for k, v in features.items()
                    }
                    vectors = model(on_device)["sentence_embedding"]
                    if out is None:
                        out = torch.empty((n, vectors.shape[1]), dtype=torch.float32, device=device)
                    out[done : done + len(vectors)] = vectors
                    done += len(vectors)
            finally:
                batches.close()  # stops the tokenizer thread, whatever happened
            inverse = np.empty(n, dtype=np.int64)
            inverse[order] = np.arange(n)
            result = out.index_select(0, torch.from_numpy(inverse).to(device)).cpu()
        return np.asarray(result.numpy(), dtype=np.float32)


def length_order(texts: Sequence[str]) -> np.ndarray:
    """Indices of `texts`, longest first (ties in input order): batches of similar length
    pad little.

    >>> length_order(["a", "ccc", "bb", "xx"]).tolist()
    [1, 2, 3, 0]
    """
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    return np.argsort(-lengths, kind="stable")


def _dimension(model: Any) -> int:
    # sentence-transformers >= 6 renamed get_sentence_embedding_dimension
    get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(get() or 0)


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.asarray(vectors / np.where(norms == 0, 1.0, norms))
