"""Generate the regression example: 200 SDMX selection cases, a baseline model's answers
(v1), a new version that fixes 15% of the cases (v2), a re-run of v1 that differs only by
noise, and the stored baseline run (`baseline-run/`) that the suite compares with.

Run from the repository root: `python examples/regression/make_example.py`.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
N_CASES = 200
PLANTED = 0.15  # v2 fixes this share of all cases
NOISE = 8  # the re-run breaks this many right answers and fixes as many wrong ones

INDICATORS = {
    "NGDP_RPCH": "Gross domestic product, constant prices, percent change",
    "NGDPD": "Gross domestic product, current prices, U.S. dollars",
    "PPPGDP": "Gross domestic product, current prices, purchasing power parity",
    "PCPIPCH": "Inflation, average consumer prices, percent change",
    "PCPIEPCH": "Inflation, end of period consumer prices, percent change",
    "LUR": "Unemployment rate",
    "LP": "Population",
    "GGXWDG_NGDP": "General government gross debt, percent of GDP",
    "GGR_NGDP": "General government revenue, percent of GDP",
    "BCA_NGDPD": "Current account balance, percent of GDP",
}
COUNTRIES = {
    "USA": "United States",
    "JPN": "Japan",
    "DEU": "Germany",
    "FRA": "France",
    "ITA": "Italy",
    "GBR": "United Kingdom",
    "CAN": "Canada",
    "BRA": "Brazil",
    "ARG": "Argentina",
    "MEX": "Mexico",
    "IND": "India",
    "CHN": "China",
    "ZAF": "South Africa",
    "NGA": "Nigeria",
    "KEN": "Kenya",
    "EGY": "Egypt",
    "TUR": "Türkiye",
    "IDN": "Indonesia",
}


def _selection(indicator: str, countries: list[str]) -> list[dict]:
    return [
        {
            "dataset_id": "IMF.RES:WEO",
            "dimensions": [
                {
                    "dimension_name": "INDICATOR",
                    "values": [{"id": indicator, "name": INDICATORS[indicator]}],
                },
                {
                    "dimension_name": "COUNTRY",
                    "values": [{"id": c, "name": COUNTRIES[c]} for c in countries],
                },
            ],
        }
    ]


def _mistake(rng: random.Random, indicator: str, countries: list[str]) -> list[dict]:
    """A plausible wrong selection: a neighbouring indicator, a missing or an extra country."""
    kind = rng.choice(["indicator", "missing", "extra"])
    if kind == "indicator":
        other = rng.choice([i for i in INDICATORS if i != indicator])
        return _selection(other, countries)
    if kind == "missing" and len(countries) > 1:
        return _selection(indicator, countries[:-1])
    extra = rng.choice([c for c in COUNTRIES if c not in countries])
    return _selection(indicator, [*countries, extra])


def main() -> None:
    rng = random.Random(20260101)
    cases, golds = [], {}
    for i in range(N_CASES):
        indicator = rng.choice(list(INDICATORS))
        countries = rng.sample(list(COUNTRIES), rng.choice([1, 1, 2, 3]))
        names = ", ".join(COUNTRIES[c] for c in countries)
        case_id = f"reg-{i:03d}"
        golds[case_id] = (indicator, countries)
        cases.append(
            {
                "id": case_id,
                "tags": ["weo", indicator.split("_")[0].lower(), f"{len(countries)}-countries"],
                "conversation": [
                    {
                        "role": "user",
                        "content": f"{INDICATORS[indicator]} for {names}?",
                        "target": {"indicator_selection": _selection(indicator, countries)},
                    }
                ],
            }
        )
    ids = list(golds)
    right_v1 = set(rng.sample(ids, int(0.6 * N_CASES)))
    wrong_v1 = [c for c in ids if c not in right_v1]
    fixed_v2 = set(rng.sample(wrong_v1, int(PLANTED * N_CASES)))
    rerun_broken = set(rng.sample(sorted(right_v1), NOISE))
    rerun_fixed = set(rng.sample(wrong_v1, NOISE))
    mistakes = {c: _mistake(rng, *golds[c]) for c in ids}

    def answers(right: set[str]) -> list[dict]:
        return [
            {
                "case_id": c,
                "indicator_selection": _selection(*golds[c]) if c in right else mistakes[c],
                "latency_s": round(rng.uniform(0.4, 2.5), 3),
                "cost": round(rng.uniform(0.0005, 0.004), 5),
            }
            for c in ids
        ]

    versions = {
        "v1": right_v1,
        "v2": right_v1 | fixed_v2,
        "v1-rerun": (right_v1 - rerun_broken) | rerun_fixed,
    }
    with (HERE / "cases.jsonl").open("w") as f:
        f.writelines(json.dumps(c) + "\n" for c in cases)
    for name, right in versions.items():
        with (HERE / "predictions" / f"{name}.jsonl").open("w") as f:
            f.writelines(json.dumps(a) + "\n" for a in answers(right))

    from queryeval.runner import load_suite, run_suite

    out = HERE / "baseline-run"
    shutil.rmtree(out, ignore_errors=True)
    run_suite(load_suite(HERE / "baseline.yaml"), out, progress=False)
    (out / "run.json").unlink()  # holds this machine's absolute paths; not needed to compare


if __name__ == "__main__":
    main()
