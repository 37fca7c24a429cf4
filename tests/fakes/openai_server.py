"""A small OpenAI-compatible HTTP server for tests and benchmarks, on 127.0.0.1.

It serves `/v1/chat/completions` and `/v1/embeddings` with scripted behaviour, so the real
`openai` client can be exercised against rate limits, server errors, slow and garbled replies,
tool calls (`Reply.tool_call`) and models scripted per question (a `chat` function of the
request, which sees the whole conversation, feedback included):

    with FakeOpenAI(chat=lambda req: Reply.verdict(0.8)) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="test")
    server.script(Reply.rate_limited(retry_after="0.1"), Reply.text("score: 0.7"))

Replies come from the script queue first (FIFO), then from the `chat` handler (a Reply or a
function of the ChatRequest). Embeddings come from `embed` (texts -> vectors); the default is
a deterministic hashed bag-of-words, L2-normalised. Written with the stdlib `http.server`
(aiohttp/starlette are not installed), one thread per connection, HTTP/1.1 keep-alive.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "ChatRequest",
    "EmbeddingRequest",
    "FakeOpenAI",
    "RefuseInput",
    "Reply",
    "hashed_embedding",
]


@dataclass
class Reply:
    """One scripted HTTP reply. `delay_s=None`: the server's latency for a 200, none for errors."""

    status: int = 200
    content: str | None = None
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"
    tool_calls: list[tuple[str, str]] | None = None  # (function name, arguments as JSON text)

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        """A chat completion whose message is `content`."""
        return cls(content=content, **kw)

    @classmethod
    def tool_call(cls, name: str, arguments: dict[str, Any] | str, **kw: Any) -> Reply:
        """A chat completion whose message calls the function `name` (no text content)."""
        args = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return cls(content=None, tool_calls=[(name, args)], finish_reason="tool_calls", **kw)

    @classmethod
    def verdict(cls, score: float, reasoning: str = "scripted", **kw: Any) -> Reply:
        """A chat completion holding `{"reasoning": ..., "score": ...}`."""
        return cls(content=json.dumps({"reasoning": reasoning, "score": score}), **kw)

    @classmethod
    def error(
        cls, status: int, message: str = "error", code: str | None = None, **kw: Any
    ) -> Reply:
        """An OpenAI-style error body with the given status."""
        body = {"error": {"message": message, "type": "fake_error", "code": code}}
        return cls(status=status, body=body, **kw)

    @classmethod
    def rate_limited(cls, retry_after: str | None = "1", **kw: Any) -> Reply:
        """HTTP 429, with a Retry-After header (seconds or an HTTP date) unless None."""
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return cls.error(429, "rate limited", code="rate_limit_exceeded", headers=headers, **kw)

    @classmethod
    def server_error(cls, status: int = 500, **kw: Any) -> Reply:
        """HTTP 5xx."""
        return cls.error(status, "internal error", **kw)


@dataclass(frozen=True)
class ChatRequest:
    """A received chat completion request."""

    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    def content(self, role: str) -> str:
        """The concatenated content of every message with `role`."""
        return "\n".join(str(m.get("content", "")) for m in self.messages if m.get("role") == role)


@dataclass(frozen=True)
class EmbeddingRequest:
    """A received embeddings request (input normalised to a list of texts)."""

    texts: list[str]
    model: str
    body: dict[str, Any]


ChatHandler = Callable[[ChatRequest], Reply]
EmbedHandler = Callable[[EmbeddingRequest], Sequence[Sequence[float]]]


class RefuseInput(Exception):
    """Raised by an embeddings handler: the server answers 400 with this message."""


