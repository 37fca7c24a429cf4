"""Speed of queryeval's string metrics against the libraries a user would otherwise call.

    PYTHONPATH=src python bench/bench_strings.py [--pairs 20000] [--repeat 3]

Times BLEU + ROUGE-L + Jaro-Winkler + Jaccard on seeded Cypher/SQL query pairs: queryeval's
batch functions, its per-pair functions, and sacrebleu.sentence_bleu, rouge-score's
RougeScorer(["rougeL"]) and jellyfish.jaro_winkler_similarity called per pair, all in the
same run, and checks that the values agree.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pairs import query_pairs
from queryeval.metrics import bleu, jaccard, jaro_winkler, rouge_l
from queryeval.metrics.text import bleu_many, jaccard_many, jaro_winkler_many, rouge_l_many


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best wall time of `repeat` runs and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def _python_jaccard(p: str, r: str) -> float:
    a, b = set(p.split()), set(r.split())
    return len(a & b) / len(a | b) if a | b else 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of queryeval's timings")
    args = parser.parse_args()
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)

    import jellyfish
    import sacrebleu
    from rouge_score import rouge_scorer

    pairs = query_pairs(args.pairs)
    preds = [p for p, _ in pairs]
    refs = [r for _, r in pairs]
    print(
        f"{len(pairs)} (prediction, reference) query pairs, mean length "
        f"{sum(map(len, preds + refs)) / (2 * len(pairs)):.0f} characters"
    )

    ours: dict[str, tuple[float, list[float]]] = {}
    ours["BLEU"] = _best(lambda: bleu_many(preds, refs), args.repeat)
    ours["ROUGE-L"] = _best(lambda: rouge_l_many(preds, refs), args.repeat)
    ours["Jaro-Winkler"] = _best(lambda: jaro_winkler_many(preds, refs), args.repeat)
    ours["Jaccard"] = _best(lambda: jaccard_many(preds, refs), args.repeat)
    ours_total = sum(t for t, _ in ours.values())
    start_cpu = time.process_time()
    for batch in (bleu_many, rouge_l_many, jaro_winkler_many, jaccard_many):
        batch(preds, refs)
    ours_cpu = time.process_time() - start_cpu
    single = {
        "BLEU": _best(lambda: [bleu(p, r) for p, r in pairs], 1)[0],
        "ROUGE-L": _best(lambda: [rouge_l(p, r) for p, r in pairs], 1)[0],
        "Jaro-Winkler": _best(lambda: [jaro_winkler(p, r) for p, r in pairs], 1)[0],
        "Jaccard": _best(lambda: [jaccard(p, r) for p, r in pairs], 1)[0],
    }

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    theirs = {
        "BLEU": (
            "sacrebleu.sentence_bleu",
            _best(lambda: [sacrebleu.sentence_bleu(p, [r]).score / 100 for p, r in pairs], 1),
        ),
        "ROUGE-L": (
            "rouge_score RougeScorer",
            _best(lambda: [scorer.score(r, p)["rougeL"].fmeasure for p, r in pairs], 1),
        ),
        "Jaro-Winkler": (
            "jellyfish",
            _best(lambda: [jellyfish.jaro_winkler_similarity(p, r) for p, r in pairs], 1),
        ),
        "Jaccard": ("Python sets", _best(lambda: [_python_jaccard(p, r) for p, r in pairs], 1)),
    }

    print(
        f"\n{'metric':<14}{'queryeval batch':>16}{'per pair':>10}  {'reference':<26}"
        f"{'time':>8}{'ratio':>8}{'max |diff|':>12}"
    )
    for name, (t, values) in ours.items():
        label, (t_ref, ref_values) = theirs[name]
        diff = max(abs(a - b) for a, b in zip(values, ref_values, strict=True))
        print(
            f"{name:<14}{t:>15.3f}s{single[name]:>9.3f}s  {label:<26}{t_ref:>7.2f}s"
            f"{t_ref / t:>7.1f}x{diff:>12.1e}"
        )
    ref_total = sum(t for _, (t, _) in theirs.values())
    print(
        f"{'all four':<14}{ours_total:>15.3f}s{sum(single.values()):>9.3f}s  "
        f"{'the references':<26}{ref_total:>7.2f}s{ref_total / ours_total:>7.1f}x"
    )
    print(f"\nqueryeval: best of {args.repeat} runs; per pair and references: one run.")
    print(f"queryeval batch, all four, CPU time of one more run: {ours_cpu:.3f}s")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average (1, 5, 15 min) at the end: {load} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
