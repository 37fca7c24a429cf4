"""The suite's `judge:` section: the shared chat endpoint keys (`queryeval.config.ChatEndpoint`)
and what only the judge has (structured output, rubric overrides)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from queryeval.config import ChatEndpoint, Price

__all__ = ["JudgeConfig", "Price"]


class JudgeConfig(ChatEndpoint):
    """An OpenAI-compatible chat endpoint used as judge (OpenAI, Azure, vLLM, Ollama, LiteLLM)."""

    structured_output: Literal["auto", "json_schema", "off"] = Field(
        default="auto",
        description="auto: JSON-schema response_format, dropped for endpoints that reject it",
    )
    rubrics: dict[str, str] = Field(
        default_factory=dict, description="rubric name -> YAML file (relative to the suite)"
    )