def hashed_embedding(text: str, dim: int = 64) -> list[float]:
    """A deterministic L2-normalised vector: signed hashing of lower-cased word tokens, so
    texts sharing words are similar (cosine) and identical texts are identical."""
    vec = [0.0] * dim
    for token in re.findall(r"\w+", text.lower()):
        h = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        index = int.from_bytes(h[:4], "little") % dim
        vec[index] += 1.0 if h[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    return [v / norm for v in vec] if norm else vec


class FakeOpenAI:
    """The server. Start it with `with FakeOpenAI(...) as server:` or `start()`/`stop()`."""

    def __init__(
        self,
        chat: ChatHandler | Reply | None = None,
        *,
        embed: EmbedHandler | None = None,
        latency_s: float = 0.0,
        reject_response_format: bool = False,
        api_key: str | None = None,
        embedding_dim: int = 64,
    ) -> None:
        self.chat_handler: ChatHandler = _as_handler(chat or Reply.verdict(1.0, "default reply"))
        self.embed_handler: EmbedHandler = embed or (
            lambda req: [hashed_embedding(t, embedding_dim) for t in req.texts]
        )
        self.latency_s = latency_s
        self.reject_response_format = reject_response_format
        self.api_key = api_key
        self.chat_requests: list[ChatRequest] = []
        self.embedding_requests: list[EmbeddingRequest] = []
        self.replies_sent: list[int] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- control ---------------------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next chat requests, in order, before the handler applies."""
        with self._lock:
            self._script.extend(replies)

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1`, for the `openai` client's `base_url`."""
        if self._server is None:
            raise RuntimeError("the server is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def chat_calls(self) -> int:
        """Chat completion requests received so far (errors included)."""
        with self._lock:
            return len(self.chat_requests)

    def reset(self) -> None:
        """Forget recorded requests and queued replies."""
        with self._lock:
            self.chat_requests.clear()
            self.embedding_requests.clear()
            self.replies_sent.clear()
            self._script.clear()

    def start(self) -> FakeOpenAI:
        """Listen on a free port of 127.0.0.1 in a daemon thread."""
        server = _Server(("127.0.0.1", 0), _handler_class(self))
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.05,), name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- serving ---------------------------------------------------------------------------

    def _chat_reply(self, request: ChatRequest) -> Reply:
        with self._lock:
            self.chat_requests.append(request)
            scripted = self._script.popleft() if self._script else None
        if self.reject_response_format and "response_format" in request.body:
            return Reply.error(400, "response_format is not supported", code="invalid_parameter")
        return scripted if scripted is not None else self.chat_handler(request)

    def _chat_body(self, request: ChatRequest, reply: Reply) -> dict[str, Any]:
        if reply.body is not None:
            return reply.body
        content = reply.content or ""
        prompt = reply.prompt_tokens
        if prompt is None:
            prompt = sum(len(str(m.get("content", ""))) for m in request.messages) // 4 + 1
        completion = (
            reply.completion_tokens
            if reply.completion_tokens is not None
            else len(content) // 4 + 1
        )
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
                for i, (n, a) in enumerate(reply.tool_calls)
            ]
        return {
            "id": f"chatcmpl-fake-{len(self.chat_requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": reply.finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    def _embedding_body(self, body: dict[str, Any]) -> dict[str, Any]:
        raw = body.get("input", [])
        texts = [raw] if isinstance(raw, str) else [str(t) for t in raw]
        request = EmbeddingRequest(texts, str(body.get("model", "")), body)
        with self._lock:
            self.embedding_requests.append(request)
        vectors = self.embed_handler(request)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for i, vec in enumerate(vectors):
            values: Any = list(map(float, vec))
            if as_base64:  # what the openai SDK asks for by default: float32 little-endian
                values = base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")
            data.append({"object": "embedding", "index": i, "embedding": values})
        tokens = sum(len(t) // 4 + 1 for t in texts)
        return {
            "object": "list",
            "data": data,
            "model": request.model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # the default backlog (5) refuses bursts of concurrent clients


def _as_handler(chat: ChatHandler | Reply) -> ChatHandler:
    if isinstance(chat, Reply):
        fixed = chat
        return lambda _req: fixed
    return chat


def _handler_class(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # headers and body go out in two writes: without this, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every reply
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                self._send(400, {"error": {"message": "invalid JSON body"}})
                return
            if (
                fake.api_key is not None
                and self.headers.get("Authorization") != f"Bearer {fake.api_key}"
            ):
                self._send(
                    401, {"error": {"message": "invalid api key", "code": "invalid_api_key"}}
                )
                return
            path = self.path.split("?")[0].rstrip("/")
            if path.endswith("/chat/completions"):
                request = ChatRequest(body, dict(self.headers.items()))
                reply = fake._chat_reply(request)
                delay = reply.delay_s
                if delay is None:
                    delay = fake.latency_s if reply.status == 200 else 0.0
                if delay > 0:
                    time.sleep(delay)
                with fake._lock:
                    fake.replies_sent.append(reply.status)
                self._send(reply.status, fake._chat_body(request, reply), reply.headers)
            elif path.endswith("/embeddings"):
                if fake.latency_s > 0:
                    time.sleep(fake.latency_s)
                try:
                    reply = fake._embedding_body(body)
                except RefuseInput as exc:  # what OpenAI answers to a text over the limit
                    error = {"message": str(exc), "type": "invalid_request_error"}
                    self._send(400, {"error": error})
                    return
                self._send(200, reply)
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def _send(
            self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            data = json.dumps(body).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                pass

    return Handler
