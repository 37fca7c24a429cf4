"""Reading an output out of a reply: fences, JSON, tool calls, patterns, bare queries, and
replies with nothing to read (the system's failure, never a guess)."""

from __future__ import annotations

import json

import pytest

from queryeval.config._systems import ReplySpec
from queryeval.llm import ToolCall
from queryeval.systems import read_output


def read(text: str, task: str = "sql", calls: list[ToolCall] | None = None, **spec: object):
    return read_output(text, calls or [], task, ReplySpec.model_validate(spec))


@pytest.mark.parametrize(
    ("text", "task", "expected"),
    [
        ("```sql\nSELECT 1\n```", "sql", "SELECT 1"),
        ("Sure!\n```SQL\nSELECT a\nFROM t\n```\nDone.", "sql", "SELECT a\nFROM t"),
        ("```\nSELECT 2\n```", "sql", "SELECT 2"),  # untagged fence
        ("draft:\n```sql\nSELECT 1\n```\nfinal:\n```sql\nSELECT 2\n```", "sql", "SELECT 2"),
        ("```python\nx = 1\n```\n```sql\nSELECT 3\n```", "sql", "SELECT 3"),  # its language first
        ("```kusto\nLogs | count\n```", "kql", "Logs | count"),
        ("```cypher\nMATCH (n) RETURN n\n```", "cypher", "MATCH (n) RETURN n"),
        ("```sql\nSELECT 1", "sql", "SELECT 1"),  # an unclosed fence (cut reply)
        ("SELECT count(*) FROM t", "sql", "SELECT count(*) FROM t"),  # bare query
        ("  with x as (select 1) select * from x", "sql", "with x as (select 1) select * from x"),
        ("MATCH (m:Movie) RETURN m.title", "cypher", "MATCH (m:Movie) RETURN m.title"),
        ("Logs\n| where Level == 'Error'", "kql", "Logs\n| where Level == 'Error'"),
        ('{"query": "SELECT 5"}', "sql", "SELECT 5"),
        ('```json\n{"sql": "SELECT 6"}\n```', "sql", "SELECT 6"),
        ("SELECT '{}' AS braces", "sql", "SELECT '{}' AS braces"),  # not mistaken for JSON
        ("Paris is the capital.", "answer", "Paris is the capital."),
    ],
)
def test_the_output_is_read(text: str, task: str, expected: str) -> None:
    got = read(text, task)
    assert got.value == expected and got.problem is None


@pytest.mark.parametrize(
    ("text", "task"),
    [
        ("I cannot answer that question.", "sql"),
        ("The answer is to select the rows. SELECT might work.", "sql"),
        ("", "sql"),
        ("   ", "answer"),
        ("```python\nprint(1)\n```", "sql"),  # a fence in another language only
        ("```sql\n\n```", "sql"),  # an empty fence
        ('{"note": "no query", "confidence": 0.2}', "sql"),
        ("Use the Logs table.", "kql"),
        ("Movies are nodes.", "cypher"),
    ],
)
def test_nothing_usable_is_read_as_nothing(text: str, task: str) -> None:
    got = read(text, task)
    assert got.value is None and got.problem


def test_tool_call_arguments() -> None:
    call = ToolCall("run", json.dumps({"query": "SELECT 1", "why": "x"}))
    assert read("", "sql", [call]).value == "SELECT 1"
    assert read("", "sql", [ToolCall("run", json.dumps({"statement": "SELECT 2"}))]).value == (
        "SELECT 2"  # one string argument
    )
    assert read("", "sql", [ToolCall("run", "not json")]).value is None
    two = [ToolCall("q", '{"collection_name": "A"}'), ToolCall("q", '{"collection_name": "B"}')]
    weaviate = read("", "weaviate", two).value
    assert [c["function"]["arguments"] for c in weaviate["tool_calls"]] == [
        '{"collection_name": "A"}',
        '{"collection_name": "B"}',
    ]


def test_weaviate_and_sdmx_objects() -> None:
    query = {"target_collection": "Hotels", "search_query": "quiet"}
    assert read(f"```json\n{json.dumps(query)}\n```", "weaviate").value == query
    assert read(f"The query: {json.dumps(query)} -- done", "weaviate").value == query
    code = "collection.query.near_text(query='x')"
    assert read(f"```python\n{code}\n```", "weaviate").value == code
    selection = [{"dataset_id": "WEO", "dimensions": []}]
    text = json.dumps({"indicator_selection": selection})
    assert read(text, "sdmx").value == selection
    assert read("no JSON here", "sdmx").value is None


def test_modes_and_patterns() -> None:
    text = "ANSWER<<SELECT 9>> and ```sql\nSELECT 1\n```"
    assert read(text, pattern=r"ANSWER<<(?P<query>.*?)>>", read="pattern").value == "SELECT 9"
    assert read(text, pattern=r"ANSWER<<(.*?)>>", read="pattern").value == "SELECT 9"
    assert read("SQL: SELECT 3", pattern=r"SELECT \d", read="pattern").value == "SELECT 3"
    missing = read("nothing", pattern=r"ANSWER<<(.*?)>>", read="pattern")
    assert missing.value is None and "does not match" in (missing.problem or "")
    assert read(text, read="fenced").value == "SELECT 1"
    assert read('{"query": "SELECT 4"}', read="fenced").value is None  # only fences
    assert read("  the whole text  ", read="text").value == "the whole text"
    assert read('x {"q": "SELECT 7"} y', read="json", keys=["q"]).value == "SELECT 7"


def test_reply_spec_checks_its_pattern() -> None:
    with pytest.raises(ValueError, match="regular expression"):
        ReplySpec.model_validate({"read": "pattern", "pattern": "("})
    with pytest.raises(ValueError, match="needs a 'pattern'"):
        ReplySpec.model_validate({"read": "pattern"})
