"""Synthetic SDMX cases and predictions for the benchmarks (seeded, realistic shapes)."""

from __future__ import annotations

import random
from pathlib import Path

import orjson

INDICATORS = [f"IND_{i:03d}" for i in range(400)]
COUNTRIES = [f"C{i:03d}" for i in range(190)]


def _selection(rng: random.Random, inds: list[str], ctys: list[str]) -> list[dict]:
    return [
        {
            "dataset_id": "IMF.RES:WEO",
            "dimensions": [
                {
                    "dimension_name": "INDICATOR",
                    "values": [{"id": i, "name": f"name {i}"} for i in inds],
                },
                {
                    "dimension_name": "COUNTRY",
                    "values": [{"id": c, "name": f"country {c}"} for c in ctys],
                },
            ],
        }
    ]


def write_suite(folder: Path, n: int, seed: int = 7) -> Path:
    """cases.jsonl, predictions.jsonl and suite.yaml with `n` cases; returns the suite path."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "cases.jsonl").open("wb") as cf, (folder / "predictions.jsonl").open("wb") as pf:
        for k in range(n):
            inds = rng.sample(INDICATORS, rng.randint(1, 3))
            ctys = rng.sample(COUNTRIES, rng.randint(1, 3))
            case = {
                "id": f"case-{k}",
                "name": f"case {k}",
                "tags": [rng.choice(["weo", "ifs", "bop"])],
                "conversation": [
                    {
                        "role": "user",
                        "content": f"question {k}",
                        "target": {"indicator_selection": _selection(rng, inds, ctys)},
                    }
                ],
            }
            p_inds = [i if rng.random() < 0.8 else rng.choice(INDICATORS) for i in inds]
            if rng.random() < 0.3:
                p_inds.append(rng.choice(INDICATORS))
            p_ctys = [c for c in ctys if rng.random() < 0.9]
            cf.write(orjson.dumps(case) + b"\n")
            pf.write(
                orjson.dumps(
                    {"case_id": case["id"], "indicator_selection": _selection(rng, p_inds, p_ctys)}
                )
                + b"\n"
            )
    (folder / "suite.yaml").write_text(
        "name: bench-sdmx\ncases: cases.jsonl\npreset: sdmx_selection\n"
        "systems:\n  - {name: sys, predictions: predictions.jsonl}\nreports: [json]\n"
    )
    return folder / "suite.yaml"
