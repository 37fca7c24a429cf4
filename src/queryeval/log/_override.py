"""A score overridden by a human's verdict, as the runner's `--review` and the viewer both
store it: the verdict's value, the original score kept under `details.review.original`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def overridden_score(
    score: Mapping[str, Any] | None, verdict: bool, note: str, reviewer: str, **extra: Any
) -> dict[str, Any]:
    """`score` overridden by a human's `verdict` (`extra`: more fields of the review, after
    the reviewer); overriding an overridden score keeps the first original.

    >>> s = overridden_score({"value": 0.0, "passed": False, "details": {"failure": "x"}},
    ...                      True, "gold is wrong", "ann")
    >>> s["value"], s["explanation"], s["details"]["review"]["original"]["failure"]
    (1.0, 'overridden by ann: gold is wrong', 'x')
    >>> overridden_score(s, False, "", "")["details"]["review"]["original"]["value"]
    0.0
    """
    score = dict(score or {})
    details = dict(score.get("details") or {})
    previous = details.pop("review", None)
    original = (previous or {}).get("original") or {
        "status": score.get("status", "ok"),
        "value": score.get("value"),
        "passed": score.get("passed"),
        **({"failure": details["failure"]} if details.get("failure") else {}),
        **({"explanation": score["explanation"]} if score.get("explanation") else {}),
    }
    details.pop("failure", None)  # the human's verdict stands; the reason stays in `original`
    details["review"] = {
        "verdict": "pass" if verdict else "fail",
        "note": note,
        "reviewer": reviewer,
        **extra,
        "original": original,
    }
    by = f" by {reviewer}" if reviewer else ""
    return {
        "value": 1.0 if verdict else 0.0,
        "status": "ok",
        "passed": verdict,
        "details": details,
        "explanation": f"overridden{by}: {note}" if note else f"overridden{by}",
    }
