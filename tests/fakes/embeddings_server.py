"""A minimal OpenAI-compatible `/v1/embeddings` server on 127.0.0.1 for the embeddings tests.

(The judges area has a fuller fake in tests/fakes/openai_server.py; this one needs only the
stdlib and serves deterministic vectors: a hashed bag of words, so shared words mean similar.)
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def bag_of_words(text: str, dim: int = 32) -> list[float]:
    """Signed hashing of lower-cased words into `dim` buckets (not normalised on purpose:
    the client must normalise)."""
    vec = [0.0] * dim
    for token in re.findall(r"\w+", text.lower()):
        h = hashlib.blake2b(token.encode(), digest_size=8).digest()
        vec[int.from_bytes(h[:4], "little") % dim] += 2.0 if h[4] & 1 else -2.0
    return vec


class FakeEmbeddings:
    """`with FakeEmbeddings() as server:` -> `server.base_url`; records every request."""

    def __init__(self, *, api_key: str = "test-key", fail_with: int | None = None) -> None:
        self.api_key = api_key
        self.fail_with = fail_with
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> FakeEmbeddings:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") != "/v1/embeddings":
                    self._send(404, {"error": {"message": "not found"}})
                    return
                if self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                    self._send(401, {"error": {"message": "bad key", "type": "auth"}})
                    return
                fake.requests.append(body)
                if fake.fail_with is not None:
                    self._send(fake.fail_with, {"error": {"message": "scripted failure"}})
                    return
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                if any(not isinstance(t, str) or not t for t in texts):
                    self._send(400, {"error": {"message": "input must be non-empty strings"}})
                    return
                # Reversed order on purpose: clients must sort by `index`.
                data = [
                    {"object": "embedding", "index": i, "embedding": bag_of_words(t)}
                    for i, t in reversed(list(enumerate(texts)))
                ]
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": body.get("model"),
                        "usage": {"prompt_tokens": 0, "total_tokens": 0},
                    },
                )

        return Handler
