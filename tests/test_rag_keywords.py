"""Keyword scoring (seed 004): binary after normalisation; the seed's 0.5 floor only as legacy."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queryeval.metrics import keyword_match, keyword_score
from queryeval.metrics.rag import keyword_score_legacy, normalize_text

# The seed's table: expected keyword "paris" for "What is the capital of France?".
SEED_TABLE = [
    ("The capital of France is Paris", 1.0, 1.0),
    ("France's seat of government is in Paris", 1.0, 1.0),
    ("The capital city is Paris", 1.0, 1.0),
    ("The capital of France is Lyon", 0.0, 0.5),
    ("I don't know", 0.0, 0.5),
]


@pytest.mark.parametrize(("answer", "binary", "legacy"), SEED_TABLE)
def test_seed_keyword_table(answer: str, binary: float, legacy: float) -> None:
    assert keyword_score(answer, ["paris"]) == binary
    assert keyword_score_legacy(answer, ["paris"]) == legacy


def test_legacy_is_the_seeds_expression() -> None:
    # `1.0 if expected.lower() in answer.lower() else 0.5`, substring and all
    assert keyword_score_legacy("Parisian cafés", ["paris"]) == 1.0
    assert keyword_score("Parisian cafés", ["paris"]) == 0.0  # word boundaries in the default


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Bogotá, Colombia!", "bogota colombia"),
        ("  Straße\tund   ÉCOLE ", "strasse und ecole"),  # casefold: ß -> ss
        ("France's capital", "france s capital"),
        ("1,412 m", "1 412 m"),
        ("six-year term", "six year term"),
        ("", ""),
    ],
)
def test_normalize_text(text: str, expected: str) -> None:
    assert normalize_text(text) == expected


def test_keywords_match_across_accents_case_and_punctuation() -> None:
    match = keyword_match("It rises to 1,412 METRES in the Grey Fells.", ["1,412", "grey fells"])
    assert match.all_found and match.fraction == 1.0
    match = keyword_match("The Harbour Party won.", ["harbour party", "19"])
    assert match.found == ("harbour party",) and match.missing == ("19",)
    assert not match.all_found and match.fraction == 0.5


def test_no_usable_keyword_is_no_score() -> None:
    assert keyword_score("anything", []) is None
    assert keyword_score("anything", ["!!"]) is None


@given(st.text(max_size=60))
def test_normalisation_is_idempotent(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once


@given(
    st.lists(st.from_regex(r"[a-z]{2,8}", fullmatch=True), min_size=1, max_size=6),
    st.integers(min_value=0, max_value=5),
)
def test_any_word_of_the_answer_is_found_and_binary(words: list[str], pick: int) -> None:
    answer = " ".join(words)
    keyword = words[pick % len(words)]
    assert keyword_score(answer.upper() + ".", [keyword]) == 1.0
    assert keyword_score(answer, [keyword + "9"]) == 0.0  # no answer word has a digit
