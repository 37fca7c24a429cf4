"""Benchmark: the HTML report of a 100,000-case run (target: written in < 10 s, < 60 MB).

Compared in the same run with what a user would otherwise do: dump the case table with
pandas `DataFrame.to_html` (one DOM row per case); both in the same process (one thread),
interleaved rounds, medians. With Chromium present, also measures once how long each file
takes to open and how long a filter takes in the browser (skipped under --quick). The Excel
workbook has its own benchmark, bench/bench_excel.py.

    .venv/bin/python bench/bench_html.py [--cases 100000] [--rounds 3] [--quick]
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _harness as h
from queryeval.cases import Case
from queryeval.reports._html import write_html
from queryeval.stats import summarize

WORDS = [
    *[
        "revenue",
        "customers",
        "orders",
        "region",
        "month",
        "average",
        "total",
        "count",
        "top",
        "distinct",
        "products",
    ],
    *[
        "invoices",
        "returned",
        "shipped",
        "europe",
        "quarter",
        "growth",
        "churn",
        "segment",
        "price",
        "discount",
    ],
]
OPEN_LIMIT_S = 90  # a page that takes longer to open counts as unusable
KINDS = ("ok",) * 8 + ("syntax", "schema", "timeout")


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def synthetic_run(n: int, seed: int = 0) -> tuple[list[Case], list[dict[str, Any]]]:
    """n text-to-SQL cases and one system's records: an engine scorer and a judge."""
    rng = random.Random(seed)
    cases, records = [], []
    for i in range(n):
        table = rng.choice(["orders", "customers", "invoices", "products"])
        gold = (
            f"SELECT region, SUM(amount) AS total FROM {table} WHERE month >= '2024-0"
            f"{rng.randint(1, 9)}' AND status = 'shipped' GROUP BY region ORDER BY total DESC "
            f"LIMIT {rng.randint(3, 20)}"
        )
        right = rng.random() < 0.7
        pred = gold if right else gold.replace("DESC", "ASC").replace("shipped", "returned")
        kind = "ok" if right else rng.choice(KINDS)
        cases.append(
            Case.model_validate(
                {
                    "id": f"sql-{i:06d}",
                    "tags": [table, rng.choice(["easy", "medium", "hard"])],
                    "conversation": [
                        {
                            "content": f"What is the {_sentence(rng, 10)}?",
                            "target": {"query": {"language": "sql", "text": gold}},
                        }
                    ],
                }
            )
        )
        value = 1.0 if right else round(rng.random() * 0.6, 3)
        judge = 0.9 if right else 0.2
        records.append(
            {
                "system": "sql-agent",
                "case_id": f"sql-{i:06d}",
                "output": {
                    "attempts": [
                        {
                            "query": pred,
                            "execution": {"kind": kind, "message": "" if kind == "ok" else kind},
                            "latency_s": round(rng.uniform(0.3, 6.0), 3),
                        }
                    ]
                },
                "scores": {
                    "execution_match": {
                        "value": value,
                        "status": "ok",
                        "passed": right,
                        "details": {
                            "metrics": {"row_f1": value, "row_recall": value},
                            "execution": {"kind": kind},
                        },
                    },
                    "judge": {
                        "value": judge,
                        "status": "ok",
                        "passed": right,
                        "details": {
                            "reasoning": f"The query {'matches' if right else 'differs from'} "
                            f"the reference: {_sentence(rng, 30)}."
                        },
                    },
                },
                "passed": right,
                "error": None,
                "latency_s": round(rng.uniform(0.3, 6.0), 3),
                "cost": round(rng.uniform(0.0005, 0.01), 5),
            }
        )
    return cases, records


