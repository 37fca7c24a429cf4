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

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeGemini"]

_STATUS = {429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}


class FakeGemini:
    """The server; `text(body)` gives each reply's text (default: `score: 0.8`),
    `usage` its token counts (prompt, candidates)."""

    def __init__(self, text: Any = None, usage: tuple[int, int] = (120, 30)) -> None:
        self.text = text or (lambda body: "score: 0.8")
        self.usage = usage
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
                if not self.path.split("?")[0].endswith(":generateContent"):
                    status = 404
                if status == 200:
                    self._send(200, fake._reply(body))
                    return
                error = {"code": status, "message": f"fake {status}",
                         "status": _STATUS.get(status, "INTERNAL")}  # fmt: skip
                self._send(status, {"error": error})

            def _send(self, status: int, data: Any) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _reply(self, body: dict[str, Any]) -> dict[str, Any]:
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

    def script(self, *statuses: int) -> None:
        """The next replies' HTTP statuses (200: a reply), before the default 200s."""
        with self._lock:
            self._script.extend(statuses)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeGemini:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
