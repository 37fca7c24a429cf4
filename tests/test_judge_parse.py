"""Reading a score out of a judge's reply: JSON, embedded JSON, labelled or bare numbers."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queryeval.judges import parse_reply


@pytest.mark.parametrize(
    ("reply", "score", "method"),
    [
        ('{"reasoning": "same tables", "score": 0.8}', 0.8, "json"),
        ('{"Score": "0.6", "explanation": "partly"}', 0.6, "json"),
        ('Here you go:\n```json\n{"reasoning": "ok", "score": 1}\n```', 1.0, "json"),
        ('I think {"score": 0.4, "reasoning": "gaps"} is fair.', 0.4, "json"),
        ('{"score": "80%"}', 0.8, "json"),
        ("The queries differ in the filter.\nScore: 0.7", 0.7, "labelled_number"),
        ("**Score:** 8/10 because the grouping is wrong", 0.8, "labelled_number"),
        ("final score is 0.95", 0.95, "labelled_number"),
        ("score = 45%", 0.45, "labelled_number"),
        ("0.6", 0.6, "bare_number"),
        ("  1.0.\n", 1.0, "bare_number"),
        ("1", 1.0, "bare_number"),
    ],
)
def test_recognised_replies(reply: str, score: float, method: str) -> None:
    parsed = parse_reply(reply)
    assert parsed is not None
    assert parsed.score == pytest.approx(score)
    assert parsed.method == method


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   ",
        "I cannot evaluate this query.",
        "The query returns 3 rows instead of 5.",  # numbers without a score label: not a score
        '{"reasoning": "no score key"}',
        '{"score": true}',
        '{"score": "high"}',
        "score: high",
        "<html>502 Bad Gateway</html>",
    ],
)
def test_unrecognised_replies_are_none(reply: str) -> None:
    assert parse_reply(reply) is None


def test_reasoning_is_kept_from_json() -> None:
    parsed = parse_reply('{"reasoning": "wrong table AppTraces", "score": 0.6}')
    assert parsed is not None and parsed.reasoning == "wrong table AppTraces"


def test_first_json_object_wins() -> None:
    parsed = parse_reply('{"score": 0.2} and later {"score": 0.9}')
    assert parsed is not None and parsed.score == pytest.approx(0.2)


@given(st.floats(min_value=0, max_value=1, allow_nan=False), st.text(max_size=50))
def test_json_verdicts_round_trip(score: float, reasoning: str) -> None:
    parsed = parse_reply(json.dumps({"reasoning": reasoning, "score": score}))
    assert parsed is not None
    assert parsed.score == score
    assert parsed.reasoning == reasoning
