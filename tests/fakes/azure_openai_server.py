"""A small fake of Azure OpenAI's chat completions
(`POST /openai/deployments/{deployment}/chat/completions?api-version=...`) on 127.0.0.1,
for the LiteLLM backend's tests: replies in OpenAI's wire format, scripted errors (429 with
retry-after, 500) in Azure's error shape, and every request kept (path, headers, body).

    with FakeAzureOpenAI() as server:
        server.script(429, 200)  # first a rate limit, then a reply
        ... litellm.acompletion(model="azure/my-deployment", api_base=server.base_url, ...)
"""

from __future__ import annotations

from typing import Any

from fakes._scripted import ScriptedFake

__all__ = ["FakeAzureOpenAI"]


class FakeAzureOpenAI(ScriptedFake):
    """The server; `text(body)` gives each reply's text (default: `score: 0.8`),
    `usage` its token counts, `model` the model the reply names."""

    def __init__(
        self, text: Any = None, usage: tuple[int, int] = (120, 30), model: str = "gpt-4o"
    ) -> None:
        super().__init__(text, usage)
        self.model = model

    def serves(self, path: str) -> bool:
        path, _, query = path.partition("?")
        return (
            path.startswith("/openai/deployments/")
            and path.endswith("/chat/completions")
            and "api-version=" in query
        )

    def error(self, status: int) -> tuple[dict[str, Any], dict[str, str]]:
        error = {"error": {"code": str(status), "message": f"fake {status}"}}
        return error, {"retry-after": "0"} if status == 429 else {}

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt, completion = self.usage
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self.text(body)},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion},
        }  # fmt: skip
