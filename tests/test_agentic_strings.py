"""String metrics against their reference implementations: sacreBLEU, rouge-score, jellyfish."""

from __future__ import annotations

import itertools
import logging
import random
from collections import Counter

import jellyfish
import pytest
import regex
import sacrebleu
from rouge_score import rouge_scorer
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from queryeval.metrics import bleu, corpus_bleu, exact_match, jaccard, jaro, jaro_winkler, rouge_l
from queryeval.metrics.text import (
    bleu_many,
    jaccard_many,
    jaro_winkler_many,
    rouge_l_many,
    rouge_l_score,
    rouge_l_scores,
    tokenize_13a,
    tokenize_13a_many,
)
from queryeval.metrics.text._ngrams import clipped_matches

logging.getLogger("sacrebleu").setLevel(logging.ERROR)
TOL = 1e-9

_LABELS = ["Person", "Movie", "Genre", "User", "Company", "City"]
_RELS = ["ACTED_IN", "DIRECTED", "RATED", "WORKS_AT", "LIVES_IN"]
_PROPS = ["name", "title", "released", "rating", "born", "imdbRating"]
_VALUES = ["'Tom Hanks'", "1999", "3.5", "$name", "10", "'Sci-Fi'", "1,000", "-2", "2-3"]


def _query(rng: random.Random) -> str:
    a, b = rng.sample(_LABELS, 2)
    p, q = rng.sample(_PROPS, 2)
    if rng.random() < 0.2:
        return (
            f"SELECT {p}, SUM({q}) AS total FROM t{rng.randint(1, 9)} WHERE {p} >= "
            f"{rng.choice(_VALUES)} GROUP BY {p} ORDER BY total DESC LIMIT {rng.randint(1, 9)};"
        )
    parts = [
        f"MATCH (n:{a})-[:{rng.choice(_RELS)}]->(m:{b})",
        f"WHERE n.{p} {rng.choice(['=', '>', '<>', 'CONTAINS'])} {rng.choice(_VALUES)}",
        rng.choice(
            [f"RETURN n.{p}, m.{q}", f"RETURN collect(m.{q})[..5] AS xs", "RETURN count(*)"]
        ),
    ]
    if rng.random() < 0.4:
        parts.append(f"ORDER BY m.{q} DESC LIMIT {rng.randint(1, 20)}")
    return rng.choice([" ", "\n"]).join(parts)


def _edit(rng: random.Random, text: str) -> str:
    words = text.split(" ")
    for _ in range(rng.randint(0, 4)):
        i = rng.randrange(len(words))
        if rng.random() < 0.5:
            words[i] = rng.choice(_PROPS + _VALUES + ["DISTINCT", "..", ".,", "&amp;"])
        elif len(words) > 1:
            del words[i]
    return " ".join(words)


def _unicode(rng: random.Random) -> str:
    pools = [(32, 127), (0xA0, 0x2FF), (0x370, 0x3FF), (0x400, 0x4FF), (0x4E00, 0x4E80), (0, 32)]
    out = []
    for _ in range(rng.randint(0, 40)):
        lo, hi = rng.choice(pools)
        out.append(chr(rng.randrange(lo, hi)))
    return "".join(out)


