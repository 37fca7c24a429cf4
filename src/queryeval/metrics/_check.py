"""Input checks shared by the metric modules (each module's own ``_check_*`` helper, at its
top, calls these with its options), in the manner of scikit-learn's ``_check_targets``."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any


def check_same_length(predictions: Sequence[Any], references: Sequence[Any]) -> None:
    """A ValueError unless there is one reference per prediction."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")


def check_texts(side: str, texts: Sequence[Any]) -> None:
    """A TypeError naming the first item of `texts` that is not a str."""
    for i, text in enumerate(texts):
        if type(text) is not str and not isinstance(text, str):
            raise TypeError(f"{side}[{i}] must be a str, not {type(text).__name__}")


def check_text_pairs(predictions: Sequence[Any], references: Sequence[Any]) -> None:
    """One str reference per str prediction."""
    check_same_length(predictions, references)
    check_texts("predictions", predictions)
    check_texts("references", references)


def check_choice(name: str, value: Any, choices: Collection[Any]) -> None:
    """A ValueError unless `value` is one of `choices`."""
    if value not in choices:
        expected = ", ".join(map(repr, choices))
        raise ValueError(f"unknown {name} {value!r}; expected one of {expected}")
