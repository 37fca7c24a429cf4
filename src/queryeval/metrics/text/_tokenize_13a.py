"""The mteval-v13a tokenizer (sacreBLEU's default for BLEU), one line or many at once.

sacreBLEU tokenizes with four regex substitutions whose templates CPython 3.11 expands in
Python for every match; on queries (full of `n.name`, `(`, `:`) that costs ~40 us a line
and dominates BLEU. `tokenize_13a_many` computes the same tokens for a whole batch of ASCII
lines with a handful of numpy passes. It is hand-written because no library exposes a
batched 13a tokenizer; tests/test_agentic_strings.py checks it against sacreBLEU
exhaustively on short strings and on random ones.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

# sacreBLEU's regexes (sacrebleu/tokenizers/tokenizer_re.py), applied in this order.
_PAD_PUNCT = re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])")
_PERIOD_COMMA_AFTER_NON_DIGIT = re.compile(r"([^0-9])([\.,])")
_PERIOD_COMMA_BEFORE_NON_DIGIT = re.compile(r"([\.,])([^0-9])")
_DASH_AFTER_DIGIT = re.compile(r"([0-9])(-)")

# Step 1's character class without the space: ASCII punctuation except ' , - .
_MARK = np.zeros(256, dtype=bool)
_MARK[[*range(0x7B, 0x7F), *range(0x5B, 0x61), *range(0x21, 0x27), *range(0x28, 0x2C)]] = True
_MARK[[*range(0x3A, 0x41), 0x2F]] = True
_SEP, _FILL = "\x00", "\x01"  # line separator and "no space here" filler of the batch path


def _normalise(line: str) -> str:
    """mteval-v13a's language-independent part."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = (
            line.replace("&quot;", '"')
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
        )
    return line


@lru_cache(maxsize=2**16)
def tokenize_13a(line: str) -> tuple[str, ...]:
    """The 13a tokens of one line, by sacreBLEU's own sequence of substitutions.

    >>> tokenize_13a("MATCH (n:Person) RETURN n.name, 1.5")
    ('MATCH', '(', 'n', ':', 'Person', ')', 'RETURN', 'n', '.', 'name', ',', '1.5')
    """
    line = _PAD_PUNCT.sub(r" \1 ", f" {_normalise(line)} ")
    line = _PERIOD_COMMA_AFTER_NON_DIGIT.sub(r"\1 \2 ", line)
    line = _PERIOD_COMMA_BEFORE_NON_DIGIT.sub(r" \1 \2", line)
    line = _DASH_AFTER_DIGIT.sub(r"\1 \2 ", line)
    return tuple(line.split())


def batchable(line: str) -> bool:
    """Whether the batch path takes `line`: ASCII without its two control characters."""
    return line.isascii() and _SEP not in line and _FILL not in line


def tokenize_13a_many(lines: Sequence[str]) -> list[tuple[str, ...]]:
    """The 13a tokens of each line. ASCII lines go through the batch path; others (and lines
    holding the batch path's control characters) through `tokenize_13a`.

    >>> tokenize_13a_many(["a.b", "x-1"])
    [('a', '.', 'b'), ('x-1',)]
    """
    out: list[tuple[str, ...]] = [()] * len(lines)
    batch = []
    for i, line in enumerate(lines):
        if batchable(line):
            batch.append(i)
        else:
            out[i] = tokenize_13a(line)
    if batch:
        spaced = _spaced([lines[i] for i in batch], separate=False)
        for i, part in zip(batch, spaced.split(_SEP), strict=True):
            out[i] = tuple(part.split())
    return out


def tokenize_13a_flat(lines: Sequence[str]) -> list[str]:
    """The 13a tokens of every line in one list, the lines separated by a `SEPARATOR` token.
    Every line must be `batchable`. Saves a split and a tuple per line in big batches."""
    return _spaced(lines, separate=True).split()


SEPARATOR = _SEP


def _spaced(lines: Sequence[str], *, separate: bool) -> str:
    """The lines joined by _SEP with spaces where sacreBLEU's passes put them, derived per
    character (rules below). _SEP is neither a digit nor `.`/`,`, so it acts like the space
    sacreBLEU pads each line with; with `separate` it is spaced into a token of its own."""
    text = _normalise(_SEP.join(lines))
    a = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    n = len(a)
    if n == 0:
        return text
    digit = (a - 48) < 10  # uint8 wraps below '0'
    prev_digit = np.zeros(n, dtype=bool)
    prev_digit[1:] = digit[:-1]
    next_digit = np.zeros(n, dtype=bool)
    next_digit[:-1] = digit[1:]
    # Step 1 pads punctuation marks; step 4 pads a dash that follows a digit.
    before = _MARK[a] | ((a == 45) & prev_digit)
    if separate:
        before |= a == 0
    # Steps 2-3 on a maximal run p1..pk of `.`/`,` between characters c and d (non-overlapping
    # matches make the run's parity matter): every p is split from its neighbours in the run;
    # p1 stays glued to c only when k == 1 and c, d are digits; pk stays glued to d when d is
    # a digit and (c is a digit) == (k is odd).
    period = (a == 46) | (a == 44)
    before |= period
    after = before.copy()
    prev_period = np.zeros(n, dtype=bool)
    prev_period[1:] = period[:-1]
    next_period = np.zeros(n, dtype=bool)
    next_period[:-1] = period[1:]
    starts = np.flatnonzero(period & ~prev_period)
    ends = np.flatnonzero(period & ~next_period)
    if len(starts):
        k = ends - starts + 1
        c_digit = prev_digit[starts]
        d_digit = next_digit[ends]
        before[starts[(k == 1) & c_digit & d_digit]] = False
        after[ends[d_digit & (c_digit == (k % 2 == 1))]] = False
    cells = np.empty((n, 3), dtype=np.uint8)
    cells[:, 0] = np.where(before, 32, 1)
    cells[:, 1] = a
    cells[:, 2] = np.where(after, 32, 1)
    return cells.tobytes().translate(None, b"\x01").decode("ascii")
