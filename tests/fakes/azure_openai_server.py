"""A small fake of Azure OpenAI's chat completions
(`POST /openai/deployments/{deployment}/chat/completions?api-version=...`) on 127.0.0.1,
for the LiteLLM backend's tests: replies in OpenAI's wire format, scripted errors (429 with
retry-after, 500) in Azure's error shape, and every request kept (path, headers, body).

    with FakeAzureOpenAI() as server:
        server.script(429, 200)  # first a rate limit, then a reply
        ... litellm.acompletion(model="azure/my-deployment", api_base=server.base_url, ...)
"""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeAzureOpenAI"]


class FakeAzureOpenAI:
    """The server; `text(body)` gives each reply's text (default: `score: 0.8`),
    `usage` its token counts, `model` the model the reply names."""

    def __init__(
        self, text: Any = None, usage: tuple[int, int] = (120, 30), model: str = "gpt-4o"
    ) -> None:
        self.text = text or (lambda body: "score: 0.8")
        self.usage = usage
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._script: deque[int] = deque()
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    fake.requests.append(
                        {"path": self.path, "headers": dict(self.headers), "body": body}
                    )
                    status = fake._script.popleft() if fake._script else 200
                path, _, query = self.path.partition("?")
                deployment = path.startswith("/openai/deployments/")
                if not (
                    deployment and path.endswith("/chat/completions") and "api-version=" in query
                ):
                    status = 404
                if status == 200:
                    self._send(200, fake._completion(body))
                    return
                error = {"error": {"code": str(status), "message": f"fake {status}"}}
                self._send(status, error, {"retry-after": "0"} if status == 429 else {})

            def _send(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
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

    def script(self, *statuses: int) -> None:
        """The next replies' HTTP statuses (200: a completion), before the default 200s."""
        with self._lock:
            self._script.extend(statuses)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeAzureOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
