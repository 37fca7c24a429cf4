"""A case's question, gold text and tags for the index and the viewer: from a validated
`Case`, or straight from the JSON of a case the run validated already (`case_fields`: no
second validation of every case at the end of a large run)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson


def gold_text(case: Any) -> str:
    """Every accepted gold of a case as text (query, answer, call or rows), the main first."""
    lines = []
    for i, target in enumerate(case.targets):
        parts: list[str] = []
        if target.query is not None:
            parts.append(target.query if isinstance(target.query, str) else target.query.text)
        if target.answer is not None:
            parts.append(target.answer if isinstance(target.answer, str) else target.answer.text)
        for extra in (target.weaviate_query, target.indicator_selection):
            if extra is not None:
                parts.append(
                    orjson.dumps(extra, default=lambda o: o.model_dump(mode="json")).decode()
                )
        if target.result is not None:
            parts.append(f"expected rows ({', '.join(target.result.columns)})")
        text = "\n".join(parts)
        lines.append(text if i == 0 else f"or: {text}")
    return "\n".join(line for line in lines if line)


class Unusual(Exception):
    """A case's JSON has a shape `case_fields` leaves to the validating model."""


def _str(value: Any) -> str:
    if type(value) is not str:
        raise Unusual  # a number the model turns into text, or not valid at all
    return value


def _text(value: Any) -> str:
    """A query's or answer's text: the shorthand string, or the object's `text`."""
    return _str(value if type(value) is str else value["text"])


# the model's keys of an indicator selection are in alphabetical order (dataset_id,
# dimensions; dimension_name, values; id, name), so sorted keys dump it as the model does;
# a term's id or name given as a number is text in the model: left to the model
_NUMBER_TERM = re.compile(rb'"(?:id|name)":[-0-9]')


def _selection(datasets: Any) -> str:
    """An indicator selection's JSON as the validated model dumps it."""
    text = orjson.dumps(datasets, option=orjson.OPT_SORT_KEYS)
    if _NUMBER_TERM.search(text):
        raise Unusual
    return text.decode()


def _targets(conversation: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every accepted target of the last turn that has one (as `Case.targets`)."""
    for turn in reversed(conversation):
        target: Any = turn.get("target")
        rest = turn.get("alternatives") or []
        if type(target) is list:
            target, rest = (target[0] if target else None), [*target[1:], *rest]
        if target is not None:
            yield target
            yield from rest
            return


def _gold(targets: Iterator[dict[str, Any]]) -> str:
    lines = []
    for i, target in enumerate(targets):
        parts: list[str] = []
        for key in ("query", "answer"):
            if (value := target.get(key)) is not None:
                parts.append(_text(value))
        if (value := target.get("weaviate_query")) is not None:
            parts.append(orjson.dumps(value).decode())
        if (value := target.get("indicator_selection")) is not None:
            parts.append(_selection(value))
        if (value := target.get("result")) is not None:
            parts.append(f"expected rows ({', '.join(map(_str, value['columns']))})")
        text = "\n".join(parts)
        lines.append(text if i == 0 else f"or: {text}")
    return "\n".join(line for line in lines if line)


def case_fields(data: Any) -> tuple[str, str, str, list[str]]:
    """(id, question, gold text, tags) of a case's JSON that was validated as a `Case`
    already, as the model gives them; `Unusual` when its shape is one to leave to the model
    (numbers where text goes, or anything unexpected).

    >>> case_fields({"id": "q1", "tags": ["t"], "conversation": [{"role": "user",
    ...     "content": "How many?", "target": [{"query": "SELECT 1"}, {"answer": "one"}]}]})
    ('q1', 'How many?', 'SELECT 1\\nor: one', ['t'])
    """
    try:
        conversation = data["conversation"]
        question = None
        for turn in reversed(conversation):
            if turn.get("role", "user") == "user":
                question = turn.get("content", "")
                break
        if question is None:
            question = conversation[-1].get("content", "")
        tags = data.get("tags") or []
        return (
            _str(data["id"]),
            _str(question),
            _gold(_targets(conversation)),
            [_str(tag) for tag in tags],
        )
    except (KeyError, TypeError, AttributeError, IndexError):
        raise Unusual from None
