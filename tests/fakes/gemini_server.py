"""A small fake of Google's Gemini API (`POST .../models/{model}:generateContent`) on
127.0.0.1, for the LiteLLM backend's tests: replies in Gemini's wire format (candidates with
content parts, finishReason, usageMetadata.promptTokenCount / candidatesTokenCount),
scripted errors (429, 500, 503) in Google's error shape, and every request kept (path,
headers, body) for assertions.

    with FakeGemini() as server:
        server.script(429, 200)  # first a rate limit, then a reply
        ... litellm.acompletion(model="gemini/gemini-x", api_base=server.base_url, ...)
"""

from __future__ import annotations

from typing import Any

from fakes._scripted import ScriptedFake

__all__ = ["FakeGemini"]

_STATUS = {429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}


class FakeGemini(ScriptedFake):
    """The server; `text(body)` gives each reply's text (default: `score: 0.8`),
    `usage` its token counts (prompt, candidates)."""

    def serves(self, path: str) -> bool:
        return path.split("?")[0].endswith(":generateContent")

    def error(self, status: int) -> tuple[dict[str, Any], dict[str, str]]:
        error = {"code": status, "message": f"fake {status}",
                 "status": _STATUS.get(status, "INTERNAL")}  # fmt: skip
        return {"error": error}, {}

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt, candidates = self.usage
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": self.text(body)}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": prompt,
                "candidatesTokenCount": candidates,
                "totalTokenCount": prompt + candidates,
            },
            "modelVersion": "fake",
        }
