"""One (system, case) scored: every scorer's `score_case` on the output, and its Record
(the one step of `runner._work.Worker`'s loop)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import orjson

from queryeval.cases import Attempt, Case, Output, Score
from queryeval.log import Record, ScoreRecord, json_default, without_surrogates
from queryeval.scorers import Scorer, ScoringContext, ascore_case, case_passed, score_case


class Scored(NamedTuple):
    """One scored (system, case): its record as stored, and the scores behind it."""

    record: Record
    scores: dict[str, Score]


def _score_json(score: Score) -> ScoreRecord:
    """A score as stored: what is set, and always its status (details are JSON already)."""
    out: ScoreRecord = {"value": score.value, "status": score.status}
    if score.passed is not None:
        out["passed"] = score.passed
    if score.details:
        out["details"] = score.details
    if score.explanation:
        out["explanation"] = score.explanation
    return out


_new = tuple.__new__  # Scored without its generated __new__: half the cost, per item

_PLAIN_LIST_FIELDS = frozenset({"indicator_selection"})  # lists of plain validated dicts
_ATTEMPT_FIELDS = frozenset(Attempt.model_fields)


def output_json(output: Output) -> bytes | str:
    """An output as stored: its JSON without default values. The common shorthand (one
    attempt that set one text field, or an indicator selection, and nothing else) is written
    by orjson, which gives pydantic's bytes three times faster (tested); anything else is
    serialised by pydantic's core."""
    if len(output.attempts) == 1 and output.model_fields_set == {"attempts"}:
        attempt = output.attempts[0]
        # the declared fields set (extra keys count in model_fields_set even once removed)
        fields = attempt.model_fields_set & _ATTEMPT_FIELDS
        if len(fields) == 1 and not attempt.__pydantic_extra__:
            (name,) = fields
            value = getattr(attempt, name)
            kind = type(value)
            if kind is str or (kind is list and name in _PLAIN_LIST_FIELDS):
                try:
                    return orjson.dumps({"attempts": [{name: value}]})
                except orjson.JSONEncodeError:
                    return _readable_json(output)
    try:
        return output.model_dump_json(exclude_defaults=True)
    except ValueError:  # pydantic's serialisation error: a text no UTF-8 can hold
        return _readable_json(output)


def _readable_json(output: Output) -> bytes:
    """The output's JSON with every unpaired UTF-16 surrogate (what a JSON escape such as
    `"\\ud800"` decodes to; the output is scored `invalid_output`) stored as U+FFFD: UTF-8
    has no form for it, and results.jsonl must stay readable."""
    data = without_surrogates(output.model_dump(mode="json", exclude_defaults=True))
    return orjson.dumps(data, default=json_default, option=orjson.OPT_SERIALIZE_NUMPY)


def make_record(
    system: str,
    case: Case,
    output: Output,
    scores: Mapping[str, Score],
    scorers: Mapping[str, Scorer],
) -> Record:
    """The record of one scored (system, case), as results.jsonl stores it."""
    cost = output.cost
    if cost is None:
        costs = [a.cost for a in output.attempts if a.cost is not None]
        cost = sum(costs) if costs else None
    latency = output.latency_s
    if latency is None:  # saved predictions record their latencies per attempt
        times = [a.latency_s for a in output.attempts if a.latency_s is not None]
        latency = sum(times) if times else None
    return {
        "system": system,
        "case_id": case.id,
        "output": orjson.Fragment(output_json(output)),
        "scores": {k: _score_json(s) for k, s in scores.items()},
        "passed": case_passed(scores, scorers),
        "error": output.error,
        "latency_s": latency,
        "cost": cost,
    }


def score_output(
    system: str, case: Case, output: Output, scorers: Mapping[str, Scorer], ctx: ScoringContext
) -> Scored:
    """Every scorer's score of `output` for `case` (`score_case`: the scoring rule first),
    and the record."""
    scores = {label: score_case(s, case, output, ctx) for label, s in scorers.items()}
    return _new(Scored, (make_record(system, case, output, scores, scorers), scores))


async def ascore_output(
    system: str, case: Case, output: Output, scorers: Mapping[str, Scorer], ctx: ScoringContext
) -> Scored:
    """`score_output` on the event loop: the scorers of one output run concurrently
    (coroutine scorers awaited, blocking ones in threads)."""
    import asyncio

    results = await asyncio.gather(*(ascore_case(s, case, output, ctx) for s in scorers.values()))
    scores = dict(zip(scorers, results, strict=True))
    return Scored(make_record(system, case, output, scores, scorers), scores)
