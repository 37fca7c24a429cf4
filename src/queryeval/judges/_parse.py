"""Tolerant reading of a judge's reply: JSON first, then the first JSON object in the text
(fenced code included), then "score: 0.8" or a reply that is only a number. Anything else
is not a score: the caller records it as `unscored`, never as 0."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
# "score: 0.8", "**Score**: 8/10", "score = 80%", "final score is 0.8"
_LABELLED = re.compile(
    rf"\bscore\b[*_`\s]*(?:[:=]|\bis\b|\bof\b)[*_`\s]*(?P<num>{_NUMBER})"
    rf"\s*(?:(?P<pct>%)|/\s*(?P<den>{_NUMBER}))?",
    re.IGNORECASE,
)
_BARE = re.compile(rf"^\s*(?P<num>{_NUMBER})\s*(?:(?P<pct>%)|/\s*(?P<den>{_NUMBER}))?\s*\.?\s*$")
_REASONING_KEYS = ("reasoning", "reason", "explanation", "rationale", "justification")


@dataclass(frozen=True)
class ParsedReply:
    """A score read from a reply, the reasoning given with it, and how it was found."""

    score: float
    reasoning: str
    method: str


def parse_reply(text: str) -> ParsedReply | None:
    """The score in a judge's reply, or None when the reply holds no recognisable score."""
    if not text or not text.strip():
        return None
    obj = _first_json_object(text)
    if obj is not None:
        found = _from_object(obj)
        if found is not None:
            return found
    for pattern, method in ((_BARE, "bare_number"), (_LABELLED, "labelled_number")):
        match = pattern.search(text)
        if match is not None:
            value = _number(match)
            if value is not None:
                return ParsedReply(value, text.strip() if method != "bare_number" else "", method)
    return None


def _first_json_object(text: str) -> dict[str, Any] | None:
    """The first `{...}` in the text that decodes as a JSON object (fenced code included)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            return obj
        start = text.find("{", start + 1)
    return None


def _from_object(obj: dict[str, Any]) -> ParsedReply | None:
    lowered = {str(k).lower(): v for k, v in obj.items()}
    raw = lowered.get("score")
    if isinstance(raw, bool) or raw is None:
        return None
    try:
        value = float(str(raw).strip().rstrip("%")) / (100 if str(raw).strip().endswith("%") else 1)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    reasoning = next((str(lowered[k]) for k in _REASONING_KEYS if k in lowered), "")
    return ParsedReply(value, reasoning, "json")


def _number(match: re.Match[str]) -> float | None:
    value = float(match.group("num"))
    if match.group("pct"):
        return value / 100
    den = match.group("den")
    if den is not None:
        d = float(den)
        return value / d if d > 0 else None
    return value
