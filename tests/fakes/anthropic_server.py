"""A small fake of Anthropic's Messages API (`POST .../v1/messages`) on 127.0.0.1, for the
LiteLLM backend's tests: replies in Anthropic's wire format (content blocks, stop_reason,
usage.input_tokens / output_tokens), scripted errors (429 with retry-after, 529, 500) in
Anthropic's error shape, and every request kept (path, headers, body) for assertions.

    with FakeAnthropic() as server:
        server.script(429, 200)  # first a rate limit, then a reply
        ... litellm.acompletion(model="anthropic/claude-x", api_base=server.base_url, ...)
"""

from __future__ import annotations

from typing import Any

from fakes._scripted import ScriptedFake

__all__ = ["FakeAnthropic"]


class FakeAnthropic(ScriptedFake):
    """The server; `text(body)` gives each reply's text (default: `score: 0.8`),
    `usage` its token counts."""

    def serves(self, path: str) -> bool:
        return path.rstrip("/").endswith("/messages")

    def error(self, status: int) -> tuple[dict[str, Any], dict[str, str]]:
        kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
        error = {"type": "error", "error": {"type": kind, "message": f"fake {status}"}}
        return error, {"retry-after": "0"} if status == 429 else {}

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        n = len(self.requests)
        return {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", ""),
            "content": [{"type": "text", "text": self.text(body)}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": self.usage[0], "output_tokens": self.usage[1]},
        }
