"""What the fakes of the providers' wire formats share: a JSON POST server on 127.0.0.1
that keeps every request (path, headers, body) and answers with scripted HTTP statuses
before its default 200s. A provider's fake says which paths it serves (`serves`), its
reply (`reply`) and its error body and headers (`error`)."""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["ScriptedFake"]


class ScriptedFake:
    """The server; `text(body)` gives each reply's text (default: `score: 0.8`), `usage`
    its token counts (prompt, completion)."""

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
                if not fake.serves(self.path):
                    status = 404
                if status == 200:
                    self._send(200, fake.reply(body), {})
                else:
                    self._send(status, *fake.error(status))

            def _send(self, status: int, data: Any, headers: dict[str, str]) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def serves(self, path: str) -> bool:
        """Whether `path` (with its query) is the provider's endpoint (else 404)."""
        raise NotImplementedError

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The provider's reply to `body`."""
        raise NotImplementedError

    def error(self, status: int) -> tuple[dict[str, Any], dict[str, str]]:
        """The provider's error body for `status`, and its headers."""
        raise NotImplementedError

    def script(self, *statuses: int) -> None:
        """The next replies' HTTP statuses (200: a reply), before the default 200s."""
        with self._lock:
            self._script.extend(statuses)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
