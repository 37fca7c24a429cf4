"""The answer of the ordering parsers: is a result ordered, and by which keys."""

from __future__ import annotations

from typing import NamedTuple

SortKey = int | str | None
"""A result column position (0-based), a column name, or None for an expression."""


class OrderInfo(NamedTuple):
    """``(ordered, keys)``: whether rows come back in a defined order, and by what."""

    ordered: bool
    keys: tuple[SortKey, ...] = ()