def _pandas_table(path: Path, cases: list[Case], records: list[dict[str, Any]]) -> None:
    import pandas as pd

    questions = {c.id: c.question for c in cases}
    golds = {c.id: c.target.query.text for c in cases if c.target and c.target.query}  # type: ignore[union-attr]
    frame = pd.DataFrame(
        {
            "case": [r["case_id"] for r in records],
            "question": [questions[r["case_id"]] for r in records],
            "gold": [golds[r["case_id"]] for r in records],
            "prediction": [r["output"]["attempts"][-1]["query"] for r in records],
            "execution_match": [r["scores"]["execution_match"]["value"] for r in records],
            "judge": [r["scores"]["judge"]["value"] for r in records],
            "reasoning": [r["scores"]["judge"]["details"]["reasoning"] for r in records],
            "latency": [r["latency_s"] for r in records],
        }
    )
    path.write_text(frame.to_html(index=False), encoding="utf-8")


def _browser(paths: dict[str, Path]) -> dict[str, dict[str, float]]:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    args = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
    out: dict[str, dict[str, float]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=args)
        for name, path in paths.items():
            page = browser.new_page()
            t = time.perf_counter()
            try:
                page.goto(path.as_uri(), timeout=OPEN_LIMIT_S * 1000)
                if name == "queryeval":
                    page.wait_for_selector("body[data-ready='1']", timeout=OPEN_LIMIT_S * 1000)
            except PlaywrightTimeout:
                out[name] = {"open_s": float("inf")}
                page.close()
                continue
            figures = {"open_s": time.perf_counter() - t}
            if name == "queryeval":
                t = time.perf_counter()
                page.fill("#q", "returned")
                page.wait_for_function(
                    "() => document.getElementById('count').textContent.includes(' of ')",
                    timeout=120_000,
                )
                figures["filter_s"] = time.perf_counter() - t - 0.15  # minus the debounce
            out[name] = figures
            page.close()
        browser.close()
    return out


def main() -> int:
    args = h.options(
        __doc__.splitlines()[0],
        full={"cases": 100_000, "rounds": 3},
        quick={"cases": 10_000, "rounds": 3},
    )
    print(h.machine())
    t = time.perf_counter()
    cases, records = synthetic_run(args.cases)
    print(f"synthetic run: {args.cases:,} cases in {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    labels: dict[str, Any] = {"execution_match": None, "judge": None}
    summary = summarize("bench", cases, records, labels, ["sql-agent"])
    print(f"summary (not part of the report): {time.perf_counter() - t:.1f} s")
    ours, theirs = "queryeval HTML report", "pandas DataFrame.to_html"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        report, naive = folder / "report.html", folder / "pandas.html"
        timings = h.interleaved(
            [
                h.Side(ours, lambda: write_html(report, summary, cases, records, {}), 1),
                h.Side(theirs, lambda: _pandas_table(naive, cases, records), 1),
            ],
            args.rounds,
        )
        print(h.table(timings, reference=theirs))
        size, naive_size = report.stat().st_size / 1e6, naive.stat().st_size / 1e6
        q, p = timings[ours], timings[theirs]
        ok = q.median < 10 * args.cases / 100_000 and size < 60 * args.cases / 100_000
        h.record(
            "html",
            f"HTML report, {args.cases:,} cases",
            f"{q.median:.2f} s, {size:.1f} MB",
            against=f"pandas to_html {p.median:.2f} s, {naive_size:.1f} MB",
            note=f"{h.ratio(q, p)} pandas' time; median of {args.rounds}",
        )
        if not args.quick and Path("/usr/bin/chromium").exists():
            figures = _browser({"queryeval": report, "pandas": naive})
            qb, pb = figures["queryeval"], figures["pandas"]
            naive_open = (
                f"{pb['open_s']:.1f} s"
                if pb["open_s"] != float("inf")
                else f"did not open within {OPEN_LIMIT_S} s"
            )
            h.record(
                "html",
                "HTML report in Chromium (one measurement)",
                f"opens in {qb['open_s']:.1f} s, filters {args.cases:,} rows in "
                f"{qb.get('filter_s', float('nan')):.2f} s",
                against=f"pandas table: {naive_open}",
            )
    print("PASS" if ok else "FAIL: the report misses its target (scaled to the case count)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
