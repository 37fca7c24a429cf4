"""Benchmark: 5,000 answer pairs scored by `answer` with semantic_fixed, against the raw
sentence-transformers encode of the same texts with the same model, in the same process.

Prints pairs/s for: the raw `model.encode` (what a user would write), queryeval cold (empty
embedding cache: prepare() embeds the references, concurrent score() calls share batches),
queryeval warm (a new embedder and scorer on the same cache directory, as a second run), and
queryeval with only 4 / 64 concurrent score() calls (a runner with little concurrency). The
sides run in interleaved rounds in one process with the same torch threads; medians.

GPU path (runs when CUDA is present, prints "no GPU" otherwise): --gpu-pairs pairs (default
100,000: 200,000 sentences) scored end to end (embed both sides, cosine, threshold) on one
GPU by sentence-transformers `encode` (fp32, batch 64: what a user writes), `encode` on an
fp16 copy of the model (batch 1024), queryeval's Embedder with the local backend's defaults
on CUDA (fp16, batches of 1024, the pipelined encoder: length-sorted batches, the Rust
tokenizer in a background thread overlapping the forward pass; an in-memory cache emptied
every round), and queryeval's `answer` scorer on the GPU; interleaved, medians, sentences/s.

Run: `.venv/bin/python bench/bench_embeddings.py [--n 5000] [--device cpu|cuda]
[--threads 1] [--gpu-pairs 100000] [--quick]`.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "bench")]

import _harness as h  # noqa: E402
from _gpu_encode import encode_verdicts, half_copy  # noqa: E402
from _pairs import answer_pairs as make_pairs  # noqa: E402
from queryeval.cases import Attempt, Case, Output, Score  # noqa: E402
from queryeval.config import ScorerConfig, SuiteConfig  # noqa: E402
from queryeval.embeddings import Embedder, LocalBackend, MemoryCache  # noqa: E402
from queryeval.scorers import ScoringContext, build_scorer  # noqa: E402


def raw_encode(model, pairs: list[tuple[str, str]], batch_size: int) -> tuple[float, list[float]]:
    """What a user writes: encode both sides, cosine per pair, threshold. Seconds, values."""
    start = time.perf_counter()
    values = encode_verdicts(model, [a for a, _ in pairs], [r for _, r in pairs], 0.75, batch_size)
    return time.perf_counter() - start, values


def as_cases(pairs: list[tuple[str, str]]) -> tuple[list[Case], list[Output]]:
    """The pairs as the cases and outputs a run has already loaded (not part of scoring)."""
    cases = [
        Case.model_validate(
            {"id": str(i), "conversation": [{"content": "q", "target": {"answer": ref}}]}
        )
        for i, (_, ref) in enumerate(pairs)
    ]
    return cases, [Output(attempts=[Attempt(answer=a)]) for a, _ in pairs]


def queryeval_score(
    data: tuple[list[Case], list[Output]],
    cache_dir: Path,
    device: str,
    workers: int | None = None,
) -> tuple[float, list[Score], int]:
    """prepare() + score() of every pair through the `answer` scorer; seconds, scores, batches.
    `workers` limits how many score() calls are in flight (None: all at once)."""
    cases, outputs = data
    start = time.perf_counter()
    suite = SuiteConfig.model_validate(
        {
            "name": "bench",
            "cases": "x",
            "systems": [{"name": "s", "predictions": "p"}],
            "embeddings": {"device": device},  # the defaults: batch 64 on CPU, 1024 on CUDA
        }
    )
    ctx = ScoringContext(suite, cache_dir=cache_dir)
    scorer = build_scorer(
        ScorerConfig(name="answer", options={"evaluation_method": "semantic_fixed"})
    )
    scorer.prepare(cases, ctx)

    async def run() -> list[Score]:
        if workers is None:
            coros = (scorer.score(c, o, ctx) for c, o in zip(cases, outputs, strict=True))
            return list(await asyncio.gather(*coros))
        queue = list(zip(range(len(cases)), cases, outputs, strict=True))
        results: list[Score | None] = [None] * len(cases)

        async def worker() -> None:
            while queue:
                i, case, output = queue.pop()
                results[i] = await scorer.score(case, output, ctx)

        await asyncio.gather(*(worker() for _ in range(workers)))
        return [r for r in results if r is not None]

    scores = [scorer.finish(s) for s in asyncio.run(run())]
    elapsed = time.perf_counter() - start
    batcher = ctx.resource("answer:batcher", lambda: None)
    batches = getattr(batcher, "batches", 0)
    ctx.close()
    return elapsed, scores, batches


def cpu_section(args: argparse.Namespace, model: Any) -> None:
    """Raw encode against queryeval cold and warm, on `args.device`; then batch sizes."""
    pairs = make_pairs(args.n)
    data = as_cases(pairs)
    n = args.n
    results: dict[str, Any] = {}

    def raw() -> float:
        seconds, results["raw"] = raw_encode(model, pairs, 64)
        return seconds

    def ours() -> float:
        with tempfile.TemporaryDirectory() as tmp:
            cold_s, scores, batches = queryeval_score(data, Path(tmp), args.device)
            warm_s, warm_scores, _ = queryeval_score(data, Path(tmp), args.device)
        results["cold"], results["warm"], results["batches"] = scores, warm_scores, batches
        results.setdefault("warm_s", []).append(warm_s)
        return cold_s

    raw_label, cold_label = "raw sentence-transformers encode", "queryeval, cold cache"
    threads = f"{_threads()} thr"
    timings = h.interleaved(
        [h.Side(raw_label, raw, threads), h.Side(cold_label, ours, threads)], args.rounds
    )
    values = [s.value for s in results["cold"]]
    assert [s.value for s in results["warm"]] == values == results["raw"]
    warm = statistics.median(results["warm_s"])
    print(f"{n:,} pairs ({2 * n:,} distinct texts), semantic_fixed at 0.75, on {model.device}")
    print(h.table(timings, reference=raw_label, per=(n, "pairs/s")))
    r, c = timings[raw_label], timings[cold_label]
    print(f"  queryeval, warm cache: {n / warm:9.1f} pairs/s = {c.median / warm:.0f}x the cold run")
    print("  verdicts identical to the raw loop: yes (asserted)")
    h.record(
        "embeddings",
        f"semantic_fixed, {n:,} answer pairs ({model.device})",
        f"{n / c.median:.1f} pairs/s cold = {r.median / c.median:.1%} of raw; warm {n / warm:,.0f}",
        against=f"raw encode {n / r.median:.1f} pairs/s, same process and threads",
        note=f"median of {args.rounds}",
    )

    small = pairs[: args.small]
    small_data = as_cases(small)
    raw_small = statistics.median(raw_encode(model, small, 64)[0] for _ in range(3))
    for workers in (4, 64, None):
        with tempfile.TemporaryDirectory() as tmp:
            took, _, b = queryeval_score(small_data, Path(tmp), args.device, workers=workers)
        label = f"{workers} in flight" if workers else "all in flight"
        print(
            f"  {len(small):,} pairs, {label:>14}: {len(small) / took:9.1f} pairs/s, "
            f"{b} batch(es), {raw_small / took:.1%} of raw (one run)",
            flush=True,
        )


def _threads() -> int:
    import torch

    return torch.get_num_threads()


EMBEDDER = "queryeval Embedder.similarities, no cache"


def gpu_section(args: argparse.Namespace, device: str = "cuda") -> None:
    """The GPU path: end-to-end semantic scoring on one CUDA device, four ways. (`device`
    "cpu" runs the same code on the CPU, to try it where no GPU is lent: no figures.)"""
    import torch

    cuda = device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("GPU: no GPU (torch.cuda.is_available() is False): the GPU path was not run")
        h.record("embeddings", "GPU semantic scoring", "no GPU", note="not measured")
        return
    name = torch.cuda.get_device_name(0) if cuda else "CPU dry run"
    model = LocalBackend("all-MiniLM-L6-v2", device=device).model
    half = half_copy(model)
    pairs = make_pairs(args.gpu_pairs)
    answers = [a for a, _ in pairs]  # the warm-up texts
    n, sentences = len(pairs), 2 * len(pairs)
    for m in (model, half):  # warm-up: kernels, allocator
        m.encode(answers[:2048], batch_size=512, show_progress_bar=False)
    if cuda:
        torch.cuda.synchronize()
    got: dict[str, list[float]] = {}

    def encode_side(key: str, m: Any, batch: int) -> Any:
        def run() -> float:
            seconds, got[key] = raw_encode(m, pairs, batch)
            return seconds

        return run

    backend = LocalBackend("all-MiniLM-L6-v2", device=device)  # fp16 on CUDA, batch 1024
    Embedder(backend).encode(answers[:2048])  # warm-up, and the encoder's check
    assert backend.encoder_note is None, backend.encoder_note

    def embedder() -> float:
        start = time.perf_counter()
        sims = Embedder(backend, MemoryCache()).similarities(pairs)
        got["queryeval"] = [1.0 if s >= 0.75 else 0.0 for s in sims]
        return time.perf_counter() - start

    subset = pairs[: min(n, args.gpu_scorer_pairs)]
    subset_data = as_cases(subset)

    def scorer() -> float:
        with tempfile.TemporaryDirectory() as tmp:
            seconds, _, _ = queryeval_score(subset_data, Path(tmp), device)
        return seconds * n / len(subset)  # scaled to n pairs for the table (rate unchanged)

    base = "st encode fp32, batch 64"
    sides = [
        h.Side(base, encode_side("fp32", model, 64), "1 GPU"),
        h.Side("st encode fp16 model, batch 1024", encode_side("fp16", half, 1024), "1 GPU"),
        h.Side(EMBEDDER, embedder, "1 GPU"),
        h.Side(f"queryeval answer scorer ({len(subset):,} pairs, scaled)", scorer, "1 GPU"),
    ]
    timings = h.interleaved(sides, args.rounds)
    agree = sum(a == b for a, b in zip(got["queryeval"], got["fp32"], strict=True)) / n
    print(f"GPU {name}: {n:,} pairs = {sentences:,} sentences end to end (embed, cosine, 0.75)")
    print(h.table(timings, reference=base, per=(sentences, "sentences/s")))
    print(f"  queryeval's verdicts equal to fp32 encode's on {agree:.4%} of pairs")
    best = timings[EMBEDDER]
    if not cuda:
        return  # a dry run of the code, not a figure
    h.record(
        "embeddings",
        f"GPU semantic scoring, {sentences:,} sentences ({name})",
        f"queryeval Embedder fp16 {sentences / best.median:,.0f} sentences/s",
        against=f"st encode fp32 {sentences / timings[base].median:,.0f} sentences/s, same GPU",
        note=f"target >= 100,000 sentences/s; median of {args.rounds}; "
        f"verdicts agree on {agree:.2%}",
    )


def main() -> int:
    def extra(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--device", default="auto")
        parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
        parser.add_argument("--skip-gpu", action="store_true")
        parser.add_argument(
            "--gpu-dry-run", action="store_true", help="run the GPU section's code on the CPU"
        )

    args = h.options(
        __doc__.splitlines()[0],
        full={"n": 5_000, "rounds": 3, "small": 1_000, "gpu_pairs": 100_000,
              "gpu_scorer_pairs": 20_000},
        quick={"n": 100, "rounds": 2, "small": 64, "gpu_pairs": 20_000,
               "gpu_scorer_pairs": 5_000},
        extra=extra,
    )  # fmt: skip
    import torch

    threads = args.threads or (1 if args.quick else 0)  # --quick: one thread (busy machines)
    if threads:
        torch.set_num_threads(threads)  # both sides run under the same setting
    print(h.machine())
    t0 = time.perf_counter()
    model = LocalBackend("all-MiniLM-L6-v2", device=args.device).model
    load_s = time.perf_counter() - t0
    print(
        f"python {platform.python_version()}, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads), device {model.device}; "
        f"model load {load_s:.1f} s (once per process, not in the rates)",
        flush=True,
    )
    model.encode(["warm-up"] * 64, batch_size=64, show_progress_bar=False)
    cpu_section(args, model)
    if args.gpu_dry_run:
        gpu_section(args, device="cpu")
    elif not args.skip_gpu:
        gpu_section(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
