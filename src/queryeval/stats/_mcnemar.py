"""McNemar's test for paired pass/fail outcomes of two systems on the same cases.

Only the discordant pairs matter: `b` cases passed by A and failed by B, `c` the reverse.
Under H0 (same pass rate) each discordant pair goes either way with probability 1/2.
Both forms are closed formulas, written here rather than pulling scipy into the core
install for two lines (tests cross-check them against scipy.stats).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

EXACT_BELOW = 25


@dataclass(frozen=True, slots=True)
class McNemarResult:
    """The discordant counts, the test statistic and the two-sided p-value."""

    b: int
    c: int
    statistic: float
    p_value: float
    method: str

    def as_dict(self) -> dict[str, float | int | str]:
        """JSON-friendly form."""
        return {
            "b": self.b,
            "c": self.c,
            "statistic": self.statistic,
            "p_value": self.p_value,
            "method": self.method,
        }


def mcnemar_test(b: int, c: int, *, exact_below: int = EXACT_BELOW) -> McNemarResult:
    """Two-sided McNemar test.

    With n = b + c discordant pairs: when n < `exact_below`, the exact binomial test
    p = min(1, 2 * sum_{i<=min(b,c)} C(n, i) / 2^n) (statistic = min(b, c)); otherwise the
    chi-square form with Edwards' continuity correction X^2 = (|b - c| - 1)^2 / n, whose
    p-value on 1 degree of freedom is erfc(sqrt(X^2 / 2)).
    """
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be non-negative")
    n = b + c
    if n == 0:
        return McNemarResult(b, c, 0.0, 1.0, "no discordant pairs")
    if n < exact_below:
        k = min(b, c)
        tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
        return McNemarResult(b, c, float(k), float(min(Fraction(1), 2 * tail)), "exact binomial")
    stat = (abs(b - c) - 1) ** 2 / n
    return McNemarResult(b, c, stat, math.erfc(math.sqrt(stat / 2)), "chi-square, corrected")
