"""Benchmark: 10,000 answer pairs scored by `answer` with semantic_fixed, against the raw
sentence-transformers encode of the same texts with the same model, in the same process.

Prints pairs/s for: the raw `model.encode` (what a user would write), queryeval cold (empty
embedding cache: prepare() embeds the references, concurrent score() calls share batches),
queryeval warm (a new embedder and scorer on the same cache directory, as a second run), and
queryeval with only 4 / 64 concurrent score() calls (a runner with little concurrency).
Run: `.venv/bin/python bench/bench_embeddings.py [N] [--device cpu|cuda] [--threads 1]`.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from queryeval.cases import Attempt, Case, Output, Score  # noqa: E402
from queryeval.config import ScorerConfig, SuiteConfig  # noqa: E402
from queryeval.embeddings import LocalBackend  # noqa: E402
from queryeval.scorers import ScoringContext, build_scorer  # noqa: E402


def make_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """n (answer, reference) pairs of corpus-like sentences; every text distinct, so neither
    side profits from duplicates."""
    rng = random.Random(seed)
    corpus = ROOT / "examples" / "rag" / "data" / "corpus.jsonl"
    sentences = [
        s
        for line in corpus.read_bytes().splitlines()
        for s in orjson.loads(line)["text"].split(". ")
        if len(s.split()) > 4
    ]
    pairs = []
    for i in range(n):
        words = rng.choice(sentences).split()
        drop = rng.randrange(len(words))
        answer = " ".join(words[:drop] + words[drop + 1 :]) + f" (answer {i})"
        pairs.append((answer, f"{rng.choice(sentences)} (reference {i})"))
    return pairs


def raw_encode(model, pairs: list[tuple[str, str]], batch_size: int) -> tuple[float, list[float]]:
    """What a user writes: encode both sides, cosine per pair, threshold. Seconds, values."""
    start = time.perf_counter()
    vectors = model.encode(
        [a for a, _ in pairs] + [r for _, r in pairs],
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    n = len(pairs)
    sims = np.einsum("ij,ij->i", vectors[:n], vectors[n:])
    values = [1.0 if s >= 0.75 else 0.0 for s in sims]
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
            "embeddings": {"device": device, "batch_size": 64},
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("n", nargs="?", type=int, default=10_000)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved raw/queryeval rounds")
    parser.add_argument("--small", type=int, default=2_000, help="pairs for the in-flight runs")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)  # both sides run under the same setting
    pairs = make_pairs(args.n)
    data = as_cases(pairs)

    t0 = time.perf_counter()
    model = LocalBackend("all-MiniLM-L6-v2", device=args.device).model
    load_s = time.perf_counter() - t0
    import torch

    print(
        f"python {platform.python_version()}, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads), device {model.device}; "
        f"model load {load_s:.1f} s (once per process, not in the rates)",
        flush=True,
    )
    model.encode(["warm-up"] * 64, batch_size=64, show_progress_bar=False)

    n = args.n
    raw_times, cold_times, warm_times = [], [], []
    for r in range(args.rounds):  # interleaved, best of each: a busy machine hurts both alike
        raw_s, raw_values = raw_encode(model, pairs, 64)
        with tempfile.TemporaryDirectory() as tmp:
            cold_s, scores, batches = queryeval_score(data, Path(tmp), args.device)
            warm_s, warm_scores, _ = queryeval_score(data, Path(tmp), args.device)
        assert [s.value for s in warm_scores] == [s.value for s in scores] == raw_values
        raw_times.append(raw_s)
        cold_times.append(cold_s)
        warm_times.append(warm_s)
        print(
            f"round {r + 1}: raw {raw_s:.1f} s, queryeval cold {cold_s:.1f} s "
            f"({batches} answer batch), warm {warm_s:.2f} s",
            flush=True,
        )
    raw_best, cold_best, warm_best = min(raw_times), min(cold_times), min(warm_times)
    print(f"{n:,} pairs ({2 * n:,} distinct texts), semantic_fixed at 0.75, best of {args.rounds}")
    print(f"  raw sentence-transformers encode : {n / raw_best:9.1f} pairs/s")
    print(
        f"  queryeval, cold cache            : {n / cold_best:9.1f} pairs/s  "
        f"= {raw_best / cold_best:.1%} of raw"
    )
    print(
        f"  queryeval, warm cache            : {n / warm_best:9.1f} pairs/s  "
        f"= {cold_best / warm_best:.0f}x the cold run"
    )
    print("  verdicts identical to the raw loop: yes (asserted)")

    small = pairs[: args.small]
    small_data = as_cases(small)
    raw_small = min(raw_encode(model, small, 64)[0] for _ in range(2))
    for workers in (4, 64, None):
        with tempfile.TemporaryDirectory() as tmp:
            s, _, b = queryeval_score(small_data, Path(tmp), args.device, workers=workers)
        label = f"{workers} in flight" if workers else "all in flight"
        print(
            f"  {len(small):,} pairs, {label:>14}: {len(small) / s:9.1f} pairs/s, "
            f"{b} batch(es), {raw_small / s:.1%} of raw",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
