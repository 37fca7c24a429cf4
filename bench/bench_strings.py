"""Speed of queryeval's string metrics against the libraries a user would otherwise call.

    .venv/bin/python bench/bench_strings.py [--pairs 20000] [--rounds 3] [--quick]

Times BLEU, ROUGE-L, Jaro-Winkler and Jaccard on seeded Cypher/SQL query pairs three ways,
in the same process (one core, one thread each) and interleaved rounds, medians reported:
queryeval's batch functions (`bleu_many`, ...), its per-pair functions (what a scorer calls,
one case at a time), and the references called per pair (sacrebleu.sentence_bleu,
rouge-score's RougeScorer(["rougeL"]), jellyfish.jaro_winkler_similarity, Python sets). The
values are checked to agree. queryeval's caches are emptied before every round, so that each
round scores texts it has not seen (a warm cache would flatter the later rounds).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as h
from _pairs import query_pairs
from queryeval.metrics import bleu, jaccard, jaro_winkler, rouge_l
from queryeval.metrics.text import bleu_many, jaccard_many, jaro_winkler_many, rouge_l_many

METRICS = ("BLEU", "ROUGE-L", "Jaro-Winkler", "Jaccard")
REFERENCES = {
    "BLEU": "sacrebleu.sentence_bleu",
    "ROUGE-L": "rouge-score RougeScorer",
    "Jaro-Winkler": "jellyfish",
    "Jaccard": "Python sets",
}


def clear_metric_caches() -> None:
    """Empty every functools cache in queryeval.metrics (13a tokens, reference n-gram
    counts): each round then sees the texts for the first time, as a run scoring each pair
    once does. Without this, rounds after the first would be answered from the caches."""
    for name, module in list(sys.modules.items()):
        if name.startswith("queryeval.metrics"):
            for obj in vars(module).values():
                clear = getattr(obj, "cache_clear", None)
                if callable(clear):
                    clear()


def _python_jaccard(p: str, r: str) -> float:
    a, b = set(p.split()), set(r.split())
    return len(a & b) / len(a | b) if a | b else 1.0


def main() -> None:
    args = h.options(
        __doc__.splitlines()[0],
        full={"pairs": 20_000, "rounds": 3},
        quick={"pairs": 2_000, "rounds": 3},
    )
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)

    import jellyfish
    import sacrebleu
    from rouge_score import rouge_scorer

    pairs = query_pairs(args.pairs)
    preds = [p for p, _ in pairs]
    refs = [r for _, r in pairs]
    print(
        f"{len(pairs):,} (prediction, reference) query pairs, mean length "
        f"{sum(map(len, preds + refs)) / (2 * len(pairs)):.0f} characters; {h.machine()}"
    )
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    work: dict[str, dict[str, Callable[[], list[float]]]] = {
        "batch": {
            "BLEU": lambda: bleu_many(preds, refs),
            "ROUGE-L": lambda: rouge_l_many(preds, refs),
            "Jaro-Winkler": lambda: jaro_winkler_many(preds, refs),
            "Jaccard": lambda: jaccard_many(preds, refs),
        },
        "per pair": {
            "BLEU": lambda: [bleu(p, r) for p, r in pairs],
            "ROUGE-L": lambda: [rouge_l(p, r) for p, r in pairs],
            "Jaro-Winkler": lambda: [jaro_winkler(p, r) for p, r in pairs],
            "Jaccard": lambda: [jaccard(p, r) for p, r in pairs],
        },
        "reference": {
            "BLEU": lambda: [sacrebleu.sentence_bleu(p, [r]).score / 100 for p, r in pairs],
            "ROUGE-L": lambda: [scorer.score(r, p)["rougeL"].fmeasure for p, r in pairs],
            "Jaro-Winkler": lambda: [jellyfish.jaro_winkler_similarity(p, r) for p, r in pairs],
            "Jaccard": lambda: [_python_jaccard(p, r) for p, r in pairs],
        },
    }
    values: dict[tuple[str, str], list[float]] = {}

    def side(kind: str, metric: str) -> h.Side:
        def run() -> float:
            clear_metric_caches()
            start = time.perf_counter()
            values[kind, metric] = work[kind][metric]()
            return time.perf_counter() - start

        return h.Side(f"{metric} {kind}", run, cores=1)

    sides = [side(kind, m) for m in METRICS for kind in work]
    timings = h.interleaved(sides, args.rounds, progress=False)
    print(h.table(timings))

    def med(kind: str, metric: str) -> float:
        return timings[f"{metric} {kind}"].median

    print(
        f"\n{'metric':<14}{'batch':>9}{'per pair':>10}  {'reference':<26}{'time':>8}"
        f"{'ref/batch':>10}{'ref/pair':>9}{'max |diff|':>12}"
    )
    for m in METRICS:
        diff = max(
            abs(a - b) for a, b in zip(values["batch", m], values["reference", m], strict=True)
        )
        print(
            f"{m:<14}{med('batch', m):>8.3f}s{med('per pair', m):>9.3f}s  {REFERENCES[m]:<26}"
            f"{med('reference', m):>7.2f}s{med('reference', m) / med('batch', m):>9.1f}x"
            f"{med('reference', m) / med('per pair', m):>8.2f}x{diff:>12.1e}"
        )
    total: dict[str, float] = {k: sum(med(k, m) for m in METRICS) for k in work}
    print(
        f"{'all four':<14}{total['batch']:>8.3f}s{total['per pair']:>9.3f}s  "
        f"{'the references':<26}{total['reference']:>7.2f}s"
        f"{total['reference'] / total['batch']:>9.1f}x"
        f"{total['reference'] / total['per pair']:>8.2f}x"
    )
    print(f"medians of {args.rounds} interleaved rounds; one thread each, same process")
    rounds = f"median of {args.rounds}, 1 core each"
    h.record(
        "strings",
        f"BLEU+ROUGE-L+Jaro-Winkler+Jaccard, {args.pairs:,} pairs, batch",
        f"{total['batch']:.2f} s",
        against=f"the references per pair {total['reference']:.2f} s",
        note=f"{total['reference'] / total['batch']:.1f}x faster; {rounds}",
    )
    bleu_ratio = med("reference", "BLEU") / med("per pair", "BLEU")
    h.record(
        "strings",
        f"bleu() per pair, {args.pairs:,} pairs",
        f"{med('per pair', 'BLEU'):.2f} s",
        against=f"sacrebleu.sentence_bleu {med('reference', 'BLEU'):.2f} s",
        note=f"sacreBLEU takes {bleu_ratio:.2f}x bleu()'s time; {rounds}",
    )


if __name__ == "__main__":
    main()
