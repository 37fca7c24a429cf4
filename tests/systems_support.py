"""Shared by the model/endpoint system tests: a small SQL suite on the example's DuckDB
fixture, and a scripted model that answers by the question it is asked."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from fakes.openai_server import ChatRequest, Reply

ROOT = Path(__file__).resolve().parent.parent
SALES = ROOT / "examples" / "sql" / "fixtures" / "sales"

# question -> gold SQL on the sales fixture
CASES = {
    "How many orders are there in total?": "SELECT count(*) AS orders FROM orders",
    "How many orders have been delivered?": (
        "SELECT count(*) AS delivered FROM orders WHERE status = 'delivered'"
    ),
    "How many customers do we have in each country?": (
        "SELECT country, count(*) AS customers FROM customers GROUP BY country"
    ),
    "How many products are there?": "SELECT count(*) AS products FROM products",
}
IDS = {q: f"q{i}" for i, q in enumerate(CASES, start=1)}


def write_suite(
    folder: Path,
    system: dict[str, Any],
    *,
    scorers: list[Any] | None = None,
    cases: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """A suite file (and its cases) in `folder` with one system under test."""
    chosen = cases or CASES
    records = [
        {
            "id": IDS.get(q, f"x{i}"),
            "conversation": [
                {"content": q, "target": {"query": {"text": sql, "database": "sales"}}}
            ],
        }
        for i, (q, sql) in enumerate(chosen.items())
    ]
    (folder / "cases.yaml").write_text(yaml.safe_dump(records, sort_keys=False))
    suite: dict[str, Any] = {
        "name": "model-suite",
        "cases": "cases.yaml",
        "databases": {"sales": {"engine": "duckdb", "fixture": str(SALES)}},
        "comparison": {"columns": "permutation"},
        "systems": [system],
        "scorers": scorers or [{"name": "execution_match"}],
        "reports": ["json"],
        "settings": {"cache_dir": str(folder / "cache")},
    }
    suite.update(extra or {})
    path = folder / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def model_system(base_url: str, **keys: Any) -> dict[str, Any]:
    """A `model:` system entry for the fake server (fast retries, no key)."""
    model = {
        "model": "fake-sql",
        "base_url": base_url,
        "api_key_env": None,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        "timeout_s": 10,
    }
    model.update(keys.pop("model", {}))
    return {"name": "gpt", "model": model, **keys}


def asked_question(request: ChatRequest) -> str:
    """The question of the first user message (the default templates end with it)."""
    user = next(m["content"] for m in request.messages if m["role"] == "user")
    return user.rsplit("Question:", 1)[-1].strip()


def fenced(sql: str, language: str = "sql") -> Reply:
    """A reply holding `sql` in a fenced block, with some prose around it."""
    return Reply.text(f"Here is the query:\n```{language}\n{sql}\n```\nIt counts rows.")


def answering(answers: dict[str, Callable[[ChatRequest], Reply] | Reply]) -> Any:
    """A chat handler answering by question; unknown questions get prose without a query."""

    def handler(request: ChatRequest) -> Reply:
        answer = answers.get(asked_question(request))
        if answer is None:
            return Reply.text("I am not sure how to answer that.")
        return answer(request) if callable(answer) else answer

    return handler


def records(run_dir: Path) -> dict[str, dict[str, Any]]:
    """results.jsonl by case id."""
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    return {r["case_id"]: r for r in map(json.loads, lines)}


def feedback_messages(request: ChatRequest) -> list[str]:
    """The user messages after the first (the refinement loop's feedback)."""
    users = [m["content"] for m in request.messages if m["role"] == "user"]
    return users[1:]


def mentions(text: str, *words: str) -> bool:
    """Whether every word occurs in `text` (case-insensitive)."""
    return all(re.search(re.escape(w), text, re.IGNORECASE) for w in words)