def _pairs(n: int = 2000, seed: int = 20240601) -> list[tuple[str, str]]:
    """Seeded pairs: 3/4 Cypher/SQL queries with an edited prediction, 1/4 random unicode."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 4 == 3:
            out.append((_unicode(rng), _unicode(rng)))
        else:
            ref = _query(rng)
            out.append((_edit(rng, ref) if rng.random() < 0.85 else _query(rng), ref))
    return out


PAIRS = _pairs()
PREDS = [p for p, _ in PAIRS]
REFS = [r for _, r in PAIRS]


# --- BLEU --------------------------------------------------------------------------------------


def test_bleu_equals_sacrebleu_sentence_bleu_on_2000_pairs() -> None:
    ours = [bleu(p, r) for p, r in PAIRS]
    theirs = [sacrebleu.sentence_bleu(p, [r]).score / 100 for p, r in PAIRS]
    assert max(abs(a - b) for a, b in zip(ours, theirs, strict=True)) <= TOL
    assert sum(0 < v < 1 for v in ours) > 1000  # the pairs exercise partial matches


def test_bleu_many_equals_bleu_and_sacrebleu() -> None:
    many = bleu_many(PREDS, REFS)
    theirs = [sacrebleu.sentence_bleu(p, [r]).score / 100 for p, r in PAIRS]
    assert max(abs(a - b) for a, b in zip(many, theirs, strict=True)) <= TOL
    # Repeated references and predictions go through the de-duplicating path.
    doubled = bleu_many(PREDS[:300] * 2, REFS[:300] * 2)
    assert doubled == many[:300] * 2


@pytest.mark.parametrize("smooth", ["exp", "floor", "add-k", "none"])
@pytest.mark.parametrize("tokenize", ["13a", "none", "char", "intl"])
def test_bleu_options_equal_sacrebleu(smooth: str, tokenize: str) -> None:
    sample = PAIRS[::10]
    for lowercase, effective in [(False, True), (True, False)]:
        metric = sacrebleu.BLEU(
            smooth_method=smooth,
            tokenize=tokenize,
            lowercase=lowercase,
            effective_order=effective,
        )
        options = {
            "smooth_method": smooth,
            "tokenize": tokenize,
            "lowercase": lowercase,
            "effective_order": effective,
        }
        many = bleu_many([p for p, _ in sample], [r for _, r in sample], **options)  # type: ignore[arg-type]
        for (p, r), m in zip(sample, many, strict=True):
            expected = metric.sentence_score(p, [r]).score / 100
            assert abs(bleu(p, r, **options) - expected) <= TOL  # type: ignore[arg-type]
            assert abs(m - expected) <= TOL


def test_bleu_smooth_value_and_max_order_equal_sacrebleu() -> None:
    for p, r in PAIRS[:200]:
        expected = sacrebleu.BLEU(
            smooth_method="floor", smooth_value=0.3, max_ngram_order=2, effective_order=True
        ).sentence_score(p, [r])
        got = bleu(p, r, smooth_method="floor", smooth_value=0.3, max_ngram_order=2)
        assert abs(got - expected.score / 100) <= TOL


def test_corpus_bleu_equals_sacrebleu() -> None:
    for smooth in ["exp", "none"]:
        expected = sacrebleu.corpus_bleu(PREDS, [REFS], smooth_method=smooth).score / 100
        assert abs(corpus_bleu(PREDS, REFS, smooth_method=smooth) - expected) <= TOL
    assert 0 < corpus_bleu(PREDS, REFS) < 1


def test_bleu_multiple_references_equal_sacrebleu() -> None:
    for i in range(0, 300, 3):
        refs = [REFS[i], REFS[i + 1], PREDS[i + 2]]
        expected = sacrebleu.sentence_bleu(PREDS[i], refs).score / 100
        assert abs(bleu(PREDS[i], refs) - expected) <= TOL
        assert abs(bleu_many([PREDS[i]], [refs])[0] - expected) <= TOL
    streams = [REFS[:100], PREDS[1:101]]
    multi = [list(t) for t in zip(*streams, strict=True)]
    expected = sacrebleu.corpus_bleu(PREDS[:100], streams).score / 100
    assert abs(corpus_bleu(PREDS[:100], multi) - expected) <= TOL


def test_bleu_edge_cases() -> None:
    assert bleu("", "") == sacrebleu.sentence_bleu("", [""]).score / 100 == 0.0
    assert bleu("MATCH (n) RETURN n", "MATCH (n) RETURN n") == 1.0  # sacreBLEU: 1 + 4e-16
    assert bleu("a", "b") == 0.0
    with pytest.raises(ValueError, match="smooth_method"):
        bleu("a", "a", smooth_method="nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tokenizer"):
        bleu("a", "a", tokenize="nope")
    with pytest.raises(ValueError, match="reference"):
        bleu("a", [])
    with pytest.raises(ValueError, match="2 predictions but 1 references"):
        bleu_many(["a", "b"], ["a"])


def _sacre_13a(line: str) -> tuple[str, ...]:
    return tuple(Tokenizer13a.__call__.__wrapped__(_SACRE, line).split())  # type: ignore[attr-defined]


_SACRE = Tokenizer13a()


def test_13a_tokenizer_equals_sacrebleu_on_every_short_string() -> None:
    """Every string of up to 5 characters over the characters that steer 13a."""
    alphabet = "a1.,- (\n&"
    lines = ["".join(t) for n in range(6) for t in itertools.product(alphabet, repeat=n)]
    expected = [_sacre_13a(s) for s in lines]
    assert tokenize_13a_many(lines) == expected
    assert [tokenize_13a.__wrapped__(s) for s in lines] == expected


def test_13a_tokenizer_equals_sacrebleu_on_random_lines() -> None:
    rng = random.Random(7)
    lines = [*PREDS, *REFS]
    lines += [
        "".join(rng.choice("ab12.,.-;&<>(\t\x00\x01é ") for _ in range(30)) for _ in range(500)
    ]
    lines += ["&quot;x&amp;&lt;y&gt; <skipped> a-\nb\nc"]
    assert tokenize_13a_many(lines) == [_sacre_13a(s) for s in lines]


# --- ROUGE-L ------------------------------------------------------------------------------------


def test_rouge_l_equals_rouge_score_on_2000_pairs() -> None:
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    batch = rouge_l_scores(PREDS, REFS)
    for (p, r), b in zip(PAIRS, batch, strict=True):
        expected = scorer.score(r, p)["rougeL"]
        ours = rouge_l_score(p, r)
        for got in (ours, b):
            assert abs(got.precision - expected.precision) <= TOL
            assert abs(got.recall - expected.recall) <= TOL
            assert abs(got.fmeasure - expected.fmeasure) <= TOL
    assert rouge_l_many(PREDS, REFS) == [s.fmeasure for s in batch]
    assert rouge_l_many(PREDS, REFS, measure="recall") == [s.recall for s in batch]


def test_rouge_l_hand_computed_and_edge_cases() -> None:
    # tokens p: match n person return n name; r: match n person where n age return n name
    p, r = "MATCH (n:Person) RETURN n.name", "MATCH (n:Person) WHERE n.age>3 RETURN n.name"
    # LCS = 6 of 6 predicted and 10 reference tokens (where, n, age, 3 are missing)
    assert rouge_l(p, r, measure="precision") == 1.0
    assert rouge_l(p, r, measure="recall") == pytest.approx(0.6)
    assert rouge_l(p, r) == pytest.approx(2 * 0.6 / 1.6)
    assert rouge_l("", "") == 0.0  # rouge-score's convention: no tokens, no credit
    assert rouge_l("()", "a") == 0.0
    with pytest.raises(ValueError, match="measure"):
        rouge_l("a", "a", measure="nope")  # type: ignore[arg-type]
    # The batch path falls back when a text holds its separator character.
    assert rouge_l_many(["a\x00b"], ["a b"]) == [rouge_l("a\x00b", "a b")] == [1.0]


# --- Jaro, Jaro-Winkler ---------------------------------------------------------------------------


def _graphemes_are_code_points(s: str) -> bool:
    return len(regex.findall(r"\X", s)) == len(s)


def test_jaro_and_jaro_winkler_equal_jellyfish() -> None:
    """jellyfish counts grapheme clusters, rapidfuzz code points: they agree wherever each
    code point is its own grapheme, which is checked on every pair where that holds."""
    compared = 0
    many = jaro_winkler_many(PREDS, REFS)
    for (p, r), m in zip(PAIRS, many, strict=True):
        assert m == jaro_winkler(p, r)
        if not (p or r) or not (_graphemes_are_code_points(p) and _graphemes_are_code_points(r)):
            continue
        compared += 1
        assert abs(jaro(p, r) - jellyfish.jaro_similarity(p, r)) <= TOL
        assert abs(jaro_winkler(p, r) - jellyfish.jaro_winkler_similarity(p, r)) <= TOL
    assert compared > 1900


def test_jaro_winkler_textbook_values_and_policies() -> None:
    assert jaro("MARTHA", "MARHTA") == pytest.approx(17 / 18)  # m=6, t=1
    assert jaro_winkler("MARTHA", "MARHTA") == pytest.approx(17 / 18 + 3 * 0.1 * (1 / 18))
    assert jaro_winkler("DIXON", "DICKSONX") == pytest.approx(0.8133333333333332)
    assert jaro("", "") == jaro_winkler("", "") == 1.0  # identical (jellyfish says 0.0)
    assert jaro("a", "") == 0.0
    # Code points, not graphemes: 'K\u0603K' has 3 code points (jellyfish sees 2 graphemes).
    assert jaro("K\u0603K", "K") == pytest.approx((1 / 3 + 1 + 1) / 3)


# --- Jaccard, exact match -----------------------------------------------------------------------


def test_jaccard_token_sets() -> None:
    assert jaccard("MATCH (n) RETURN n", "MATCH (m) RETURN m") == pytest.approx(2 / 6)
    assert jaccard("a a b", "a b b") == 1.0  # sets, not multisets
    assert jaccard("", "") == 1.0  # both empty: identical
    assert jaccard("a", "") == 0.0
    assert jaccard("A b", "a B", lowercase=True) == 1.0
    assert jaccard("n.name", "n . name", tokens="13a") == 1.0
    assert jaccard("ab", "ba", tokens="chars") == 1.0
    assert jaccard("Hello, World", "hello world", tokens="rouge") == 1.0
    with pytest.raises(ValueError, match="Jaccard tokens"):
        jaccard("a", "b", tokens="nope")  # type: ignore[arg-type]
    expected = [
        len(set(p.split()) & set(r.split())) / len(set(p.split()) | set(r.split()))
        if p.split() or r.split()
        else 1.0
        for p, r in PAIRS
    ]
    assert jaccard_many(PREDS, REFS) == pytest.approx(expected, abs=TOL)


def test_exact_match_options() -> None:
    assert exact_match("MATCH (n) RETURN n", "MATCH (n) RETURN n") == 1.0
    assert exact_match("MATCH (n) RETURN n", "MATCH (n)  RETURN n") == 0.0
    assert exact_match("MATCH (n)\nRETURN n ", "MATCH (n) RETURN n", normalize_whitespace=True)
    assert exact_match("match (n)", "MATCH (n)", ignore_case=True) == 1.0
    assert exact_match("match (n)", "MATCH (n)") == 0.0


def test_all_string_metrics_stay_in_unit_interval() -> None:
    for p, r in PAIRS[:500]:
        for value in (bleu(p, r), rouge_l(p, r), jaro(p, r), jaro_winkler(p, r), jaccard(p, r)):
            assert 0.0 <= value <= 1.0


def _clipped_reference(hyp: list[str], ref: list[str], max_order: int) -> list[int]:
    out = []
    for n in range(1, max_order + 1):
        h = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
        r = Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
        out.append(sum(min(c, r[g]) for g, c in h.items()))
    return out


@pytest.mark.parametrize("vocabulary", [12, 3_000, 70_000])
def test_clipped_ngram_matches_against_counters(vocabulary: int) -> None:
    """Small vocabularies take one batch; large ones are split (70,000 distinct tokens do
    not fit four to an int64 key even for one pair, which then uses Counters)."""
    rng = random.Random(vocabulary)
    hyps, refs = [], []
    for _ in range(200):
        ref = [str(rng.randrange(vocabulary)) for _ in range(rng.randrange(40))]
        hyp = [t if rng.random() < 0.7 else str(rng.randrange(vocabulary)) for t in ref]
        hyps.append(hyp[: rng.randrange(len(hyp) + 1)] if hyp else hyp)
        refs.append(ref)
    if vocabulary == 70_000:  # one pair holding 70,000 distinct tokens
        hyps.append([str(i) for i in range(70_000)])
        refs.append([str(i) for i in range(0, 70_000, 2)] + ["1", "2", "3"])
    got = clipped_matches(hyps, refs, 4)
    assert got.tolist() == [_clipped_reference(h, r, 4) for h, r in zip(hyps, refs, strict=True)]
