"""The keys of systems that queryeval calls itself: a model behind an OpenAI-compatible chat
endpoint (`model:`) or a deployed service (`endpoint:`).

    systems:
      - name: gpt
        model: {model: gpt-4o-mini, api_key_env: OPENAI_API_KEY}   # base_url: any compatible
        prompt: prompts/sql.j2          # default: the shipped template of the case's task
        temperature: 0.8
        samples: 5                      # 5 independent attempts: pass@k
      - name: agent
        model: {model: gpt-4o-mini}
        refine: {max_iterations: 3, feedback: [syntax, schema, execution, empty]}
      - name: service
        endpoint: {url: "http://127.0.0.1:8000/ask", body: {q: "{{ question }}"}, output: sql}
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from queryeval.config._llm import ChatEndpoint

Task = Literal["sql", "kql", "cypher", "weaviate", "sdmx", "answer"]
QUERY_TASKS: frozenset[str] = frozenset({"sql", "kql", "cypher"})
FeedbackKind = Literal["syntax", "schema", "properties", "execution", "empty"]
FEEDBACK_KINDS: tuple[FeedbackKind, ...] = ("syntax", "schema", "properties", "execution", "empty")
# `empty` is opt-in: an empty result can be the right answer, and the loop would talk the
# model out of it
DEFAULT_FEEDBACK: tuple[FeedbackKind, ...] = ("syntax", "schema", "properties", "execution")
ReadMode = Literal["auto", "fenced", "json", "tool_call", "pattern", "text"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSpec(ChatEndpoint):
    """`systems[].model`: the chat endpoint of a model under test (every key of the judge's
    endpoint: retries, concurrency, prices, spend cap, cache)."""

    max_tokens: int = Field(default=1024, ge=1, description="completion budget of one call")


class ReplySpec(_Model):
    """How the output is read out of a reply.

    `auto` tries, in order: a tool call, a JSON object holding one of `keys`, a fenced code
    block (one tagged with the task's language first, else the last), and for `answer` tasks
    the whole text. `pattern` uses a regular expression: its group `query`, else group 1,
    else the whole match. A reply from which nothing is read is the system's failure."""

    read: ReadMode = "auto"
    pattern: str | None = Field(default=None, description="regular expression (read: pattern)")
    keys: list[str] = Field(
        default_factory=lambda: ["query", "sql", "kql", "cypher", "answer"],
        description="JSON keys / tool-call arguments holding the output",
    )

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return v

    @model_validator(mode="after")
    def _pattern_given(self) -> ReplySpec:
        if self.read == "pattern" and not self.pattern:
            raise ValueError("read: pattern needs a 'pattern' (a regular expression)")
        return self


class RefineSpec(_Model):
    """The built-in refinement loop: each attempt is validated and executed on the case's
    database; an enabled finding is fed back in the next message, up to `max_iterations`
    attempts in all."""

    max_iterations: int = Field(
        default=3, ge=1, le=20, description="attempts in all, the first included"
    )
    feedback: list[FeedbackKind] = Field(
        default_factory=lambda: list(DEFAULT_FEEDBACK),
        description="which findings are fed back: syntax, schema, properties, execution, "
        "empty (opt-in: an empty result may be right)",
    )
    prompt: str | None = Field(
        default=None, description="Jinja template of the feedback message (default: shipped)"
    )

    @field_validator("feedback")
    @classmethod
    def _some(cls, v: list[FeedbackKind]) -> list[FeedbackKind]:
        if not v:
            raise ValueError("feedback needs at least one of " + ", ".join(FEEDBACK_KINDS))
        return list(dict.fromkeys(v))


class ExamplesSpec(_Model):
    """Few-shot examples from the suite: `count` cases with a gold of the same task (never
    the case being asked, nor one with the same question), chosen by a seeded draw per case;
    from `cases` (files or globs) when given, else from the suite's own cases."""

    count: int = Field(default=3, ge=0, le=50)
    cases: str | list[str] | None = None
    same_database: bool = Field(default=True, description="only examples on the case's database")


_DEFAULT_BODY = {
    "question": "{{ question }}",
    "conversation": "{{ conversation }}",
    "case_id": "{{ case_id }}",
}


class EndpointSpec(_Model):
    """A deployed service: the case is sent as a JSON body (a template: every string in it is
    rendered with Jinja; a string that is only `{{ name }}` gives the value itself), and
    the output is read from the reply at `output` (`answer.sql`, `choices[0].text`; empty:
    the whole reply)."""

    url: str
    method: Literal["POST", "PUT"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    api_key_env: str | None = Field(
        default=None, description="environment variable sent as `Authorization: Bearer ...`"
    )
    body: Any = Field(default_factory=lambda: dict(_DEFAULT_BODY))
    output: str = Field(default="", description="path of the output in the JSON reply")
    timeout_s: float = Field(default=60.0, gt=0)
    concurrency: int | None = Field(default=None, ge=1, le=1024)
    max_attempts: int = Field(default=6, ge=1, le=50)
    max_rate_limited: int = Field(default=50, ge=1, le=1000)
    backoff_base_s: float = Field(default=0.5, gt=0)
    backoff_max_s: float = Field(default=30.0, gt=0)
    max_retry_after_s: float = Field(default=120.0, gt=0)

    @field_validator("url")
    @classmethod
    def _http(cls, v: str) -> str:
        if not re.match(r"^https?://", v):
            raise ValueError("expected an http:// or https:// URL")
        return v

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return {"url": data} if isinstance(data, str) else data


# keys that only a model system takes (`reply`, `task` and `database` serve endpoints too)
MODEL_ONLY = (
    "prompt",
    "temperature",
    "samples",
    "refine",
    "examples",
    "tools",
    "tool_choice",
    "schema_source",
)
