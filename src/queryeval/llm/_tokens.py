"""Token counts without a tokenizer: about four characters per token.

tiktoken is not a dependency (it downloads its encodings on first use, and queryeval runs
offline), so estimates use the common chars/4 rule of thumb and say so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

TOKENIZER_NOTE = "chars/4 heuristic (tiktoken is not installed; it would download its encodings)"
_PER_MESSAGE = 4  # role and separators, as in OpenAI's chat format accounting


def estimate_tokens(text: str) -> int:
    """About one token per four characters, rounded up."""
    return math.ceil(len(text) / 4)


def estimate_prompt_tokens(messages: Iterable[Mapping[str, str]]) -> int:
    """Estimated prompt tokens of a chat request."""
    return sum(estimate_tokens(m.get("content", "")) + _PER_MESSAGE for m in messages) + 3


def spend_parts(
    to_call: int,
    prompt_tokens: int,
    completion_tokens: int,
    cost_usd: float | None,
    worst_case_usd: float | None,
    prices_key: str,
) -> list[str]:
    """The tokens-and-cost parts of an estimate line (none when nothing is to be called).

    >>> spend_parts(2, 100, 50, None, None, "judge.prices")[1]
    'cost unknown (no price for this model in judge.prices)'
    """
    if not to_call:
        return []
    parts = [
        f"~{prompt_tokens:,} prompt + ~{completion_tokens:,} completion tokens ({TOKENIZER_NOTE})"
    ]
    if cost_usd is None or worst_case_usd is None:
        parts.append(f"cost unknown (no price for this model in {prices_key})")
    else:
        parts.append(f"est. ${cost_usd:.4f} (at most ${worst_case_usd:.4f})")
    return parts
