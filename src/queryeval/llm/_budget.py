"""The hard cap on spend per run.

Each call reserves its worst-case cost (estimated prompt tokens with a margin, plus the
full completion budget) before it is sent, and settles to the real cost after, so calls in
flight together cannot overshoot the cap. Once a reservation would pass the cap no call is
issued (a judgment is then `unscored` with reason "spend cap reached"; a system under test
stops the run, its finished cases kept for `--resume`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SpendCap:
    """Spent and reserved USD against an optional cap (None: no cap, only accounting)."""

    cap_usd: float | None
    spent_usd: float = 0.0
    reserved_usd: float = 0.0
    refused: int = 0

    def reserve(self, worst_case_usd: float) -> bool:
        """Reserve room for one call; False (and nothing reserved) when it would pass the cap."""
        if (
            self.cap_usd is not None
            and self.spent_usd + self.reserved_usd + worst_case_usd > self.cap_usd
        ):
            self.refused += 1
            return False
        self.reserved_usd += worst_case_usd
        return True

    def settle(self, reserved_usd: float, actual_usd: float) -> None:
        """Replace a reservation by what the call really cost (0 when it failed)."""
        self.reserved_usd = max(0.0, self.reserved_usd - reserved_usd)
        self.spent_usd += actual_usd

    @property
    def reached(self) -> bool:
        """True once a call has been refused for lack of budget."""
        return self.refused > 0
