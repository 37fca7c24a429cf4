"""The words every report uses for a flagged scorer: too much unscored to give a mean."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def flag_note(entry: Mapping[str, Any]) -> str:
    """What a flagged scorer's summary entry shows instead of its mean ("" when not flagged).

    >>> print(flag_note({"flagged": True, "unscored_share": 0.5, "mean_scored": 1.0,
    ...                  "bounds": [0.5, 1.0]}))  # doctest: +NORMALIZE_WHITESPACE
    50.0% of the cases unscored or in error: no mean (what was scored: 1.000;
    over every case it lies in 0.500-1.000)
    """
    if not entry.get("flagged"):
        return ""
    share = entry.get("unscored_share") or 0.0
    text = f"{share:.1%} of the cases unscored or in error: no mean"
    scored, bounds = entry.get("mean_scored"), entry.get("bounds")
    if scored is not None and bounds:
        text += (
            f" (what was scored: {scored:.3f}; over every case it lies in "
            f"{bounds[0]:.3f}-{bounds[1]:.3f})"
        )
    return text
